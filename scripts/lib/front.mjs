// The local HTTP front: answers `Expect: 100-continue` and streams everything else to the runtime
// listening on a private port, unchanged (Host header included, so virtual-hosted style works).
//
// Why: workerd never answers `Expect: 100-continue`, which the AWS SDKs, the AWS CLI and curl send
// before any large body; they then wait before sending it (curl and botocore 1 s, the JS SDK 6 s)
// on every PUT. Cloudflare's edge answers it in production; Node's HTTP server answers it by default.
import http from "node:http";

// Hop-by-hop headers stay on their own hop; `expect` is answered here.
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "expect", "te", "trailer"]);

const UNAVAILABLE =
  '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>The gateway is not answering; please retry.</Message></Error>';

/**
 * Starts the front on `ip:port`, forwarding to 127.0.0.1:`upstreamPort`.
 * @returns {Promise<http.Server>} once it listens
 */
export function startFront({ ip, port, upstreamPort }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const front = http.createServer((req, res) => {
    const headers = {};
    for (const [name, value] of Object.entries(req.headers)) if (!HOP.has(name) && value !== undefined) headers[name] = value;
    const upstream = http.request({ host: "127.0.0.1", port: upstreamPort, method: req.method, path: req.url, headers, agent }, (up) => {
      const out = {};
      for (const [name, value] of Object.entries(up.headers)) if (!HOP.has(name) && value !== undefined) out[name] = value;
      res.writeHead(up.statusCode ?? 502, up.statusMessage, out);
      up.pipe(res);
    });
    // The runtime is not reachable (starting, or gone): an S3 error clients retry.
    upstream.on("error", () => {
      if (res.headersSent) return res.destroy();
      res.writeHead(503, { "content-type": "application/xml", "retry-after": "1" }).end(UNAVAILABLE);
    });
    // Only a client that went away early cuts the upstream request: "close" also follows a normal
    // end, and destroying then would cut a keep-alive connection the runtime may still be using.
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
  front.keepAliveTimeout = 30_000;
  return new Promise((resolve, reject) => {
    front.once("error", reject);
    front.listen(port, ip, () => resolve(front));
  });
}

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
