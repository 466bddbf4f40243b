// What both ways of serving locally share (scripts/serve.mjs on plain workerd, scripts/dev.mjs
// under wrangler dev): waiting for the health check, the root key made at the first start, the banner.
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
import { isLoopback, ROOT_KEY_FILE, readRootKey, rootKeyText } from "../../bin/lib/local-key.mjs";
import { untrustedPath } from "./private-path.mjs";

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
  const file = join(ownDataDir(dir), "master.key");
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600, flag: "wx" });
  return readFileSync(file, "utf8").trim();
}

/**
 * Makes the data directory `dir` if it is not there (owner only), then checks it is this user's
 * alone, now that it exists (private-path.mjs untrustedPath): another user who made it first, in a
 * directory both may write (/tmp), would otherwise hand the gateway their root key and master key.
 * Throws the one-line refusal. @param {string} dir @returns {string} dir
 */
export function ownDataDir(dir) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const refusal = untrustedPath(dir, "data directory");
  if (refusal) throw new Error(refusal);
  return dir;
}

/** The root key's id when the gateway makes the key: not a secret (every signed request shows it). */
export const ROOT_KEY_ID = "shardgate";

/**
 * SHARDGATE_ALLOWED_HOSTS for a gateway on a loopback address: it answers loopback names (and the
 * names it is configured with) only, so a web page whose site's name was re-pointed at 127.0.0.1
 * (DNS rebinding) reaches nothing (worker/src/config.ts hostAllowed).
 */
export const LOOPBACK_HOSTS = "localhost";

/**
 * The root key `npm start`, `npm run dev` and the binary serve when neither the environment nor
 * shardgate.json sets one: kept in `dir`/credentials (bin/lib/local-key.mjs), made at the first
 * start with a secret of 40 random characters (30 bytes, base64url), readable by the owner only.
 * There was once a fixed default secret; a random one per data directory means no web page or other
 * user knows it.
 * @param {string} dir @returns {{ accessKeyId: string, secretAccessKey: string }}
 */
export function rootKey(dir) {
  const file = join(ownDataDir(dir), ROOT_KEY_FILE);
  if (!existsSync(file)) {
    const made = { accessKeyId: ROOT_KEY_ID, secretAccessKey: randomBytes(30).toString("base64url") };
    writeFileSync(file, rootKeyText(made), { mode: 0o600, flag: "wx" });
  }
  const key = readRootKey(dir);
  if (key === null)
    throw new Error(
      `${file} holds no root key ([default] aws_access_key_id and aws_secret_access_key): remove it to make a new one, or set SHARDGATE_ACCESS_KEY_ID and SHARDGATE_SECRET_ACCESS_KEY`,
    );
  return key;
}

/** The secret that was the local default once: public, so never served where other machines reach. */
export const PUBLIC_SECRET = "shardgate-secret";

/**
 * Why the gateway must not start: a root key with the public secret of old (set by hand) on an
 * address other machines reach (anyone could use it, admin API included). One line, naming the
 * settings to change; null when fine.
 * @param {string[]} hosts every address it listens on
 * @param {{ accessKeyId: string, secretAccessKey: string } | null} credentials null: made at the first start
 */
export function publicKeyRefusal(hosts, credentials) {
  // The secret is what matters: it is public, whatever the key id.
  const exposed = hosts.find((h) => !isLoopback(h));
  if (credentials?.secretAccessKey !== PUBLIC_SECRET || exposed === undefined) return null;
  return `refusing to serve the root key with the public secret "${PUBLIC_SECRET}" on ${exposed}, which is not a loopback address: set another in SHARDGATE_SECRET_ACCESS_KEY or "credentials" in shardgate.json, or set neither for one made at the first start`;
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
 * Prints where the gateway is served and how to use it. The secret key is printed only when the
 * gateway made it (`credentialsFrom` "generated": kept in `dataDir`); any other is named by where it
 * came from.
 * @param {{ base: string, port: number | string, credentials: { accessKeyId: string, secretAccessKey: string }, credentialsFrom?: string,
 *   region?: string, runtime: string, dataDir?: string, consoleBase?: string }} p
 */
export function printBanner({ base, port, credentials, credentialsFrom, region = "us-east-1", runtime, dataDir, consoleBase, cli = "npx shardgate" }) {
  const scheme = base.startsWith("https:") ? "https" : "http";
  const keyFile = credentialsFrom === "generated" && dataDir ? join(dataDir, ROOT_KEY_FILE) : null;
  const secret = keyFile
    ? `${credentials.secretAccessKey}   (made at the first start, kept in ${keyFile}; SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY set your own)`
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

Its own CLI finds it from this directory (elsewhere: --endpoint ${base}, or SHARDGATE_ENDPOINT):
  ${cli} status
Stop it with Ctrl-C: that stops everything it started.

Try it with the AWS CLI:
  ${keyFile ? `export AWS_SHARED_CREDENTIALS_FILE=${keyFile}` : `export AWS_ACCESS_KEY_ID=${credentials.accessKeyId} AWS_SECRET_ACCESS_KEY=<the secret key>`} AWS_DEFAULT_REGION=${region}
  aws --endpoint-url ${base} s3 mb s3://demo
  aws --endpoint-url ${base} s3 cp ./some-file s3://demo/
  aws --endpoint-url ${base} s3 ls s3://demo
`);
}
