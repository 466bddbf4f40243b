// Serves the gateway locally, as `npm start` does: `wrangler dev` (workerd, with R2 and Durable
// Objects simulated by miniflare and persisted on disk) on a private port, behind a small HTTP
// front on the public port.
//
// Why the front: workerd never answers `Expect: 100-continue`, which the AWS SDKs, the AWS CLI and
// curl send before any large body. They then wait before sending it (curl and botocore 1 s, the JS
// SDK 6 s) on every PUT. Cloudflare's edge answers 100-continue in production; the front plays
// that part locally (Node's HTTP server answers it by default) and streams everything else
// through unchanged, Host header included, so virtual-hosted style keeps working.
//
//   node scripts/serve.mjs [--ip 127.0.0.1] [--port 8787] [--persist-to DIR] [-- wrangler dev args]
//
// Credentials: SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY from the environment, or the
// local defaults below (never built into the Worker: a deployment without secrets refuses all).
import { spawn } from "node:child_process";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort } from "./lib/free-port.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const LOCAL_DEFAULTS = { accessKeyId: "shardgate", secretAccessKey: "shardgate-secret" };

const { values: opts, positionals: wranglerArgs } = parseArgs({
  options: {
    ip: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: "8787" },
    "persist-to": { type: "string" },
    quiet: { type: "boolean", default: false },
  },
  allowPositionals: true,
});

const credentials = {
  accessKeyId: process.env.SHARDGATE_ACCESS_KEY_ID || LOCAL_DEFAULTS.accessKeyId,
  secretAccessKey: process.env.SHARDGATE_SECRET_ACCESS_KEY || LOCAL_DEFAULTS.secretAccessKey,
};

const [workerPort, inspectorPort] = [await freePort(), await freePort()];
let wrangler;
let stopping = false;
let restarts = 0;
let ready = false; // once the Worker has answered: a wrangler that never starts is not restarted

function startWrangler() {
  wrangler = spawn(
    process.execPath,
    [
      `${root}node_modules/wrangler/bin/wrangler.js`,
      "dev",
      ...["--ip", "127.0.0.1", "--port", String(workerPort), "--inspector-port", String(inspectorPort)],
      "--show-interactive-dev-session=false",
      ...["--var", `SHARDGATE_ACCESS_KEY_ID:${credentials.accessKeyId}`, "--var", `SHARDGATE_SECRET_ACCESS_KEY:${credentials.secretAccessKey}`],
      ...(opts["persist-to"] ? ["--persist-to", opts["persist-to"]] : []),
      ...wranglerArgs,
    ],
    { cwd: root, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" } },
  );
  wrangler.on("exit", onWranglerExit);
}

// wrangler dev treats a connection its internal proxy loses to the Worker's runtime as fatal and
// exits; that happens here when one isolate is saturated by many parallel uploads. The data is on
// disk, so start it again on the same port: requests in flight fail, and clients retry (the front
// answers 503 SlowDown meanwhile). A wrangler that will not start at all still ends this process.
function onWranglerExit(code) {
  if (stopping) return process.exit(0);
  if (restarts >= 20 || !ready) process.exit(code ?? 1);
  restarts += 1;
  console.error(`shardgate: wrangler dev exited (${code}); restarting it (restart ${restarts})`);
  startWrangler();
}

const shutdown = () => {
  stopping = true;
  wrangler.kill("SIGTERM");
  setTimeout(() => process.exit(0), 3000).unref();
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
startWrangler();

// Hop-by-hop headers stay on their own hop; `expect` is answered here.
const HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "expect", "te", "trailer"]);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

const front = http.createServer((req, res) => {
  const headers = {};
  for (const [name, value] of Object.entries(req.headers)) if (!HOP.has(name) && value !== undefined) headers[name] = value;
  const upstream = http.request({ host: "127.0.0.1", port: workerPort, method: req.method, path: req.url, headers, agent }, (up) => {
    const out = {};
    for (const [name, value] of Object.entries(up.headers)) if (!HOP.has(name) && value !== undefined) out[name] = value;
    res.writeHead(up.statusCode ?? 502, up.statusMessage, out);
    up.pipe(res);
  });
  // The Worker is not reachable (starting, or restarting): an S3 error clients retry.
  const fail = () => {
    if (res.headersSent) return res.destroy();
    const body = '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code><Message>The gateway is starting; please retry.</Message></Error>';
    res.writeHead(503, { "content-type": "application/xml", "retry-after": "1" }).end(body);
  };
  upstream.on("error", fail);
  // Only a client that went away early cuts the upstream request: "close" also follows a normal
  // end, and destroying then would cut a keep-alive connection workerd may still be using.
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy();
  });
  req.pipe(upstream);
});
front.keepAliveTimeout = 30_000;
front.listen(Number(opts.port), opts.ip);

// Wait for the Worker, then say what is served.
const base = `http://${opts.ip}:${opts.port}`;
for (let tries = 0; ; tries++) {
  try {
    if ((await fetch(`http://127.0.0.1:${workerPort}/_shardgate/health`)).ok) break;
  } catch {
    // not listening yet
  }
  if (tries > 480) {
    console.error("shardgate: wrangler dev did not come up within 2 minutes");
    shutdown();
  }
  await new Promise((r) => setTimeout(r, 250));
}
ready = true;
if (!opts.quiet) {
  const defaults = credentials.accessKeyId === LOCAL_DEFAULTS.accessKeyId && credentials.secretAccessKey === LOCAL_DEFAULTS.secretAccessKey;
  console.log(`
shardgate is serving
  console       ${base}/_console/  (the web console: sign in with the keys below)
  S3 endpoint   ${base}  (path style; virtual-hosted style as http://BUCKET.localhost:${opts.port})
  region        us-east-1
  access key    ${credentials.accessKeyId}
  secret key    ${credentials.secretAccessKey}${defaults ? "   (local defaults: set SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY to change)" : ""}
  health        ${base}/_shardgate/health
  (wrangler dev listens privately on 127.0.0.1:${workerPort}; use the endpoint above)
  metrics       ${base}/_shardgate/metrics  (SigV4-signed, like any S3 request)

Try it with the AWS CLI:
  export AWS_ACCESS_KEY_ID=${credentials.accessKeyId} AWS_SECRET_ACCESS_KEY=${credentials.secretAccessKey} AWS_DEFAULT_REGION=us-east-1
  aws --endpoint-url ${base} s3 mb s3://demo
  aws --endpoint-url ${base} s3 cp ./some-file s3://demo/
  aws --endpoint-url ${base} s3 ls s3://demo
`);
}
