// What both ways of serving locally share (scripts/serve.mjs on plain workerd, scripts/dev.mjs
// under wrangler dev): waiting for the health check, the local default credentials, the banner.
//
// No HTTP front is needed before either runtime: workerd (1.20261117 here) and wrangler dev answer
// `Expect: 100-continue` themselves once the Worker reads the body, so the AWS SDKs, the AWS CLI
// and curl do not wait before sending it (tests/node/dev-server.test.ts checks that on both).

import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
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
      if ((await fetch(url)).ok) return true;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
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

/** Prints where the gateway is served and how to use it. */
export function printBanner({ base, port, credentials, runtime, dataDir }) {
  const defaults = credentials.accessKeyId === LOCAL_DEFAULTS.accessKeyId && credentials.secretAccessKey === LOCAL_DEFAULTS.secretAccessKey;
  console.log(`
shardgate is serving (${runtime})
  console       ${base}/_console/  (the web console: sign in with the keys below)
  S3 endpoint   ${base}  (path style; virtual-hosted style as http://BUCKET.localhost:${port})
  region        us-east-1
  access key    ${credentials.accessKeyId}
  secret key    ${credentials.secretAccessKey}${defaults ? "   (local defaults: set SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY to change)" : ""}
  health        ${base}/_shardgate/health
  metrics       ${base}/_shardgate/metrics  (SigV4-signed, like any S3 request)${dataDir ? `\n  data          ${dataDir}` : ""}

Try it with the AWS CLI:
  export AWS_ACCESS_KEY_ID=${credentials.accessKeyId} AWS_SECRET_ACCESS_KEY=${credentials.secretAccessKey} AWS_DEFAULT_REGION=us-east-1
  aws --endpoint-url ${base} s3 mb s3://demo
  aws --endpoint-url ${base} s3 cp ./some-file s3://demo/
  aws --endpoint-url ${base} s3 ls s3://demo
`);
}
