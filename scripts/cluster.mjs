// `npm run cluster`: the gateway with six separate S3-compatible node servers, as processes of
// their own on loopback ports, so nodes can be killed, paused (SIGSTOP) or have bytes flipped on
// their disks. Each node is versitygw (an independent S3 server, go-installed by setup) serving a
// plain directory; the gateway reaches them as S3 nodes (SHARDGATE_S3_NODES) and answers at the
// same address and with the same credentials as `npm start`.
//
//   node scripts/cluster.mjs [--ip 127.0.0.1] [--port 8787] [--data-dir DIR] [--var NAME:VALUE]… [--client-urls] [--quiet]
//
// Prints each node's process id, port and data directory; with --quiet, only one line
// `cluster {json}` once everything answers (what tests read), where each node also carries the
// `argv` that starts it again on the same port and data (after a kill). `--var` passes a Worker
// variable to the gateway (e.g. --var SHARDGATE_DATA_SHARDS:3: k, m and the region go to their keys
// of the generated shardgate.json). `--client-urls` lets clients send and fetch shard files
// straight from the nodes (the direct path with presigned node URLs). `--data-dir` was `--data`:
// the old spelling is still taken, with a one-line notice.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AwsClient } from "aws4fetch";
import { ROOT_KEY_FILE } from "../bin/lib/local-key.mjs";
import { freePort } from "./lib/free-port.mjs";
import { parseFlags } from "./lib/shardgate-config.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const NODES = 6;
const BUCKET = "shardgate";
// The nodes' own credentials (loopback only; the gateway's are separate, as with `npm start`).
const NODE_KEY = { accessKeyId: "shardgate-node", secretAccessKey: "shardgate-node-secret" };

let opts;
try {
  ({ values: opts } = parseFlags(
    process.argv.slice(2),
    {
      ip: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "8787" },
      "data-dir": { type: "string" },
      quiet: { type: "boolean", default: false },
      "client-urls": { type: "boolean", default: false },
      var: { type: "string", multiple: true, default: [] },
    },
    { deprecated: { data: "data-dir" } },
  ));
  const bad = opts.var.find((v) => !/^SHARDGATE_[A-Z0-9_]+:/.test(v));
  if (bad !== undefined) throw new Error(`--var: expected NAME:VALUE with a SHARDGATE_ name, got ${JSON.stringify(bad.slice(0, 60))}`);
} catch (e) {
  console.error(`cluster: ${e.message}`);
  process.exit(1);
}
// The nodes' files and the gateway's data are the owner's alone (files 0600, directories 0700).
process.umask(0o077);
const data = opts["data-dir"] ?? mkdtempSync(join(tmpdir(), "shardgate-cluster-"));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const children = [];
function shutdown(code = 0) {
  for (const child of children) {
    try {
      child.kill("SIGTERM");
    } catch {
      // gone
    }
  }
  setTimeout(() => process.exit(code), 1000).unref();
}
process.on("SIGINT", () => shutdown(0));
process.on("SIGTERM", () => shutdown(0));

/** One versitygw serving `dir` on `port`. */
function startNode(i, port, dir) {
  const argv = [
    join(root, ".tools/go/bin/versitygw"),
    ...["--access", NODE_KEY.accessKeyId, "--secret", NODE_KEY.secretAccessKey, "--port", `127.0.0.1:${port}`, "--iam-dir", `${dir}.iam`, "posix", dir],
  ];
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "ignore", "inherit"] });
  children.push(child);
  return { id: `node${i}`, pid: child.pid, port, dir, endpoint: `http://127.0.0.1:${port}`, argv };
}

async function createBucket(node) {
  const s3 = new AwsClient({ ...NODE_KEY, service: "s3", region: "us-east-1", retries: 0 });
  for (let tries = 0; ; tries++) {
    try {
      const res = await s3.fetch(`${node.endpoint}/${BUCKET}`, { method: "PUT" });
      await res.arrayBuffer();
      if (res.ok || res.status === 409) return;
      throw new Error(`HTTP ${res.status}`);
    } catch (e) {
      if (tries > 100) throw new Error(`node ${node.id} on port ${node.port} did not come up: ${e}`);
      await sleep(100);
    }
  }
}

const nodes = [];
for (let i = 0; i < NODES; i++) {
  const dir = join(data, `node${i}`);
  mkdirSync(dir, { recursive: true });
  mkdirSync(`${dir}.iam`, { recursive: true });
  nodes.push(startNode(i, await freePort(), dir));
}
await Promise.all(nodes.map(createBucket));

// The gateway on the production runtime (scripts/serve.mjs), its nodes given in a config file.
const vars = Object.fromEntries(opts.var.map((v) => [v.slice(0, v.indexOf(":")), v.slice(v.indexOf(":") + 1)]));
// What the config file has keys for goes to those keys (serve.mjs refuses them in "vars").
const { SHARDGATE_DATA_SHARDS: k, SHARDGATE_PARITY_SHARDS: m, SHARDGATE_REGION: region, ...otherVars } = vars;
const config = {
  nodes: nodes.map((n) => ({ id: n.id, type: "s3", endpoint: n.endpoint, bucket: BUCKET, region: "us-east-1", ...NODE_KEY, clientUrls: opts["client-urls"] })),
  // A paused node counts as failed after 5 s without progress (30 s by default).
  vars: { SHARDGATE_NODE_STALL_MS: "5000", ...otherVars },
};
// Numbers when they are (serve.mjs names the key when they are not).
const number = (v) => (/^[0-9]{1,9}$/.test(v) ? Number(v) : v);
if (k) config.dataShards = number(k);
if (m) config.parityShards = number(m);
if (region) config.region = region;
const configFile = join(data, "shardgate.json");
writeFileSync(configFile, JSON.stringify(config, null, 2));
// The console on its own origin (a free port of its own: the nodes took ports near the gateway's).
const consolePort = await freePort();
const gateway = spawn(
  process.execPath,
  [
    join(root, "scripts/serve.mjs"),
    "--config",
    configFile,
    ...["--ip", opts.ip, "--port", opts.port, "--console-port", String(consolePort), "--data-dir", join(data, "gateway")],
    "--quiet",
  ],
  { stdio: ["ignore", "inherit", "inherit"] },
);
children.push(gateway);
gateway.on("exit", (code) => shutdown(code ?? 1));

const base = `http://${opts.ip}:${opts.port}`;
for (let tries = 0; ; tries++) {
  try {
    if ((await fetch(`${base}/_shardgate/health`)).ok) break;
  } catch {
    // not yet
  }
  if (tries > 480) {
    console.error("cluster: the gateway did not come up within 2 minutes");
    shutdown(1);
  }
  await sleep(250);
}

const consoleBase = `http://${opts.ip}:${consolePort}`;
const info = { endpoint: base, console: consoleBase, data, bucket: BUCKET, nodeKey: NODE_KEY, gatewayPid: gateway.pid, nodes };
if (opts.quiet) {
  console.log(`cluster ${JSON.stringify(info)}`);
} else {
  console.log(`
shardgate cluster is serving
  S3 endpoint   ${base}   (credentials as for npm start: SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY, else ${join(data, "gateway", ROOT_KEY_FILE)})
  console       ${consoleBase}/
  data          ${data}

  node    pid       port    data directory (shard files under ${BUCKET}/)
${nodes.map((n) => `  ${n.id.padEnd(7)} ${String(n.pid).padEnd(9)} ${String(n.port).padEnd(7)} ${n.dir}`).join("\n")}

Kill a node (kill PID), pause it (kill -STOP PID / kill -CONT PID) or flip bytes in its files:
reads stay correct while no more than 2 of the 6 are lost.
`);
}
