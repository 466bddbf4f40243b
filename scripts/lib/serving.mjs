// What both ways of serving locally share (scripts/serve.mjs on plain workerd, scripts/dev.mjs
// under wrangler dev): waiting for the health check, the local default credentials, the banner.
//
// No HTTP front is needed before either runtime: workerd (1.20261117 here) and wrangler dev answer
// `Expect: 100-continue` themselves once the Worker reads the body, so the AWS SDKs, the AWS CLI
// and curl do not wait before sending it (tests/node/dev-server.test.ts checks that on both).

import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { isIP } from "node:net";
import { hostname, networkInterfaces } from "node:os";
import { join } from "node:path";

/**
 * Polls `url` until it answers 200; false after `timeoutMs` or once `gone()` says the server exited.
 * @param {string} url
 * @param {{ timeoutMs: number, gone: () => boolean }} opts
 */
export async function waitHealthy(url, { timeoutMs, gone }) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !gone()) {
    try {
      if (url.startsWith("https:") ? await httpsOk(url) : (await fetch(url)).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

/**
 * Whether an HTTPS health check answers 200. The certificate is not checked: this asks our own
 * process on loopback whether it is up (no credential is sent), and the certificate names the
 * gateway's public host, not 127.0.0.1.
 */
function httpsOk(url) {
  return new Promise((resolve, reject) => {
    const req = httpsGet(url, { rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("error", reject);
    req.setTimeout(5000, () => req.destroy(new Error("timeout")));
  });
}

/**
 * The master key access keys' secrets are sealed under (SHARDGATE_MASTER_KEY): from the environment,
 * else kept in `dir`/master.key, made at the first start (64 random hex digits, readable by the
 * owner only). Losing it makes every access key but the root key unusable.
 * @param {string} dir
 */
export function masterKey(dir) {
  if (process.env.SHARDGATE_MASTER_KEY) return process.env.SHARDGATE_MASTER_KEY;
  const file = join(dir, "master.key");
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    writeFileSync(file, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  }
  return readFileSync(file, "utf8").trim();
}

/** The credentials `npm start` and `npm run dev` use when the environment sets none. */
export const LOCAL_DEFAULTS = { accessKeyId: "shardgate", secretAccessKey: "shardgate-secret" };

/** Whether `host` (a listen address without its port) is reachable from this machine only. */
export function isLoopback(host) {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^(0:){7}1$/.test(h) || (h.startsWith("::ffff:") && h.slice(7).startsWith("127."));
  return false; // a wildcard ("0.0.0.0", "::", "*"), a LAN or public address, or a host name
}

/**
 * SHARDGATE_ALLOWED_HOSTS for a gateway on a loopback address: it answers loopback names (and the
 * names it is configured with) only, so a web page whose site's name was re-pointed at 127.0.0.1
 * (DNS rebinding) reaches nothing (worker/src/config.ts hostAllowed).
 */
export const LOOPBACK_HOSTS = "localhost";

/**
 * Why the gateway must not start: the local default root key on an address other machines reach
 * (anyone could use it, admin API included). One line, naming the settings to change; null when fine.
 * @param {string[]} hosts every address it listens on
 * @param {{ accessKeyId: string, secretAccessKey: string }} credentials
 */
export function defaultKeysRefusal(hosts, credentials) {
  // The secret is what matters: the default one is public, whatever the key id.
  const defaults = credentials.secretAccessKey === LOCAL_DEFAULTS.secretAccessKey;
  const exposed = hosts.find((h) => !isLoopback(h));
  if (!defaults || exposed === undefined) return null;
  return `refusing to serve the default root key (${LOCAL_DEFAULTS.accessKeyId} / ${LOCAL_DEFAULTS.secretAccessKey}) on ${exposed}, which is not a loopback address: set SHARDGATE_ACCESS_KEY_ID and SHARDGATE_SECRET_ACCESS_KEY, or "credentials" in shardgate.json`;
}

/**
 * Makes `dirs` readable by their owner only (0700) and the files directly in them 0600, and every
 * directory and file under the `deep` ones: what was made before the umask of 0077 the gateway now
 * runs with (new files are 0600, directories 0700). Files deeper in `dirs` (shard files) need no
 * change: nobody else can reach them through a 0700 directory. A directory that cannot be changed
 * (another owner's) is reported, not fatal.
 * @param {string[]} dirs
 * @param {string[]} [deep]
 */
export function restrictDirectories(dirs, deep = []) {
  const walk = (dir, depth) => {
    chmodSync(dir, 0o700);
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isFile()) chmodSync(path, 0o600);
      else if (entry.isDirectory() && depth > 0) walk(path, depth - 1);
    }
  };
  for (const [dir, depth] of [...dirs.map((d) => [d, 0]), ...deep.map((d) => [d, 16])]) {
    try {
      if (existsSync(dir)) walk(dir, depth);
    } catch (e) {
      console.error(`shardgate: could not make ${dir} private (0700): ${e.message}`);
    }
  }
}

/**
 * The origins a browser may load the console from, listening on `ip`:`consolePort`: those the
 * gateway answers CORS for (SHARDGATE_CONSOLE_ORIGIN). Loopback also as localhost; a wildcard address
 * as every address of this machine and its host name.
 * @param {string} ip @param {number} consolePort @param {"http" | "https"} scheme
 */
export function consoleOriginsFor(ip, consolePort, scheme = "http") {
  const origin = (host) => `${scheme}://${isIP(host) === 6 ? `[${host}]` : host}:${consolePort}`;
  const hosts = new Set();
  if (ip === "0.0.0.0" || ip === "::") {
    for (const nets of Object.values(networkInterfaces()))
      for (const n of nets ?? []) if (n.family === "IPv4" || ip === "::") hosts.add(n.address.split("%")[0]);
    hosts.add(hostname().toLowerCase());
    hosts.add("localhost");
  } else {
    hosts.add(ip);
    if (isLoopback(ip)) hosts.add("localhost");
  }
  return [...hosts].map(origin);
}

/**
 * Prints where the gateway is served and how to use it. The secret key is printed only when it is
 * the local default (public anyway); any other is named by where it came from (`credentialsFrom`).
 * @param {{ base: string, port: number | string, credentials: { accessKeyId: string, secretAccessKey: string }, credentialsFrom?: string,
 *   region?: string, runtime: string, dataDir?: string, consoleBase?: string }} p
 */
export function printBanner({ base, port, credentials, credentialsFrom, region = "us-east-1", runtime, dataDir, consoleBase }) {
  const scheme = base.startsWith("https:") ? "https" : "http";
  const defaults = credentials.secretAccessKey === LOCAL_DEFAULTS.secretAccessKey;
  const secret = defaults
    ? `${credentials.secretAccessKey}   (local defaults: set SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY to change)`
    : `(not shown: from ${credentialsFrom ?? "the environment (SHARDGATE_SECRET_ACCESS_KEY)"})`;
  console.log(`
shardgate is serving (${runtime})
  console       ${consoleBase ? `${consoleBase}/  (the web console, on its own origin: sign in with the keys below)` : "not served"}
  S3 endpoint   ${base}  (path style; virtual-hosted style as ${scheme}://BUCKET.localhost:${port})
  region        ${region}
  access key    ${credentials.accessKeyId}
  secret key    ${secret}
  health        ${base}/_shardgate/health
  metrics       ${base}/_shardgate/metrics  (SigV4-signed, like any S3 request)${dataDir ? `\n  data          ${dataDir}` : ""}

Try it with the AWS CLI:
  export AWS_ACCESS_KEY_ID=${credentials.accessKeyId} AWS_SECRET_ACCESS_KEY=${defaults ? credentials.secretAccessKey : "<the secret key>"} AWS_DEFAULT_REGION=${region}
  aws --endpoint-url ${base} s3 mb s3://demo
  aws --endpoint-url ${base} s3 cp ./some-file s3://demo/
  aws --endpoint-url ${base} s3 ls s3://demo
`);
}
