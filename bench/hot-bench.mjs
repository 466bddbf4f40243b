// `node bench/hot-bench.mjs [--pin]` (and a part of `npm run bench`): hot reads through the block
// cache (docs/operations.md "The block cache"), against the pass-through, in one run.
//
// shardgate as `npm start` serves it with the block cache on (cacheMiB) and every node made
// HOT_NODE_DELAY_MS slow (SHARDGATE_NODE_DELAY_MS: the project's delayed nodes, standing in for
// nodes in another region). For each size, a few objects are written; the first GET of each is a
// miss (the cache has never seen it), then, once the fills are in, the same GETs again are hits,
// one at a time. Both are timed (p50, p99); the misses' CPU (the gateway's processes' utime +
// stime, until their fills have had FILL_SETTLE_MS) and the node bytes read
// (shardgate_node_bytes_read_total) are counted over them. The hits' CPU, one at a time and
// CPU_IN_FLIGHT at once, is measured in CPU_ROUNDS rounds taken in turn with two bare Workers
// given the same GETs: the pass-through, and the pass-through whose GETs first check their SigV4
// signature and look their key up in a Durable Object, and join objects larger than a cache entry
// from ranges of an entry's size as a hit joins its entries ("floor": the least a GET that must
// authenticate, find the current version and serve those entries can cost, the floor for a hit).
// Every body is checked (length, and the x-shardgate-cache header says hit or miss as expected),
// each object's first hit by its sha256.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { S3Client } from "./lib/s3-client.mjs";
import { cpuMs, HOT_NODE_DELAY_MS, seeded, startTarget, TARGETS } from "./lib/targets.mjs";

const MiB = 1024 * 1024;
const BUCKET = "hot";
/** GETs at once: latencies are timed one at a time (a GET's time is its own, not the others' on the
 *  one workerd thread); hits' CPU also with CPU_IN_FLIGHT at once, as the main tables count it. */
const CPU_IN_FLIGHT = 4;
/** Sizes, and objects of each: each object is read once as a miss and `hits` times as a hit. */
const SIZES = [
  { label: "GET 1 MiB", size: MiB, count: 16, hits: 40 },
  { label: "GET 64 MiB", size: 64 * MiB, count: 4, hits: 8 },
];
/** Rounds of the CPU measures (one at a time, CPU_IN_FLIGHT at once), the targets in turn (medians). */
const CPU_ROUNDS = 5;
const median = (values) => values.toSorted((a, b) => a - b)[Math.floor(values.length / 2)];
/** How long the fills a miss starts may take (they run after its response): counted in its CPU. */
const FILL_SETTLE_MS = 3000;

/** Runs the hot-read bench; returns its rows. `pin`: the servers' CPUs (the caller pins itself). */
export async function hotBench({ log = (l) => console.error(l), pin = null } = {}) {
  const running = [];
  try {
    for (const id of ["hot", "passthrough", "lookup"])
      running.push(
        await startTarget(
          TARGETS.find((t) => t.id === id),
          log,
          { pin },
        ),
      );
    const [hot, pass, look] = running;
    const gateway = new S3Client({ endpoint: hot.endpoint, ...hot.credentials });
    const passClient = new S3Client({ endpoint: pass.endpoint, ...pass.credentials });
    const lookClient = new S3Client({ endpoint: look.endpoint, ...look.credentials });
    for (const c of [gateway, passClient, lookClient]) await c.request("PUT", `/${BUCKET}`);
    const rows = [];
    for (const { label, size, count, hits: repeat } of SIZES) {
      const keys = Array.from({ length: count }, (_, i) => `${size}/${i}`);
      const data = seeded(size, label);
      log(`bench: hot reads: writing ${count} × ${label.slice(4)}`);
      for (const key of keys)
        for (const c of [gateway, passClient, lookClient]) await expectStatus(c.request("PUT", `/${BUCKET}/${key}`, { body: data }), 200, key);
      const miss = await timed(hot, gateway, keys, size, "miss", FILL_SETTLE_MS);
      // The fills run after each response: wait until every object answers as a hit.
      for (const key of keys) await untilHit(gateway, key, data);
      // What the run wrote goes to the disk first: its writeback stalled the first hits' reads by
      // up to 300 ms (their CPU unchanged).
      execFileSync("sync");
      const again = Array.from({ length: repeat }, () => keys).flat();
      const hits = await timed(hot, gateway, again, size, "hit");
      const passthrough = await timed(pass, passClient, again, size, null);
      const lookup = await timed(look, lookClient, again, size, null);
      // CPU one at a time and CPU_IN_FLIGHT at once: the three in turn, CPU_ROUNDS times, each its
      // median (a moment the machine is busy then weighs on every target alike, not on one).
      const measured = [
        [hits, hot, gateway, "hit"],
        [passthrough, pass, passClient, null],
        [lookup, look, lookClient, null],
      ].map(([row, target, client, expect]) => ({ row, target, client, expect, one: [], many: [] }));
      for (let round = 0; round < CPU_ROUNDS; round++)
        for (const m of measured) {
          m.one.push((await timed(m.target, m.client, again, size, m.expect)).cpuMsPerOp);
          m.many.push((await timed(m.target, m.client, again, size, m.expect, 0, CPU_IN_FLIGHT)).cpuMsPerOp);
        }
      for (const m of measured) Object.assign(m.row, { cpuMsPerOp: median(m.one), cpuMsPerOp4: median(m.many) });
      rows.push({ label, size, miss, hit: hits, passthrough, lookup });
      log(
        `bench: hot ${label}: miss p50 ${miss.p50.toFixed(1)} ms, hit p50 ${hits.p50.toFixed(1)} ms; CPU/GET hit ${hits.cpuMsPerOp.toFixed(2)} ms, pass-through ${passthrough.cpuMsPerOp.toFixed(2)} ms`,
      );
    }
    for (const c of [gateway, passClient, lookClient]) c.close();
    return rows;
  } finally {
    await Promise.all(running.map((t) => t.stop()));
  }
}

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");

async function expectStatus(pending, status, what) {
  const r = await pending;
  if (r.status !== status) throw new Error(`hot bench: ${what} answered ${r.status}`);
  return r;
}

/** GETs `keys` (`inFlight` at a time): latencies, the target's CPU (until `settleMs` after the last) and (shardgate) node bytes read per GET. */
async function timed(target, client, keys, size, expect, settleMs = 0, inFlight = 1) {
  const nodeBytes = expect ? await nodeBytesRead(client) : null;
  const cpuBefore = cpuMs(target.processes());
  const ms = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < keys.length) {
        const key = keys[next++];
        const r = await client.request("GET", `/${BUCKET}/${key}`);
        if (r.status !== 200 || r.bytes !== size) throw new Error(`hot bench: GET ${key} answered ${r.status} with ${r.bytes} bytes`);
        if (expect && r.headers["x-shardgate-cache"] !== expect)
          throw new Error(`hot bench: GET ${key} was a ${r.headers["x-shardgate-cache"]}, not a ${expect}`);
        ms.push(r.ms);
      }
    }),
  );
  await new Promise((r) => setTimeout(r, settleMs));
  const cpu = cpuMs(target.processes()) - cpuBefore;
  ms.sort((a, b) => a - b);
  const pct = (q) => ms[Math.min(ms.length - 1, Math.floor(ms.length * q))];
  return {
    gets: keys.length,
    p50: pct(0.5),
    p99: pct(0.99),
    cpuMsPerOp: cpu / keys.length,
    nodeBytesPerGet: expect ? ((await nodeBytesRead(client)) - nodeBytes) / keys.length : null,
  };
}

/** GETs `key` until the cache answers it; that answer must be `data` (sha256). */
async function untilHit(client, key, data) {
  for (let i = 0; i < 100; i++) {
    const r = await client.request("GET", `/${BUCKET}/${key}`, { keep: true });
    if (r.headers["x-shardgate-cache"] === "hit") {
      if (sha256(r.body) !== sha256(data)) throw new Error(`hot bench: a hit of ${key} answered other bytes`);
      return;
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`hot bench: ${key} never became a hit`);
}

/** The gateway's shardgate_node_bytes_read_total, once its metrics flush (every second) has passed. */
async function nodeBytesRead(client) {
  await new Promise((r) => setTimeout(r, 1200));
  const text = (await client.request("GET", "/_shardgate/metrics", { keep: true })).body.toString();
  let sum = 0;
  for (const line of text.split("\n")) if (line.startsWith("shardgate_node_bytes_read_total")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  return sum;
}

/** The table of the rows (markdown). */
export function hotTable(rows) {
  const f = (n, d = 1) => (n === null ? "–" : n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(d));
  const lines = [
    `Hot reads: the block cache on, every node ${HOT_NODE_DELAY_MS} ms away; one GET at a time, and hits ${CPU_IN_FLIGHT} at once (CPU per GET: the server's processes)`,
    "",
    `| case | miss p50 / p99 | hit p50 / p99 | hit p50 ÷ miss p50 | node MiB per GET, miss / hit | CPU per GET, miss / hit / pass-through / floor | hit × pass-through | ${CPU_IN_FLIGHT} at once: hit / pass-through / floor | hit × pass-through, ${CPU_IN_FLIGHT} at once | floor × pass-through, ${CPU_IN_FLIGHT} at once | hit × floor, one / ${CPU_IN_FLIGHT} at once |`,
    "|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const { label, miss, hit, passthrough, lookup } of rows) {
    const x = (a, b) => `${(a / b).toFixed(2)}×`;
    lines.push(
      `| ${label} | ${f(miss.p50)} / ${f(miss.p99)} ms | ${f(hit.p50)} / ${f(hit.p99)} ms | ${(hit.p50 / miss.p50).toFixed(2)} | ${f(miss.nodeBytesPerGet / MiB, 2)} / ${f(hit.nodeBytesPerGet / MiB, 2)} | ${f(miss.cpuMsPerOp, 2)} / ${f(hit.cpuMsPerOp, 2)} / ${f(passthrough.cpuMsPerOp, 2)} / ${f(lookup.cpuMsPerOp, 2)} ms | ${x(hit.cpuMsPerOp, passthrough.cpuMsPerOp)} | ${f(hit.cpuMsPerOp4, 2)} / ${f(passthrough.cpuMsPerOp4, 2)} / ${f(lookup.cpuMsPerOp4, 2)} ms | ${x(hit.cpuMsPerOp4, passthrough.cpuMsPerOp4)} | ${x(lookup.cpuMsPerOp4, passthrough.cpuMsPerOp4)} | ${x(hit.cpuMsPerOp, lookup.cpuMsPerOp)} / ${x(hit.cpuMsPerOp4, lookup.cpuMsPerOp4)} |`,
    );
  }
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { pinSelf } = await import("./lib/targets.mjs");
  const pin = process.argv.includes("--pin") ? "0" : null;
  if (pin) pinSelf("1");
  console.log(hotTable(await hotBench({ pin })));
}
