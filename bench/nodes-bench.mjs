// `npm run bench:nodes [-- --json] [-- --nodes=6,20,100]`: how read latency grows with the number
// of nodes, and what one slow node costs. shardgate as `npm start` serves it (plain workerd, 4 + 2),
// over 6, 20 and 100 disk nodes in one data directory, each count twice: all nodes healthy, and
// NODE_1 answering every request 50 ms late (SHARDGATE_NODE_DELAY_MS). Per run: 120 objects of
// 1 MiB written (4 in flight), then read twice over (4 in flight): GET p50/p99/max, the reads that
// hedged around a node (shardgate_hedged_reads_total) or read parity (shardgate_degraded_reads_total),
// and how many of the objects have a data shard on NODE_1 (the admin API's object layout).
//
// Figures on stdout as a table (or JSON with --json); progress on stderr.
import { spawn } from "node:child_process";
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../scripts/lib/free-port.mjs";
import { S3Client } from "./lib/s3-client.mjs";
import { SHARDGATE_KEY, SHARDGATE_KEY_ENV } from "./lib/targets.mjs";
import { metricSum, ok, pct } from "./lib/windows.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const json = process.argv.includes("--json");
const counts = (process.argv.find((a) => a.startsWith("--nodes="))?.slice(8) ?? "6,20,100").split(",").map(Number);
const OBJECTS = 120;
const IN_FLIGHT = 4;
const SLOW = "NODE_1";
const SLOW_MS = 50;
const MiB = 1 << 20;
const log = (line) => console.error(line);

/** The gateway over `n` disk nodes (NODE_0 …), `vars` added; resolves once it answers. */
async function start(n, vars) {
  const dir = mkdtempSync(join(os.tmpdir(), `shardgate-nodes-${n}-`));
  const config = join(dir, "shardgate.json");
  writeFileSync(config, JSON.stringify({ nodes: Array.from({ length: n }, (_, i) => ({ id: `NODE_${i}`, type: "disk" })), vars }));
  const port = await freePort();
  const out = openSync(join(dir, "output.log"), "a");
  const child = spawn(
    process.execPath,
    [join(root, "scripts/serve.mjs"), "--quiet", "--port", String(port), "--data-dir", join(dir, "data"), "--config", config],
    { cwd: root, detached: true, stdio: ["ignore", out, out], env: { ...process.env, ...SHARDGATE_KEY_ENV } },
  );
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited: ${readFileSync(join(dir, "output.log"), "utf8").slice(-4000)}`);
    if (
      await fetch(`${endpoint}/_shardgate/health`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) throw new Error("the gateway did not come up within 120 s");
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    endpoint,
    stop: async () => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
      await new Promise((r) => setTimeout(r, 200));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const counter = (client, name) => metricSum(client, [name]);

/** `op(i)` for i < total, `inFlight` at a time; each one's latency (ms). */
async function run(total, inFlight, op) {
  const latencies = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) latencies.push((await op(next++)).ms);
    }),
  );
  return latencies;
}

async function measure(n, slow) {
  const gateway = await start(n, slow ? { SHARDGATE_NODE_DELAY_MS: JSON.stringify({ [SLOW]: SLOW_MS }) } : {});
  const client = new S3Client({ endpoint: gateway.endpoint, ...SHARDGATE_KEY });
  try {
    const body = Buffer.alloc(MiB, 5);
    await ok(client, "PUT", "/nodes");
    await run(OBJECTS, IN_FLIGHT, (i) => ok(client, "PUT", `/nodes/o-${i}`, { body }));
    // Objects with a data shard (one the healthy read path reads) on the slow node.
    let touching = 0;
    for (let i = 0; i < OBJECTS; i++) {
      const layout = JSON.parse((await ok(client, "GET", `/_shardgate/admin/object?bucket=nodes&key=o-${i}`, { keep: true })).body.toString());
      const dataNodes = (layout.parts?.[0]?.shards ?? []).filter((s) => s.kind === "data").map((s) => s.node);
      if (dataNodes.includes(SLOW)) touching++;
    }
    const hedgedBefore = await counter(client, "shardgate_hedged_reads_total");
    const degradedBefore = await counter(client, "shardgate_degraded_reads_total");
    const ms = await run(2 * OBJECTS, IN_FLIGHT, async (i) => {
      const r = await ok(client, "GET", `/nodes/o-${i % OBJECTS}`);
      if (r.bytes !== MiB) throw new Error(`GET returned ${r.bytes} bytes`);
      return r;
    });
    const row = {
      nodes: n,
      slow: slow ? `${SLOW} +${SLOW_MS} ms` : "none",
      touching,
      p50: pct(ms, 0.5),
      p99: pct(ms, 0.99),
      max: Math.max(...ms),
      hedged: (await counter(client, "shardgate_hedged_reads_total")) - hedgedBefore,
      degraded: (await counter(client, "shardgate_degraded_reads_total")) - degradedBefore,
      reads: ms.length,
    };
    log(`bench:nodes: ${JSON.stringify(row)}`);
    return row;
  } finally {
    client.close();
    await gateway.stop();
  }
}

const rows = [];
for (const n of counts) for (const slow of [false, true]) rows.push(await measure(n, slow));

if (json) console.log(JSON.stringify(rows, null, 2));
else {
  console.log(
    `| nodes | slow node | objects with a data shard on ${SLOW} (of ${OBJECTS}) | GET 1 MiB p50 / p99 / max (ms) | reads hedged | reads with parity (of ${2 * OBJECTS}) |`,
  );
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(`| ${r.nodes} | ${r.slow} | ${r.touching} | ${r.p50.toFixed(1)} / ${r.p99.toFixed(1)} / ${r.max.toFixed(1)} | ${r.hedged} | ${r.degraded} |`);
  }
}
