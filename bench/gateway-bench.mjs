// `npm run bench [-- --json]`: the gateway against a plain pass-through Worker, in one run, on
// this machine. Prints a table (gateway, baseline, gateway/baseline), or with --json only the
// figures as JSON on stdout; progress always goes to stderr.
//
// Both Workers are served by scripts/serve.mjs exactly as `npm start` serves the gateway
// (wrangler dev behind the same Node front, own process group, own temporary persist dir); the
// baseline is bench/passthrough (one R2 bucket, no auth, no coding) given to it with
// `-- -c bench/passthrough/wrangler.toml`. So each request takes the same path up to the Worker,
// and the ratio is what the gateway's own work costs. Both get the same SigV4-signed requests
// (aws4fetch over Node's fetch; PUTs send `x-amz-content-sha256: UNSIGNED-PAYLOAD`, so the
// client never hashes); the baseline ignores the signature. Gateway and baseline alternate
// request by request, so load from elsewhere on the machine hits both alike.
//
// What is measured:
//  1. Throughput: PUT then GET of 1 MiB and 64 MiB random objects, MiB/s as the median over
//     repetitions (a fresh key each, so no overwrite cleanup), from sending the request to the
//     end of the response, GET bodies read in full and their length checked. Time to first
//     byte: from sending a GET to its first body chunk.
//  2. Range reads of one 64 MiB object at random offsets (seeded, the same for both), 4 KiB,
//     64 KiB and 1 MiB long, one at a time; every body is checked against the source bytes.
//     Median latency for both; for the gateway also read amplification: the growth of
//     `shardgate_node_bytes_read_total` (all nodes, from the signed /_shardgate/metrics) over
//     the batch divided by the range bytes the client received. The baseline asks R2 for exactly
//     the range: 1 by construction, so not shown.
//  3. Small objects: 4 KiB PUTs, then GETs, SMALL.count of each at SMALL.concurrency in flight,
//     objects per second.
//  4. Degraded GETs: the gateway restarted on the same data without NODE_0, GETs of the 64 MiB
//     objects whose lost shard was a data shard (parity rebuilt on the fly), MiB/s.
//  5. A paused node (bench/stall-bench.mjs, once the servers above are stopped): GET latency
//     p50/p99 over `npm run cluster` with one node stopped by SIGSTOP, against the same cluster
//     healthy, and the reads that hedged. Its own table, and `stall` in the JSON.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AwsClient } from "aws4fetch";
import { freePort } from "../scripts/lib/free-port.mjs";
import { roundStallRows, stallBench, stallFootnotes, stallTable, stopStallCluster } from "./stall-bench.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const json = process.argv.includes("--json");
const log = (line) => console.error(line);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const KiB = 1024;
const MiB = 1024 * KiB;
const CREDENTIALS = { accessKeyId: "shardgate", secretAccessKey: "shardgate-secret" }; // serve.mjs's local defaults
const BUCKET = "bench";
const THROUGHPUT = [
  { size: MiB, reps: 15 },
  { size: 64 * MiB, reps: 5 },
];
const RANGES = [
  { size: 4 * KiB, count: 100 },
  { size: 64 * KiB, count: 100 },
  { size: MiB, count: 30 },
];
const SMALL = { size: 4 * KiB, count: 200, concurrency: 8 };

const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });

// --- servers ---------------------------------------------------------------------------------

const servers = [];

/** scripts/serve.mjs on a free port in its own process group (so stop() ends wrangler and workerd
 *  too); `wranglerArgs` go to wrangler dev. Resolves once /_shardgate/health answers. */
async function serve(name, wranglerArgs = [], persist = mkdtempSync(join(os.tmpdir(), `shardgate-bench-${name}-`))) {
  const port = await freePort();
  const args = [join(root, "scripts/serve.mjs"), "--quiet", "--port", String(port), "--persist-to", persist];
  if (wranglerArgs.length) args.push("--", ...wranglerArgs);
  const child = spawn(process.execPath, args, {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, SHARDGATE_ACCESS_KEY_ID: "", SHARDGATE_SECRET_ACCESS_KEY: "" }, // the local defaults
  });
  const server = { name, base: `http://127.0.0.1:${port}`, child, persist, output: "" };
  servers.push(server);
  // Drained so the server never blocks on a full pipe; the tail explains a failure.
  const keep = (d) => (server.output = (server.output + d).slice(-16 * KiB));
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  await waitHealthy(server);
  log(`${name}: serving on ${server.base}`);
  return server;
}

async function waitHealthy(server) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (server.child.exitCode !== null) throw new Error(`${server.name} exited with ${server.child.exitCode}:\n${server.output}`);
    try {
      if ((await fetch(`${server.base}/_shardgate/health`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${server.name} did not come up within 120 s:\n${server.output}`);
    await sleep(250);
  }
}

async function stop(server, { keepData = false } = {}) {
  const { child } = server;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    killGroup(child.pid, "SIGTERM");
    await Promise.race([exited, sleep(5000)]);
  }
  killGroup(child.pid, "SIGKILL"); // whatever of the group is left, even if serve.mjs itself is gone
  if (!keepData) rmSync(server.persist, { recursive: true, force: true });
}

function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

const stopAll = () => Promise.all(servers.splice(0).map(stop));

// --- requests --------------------------------------------------------------------------------

/** Signs first, so the timings below hold only the request itself. */
function sign(server, method, path, { body, headers = {} } = {}) {
  if (body) headers = { ...headers, "x-amz-content-sha256": "UNSIGNED-PAYLOAD" };
  return aws.sign(`${server.base}${path}`, { method, body, headers });
}

async function expectStatus(res, statuses, what) {
  if (statuses.includes(res.status)) return;
  throw new Error(`${what}: HTTP ${res.status}: ${(await res.text()).slice(0, 500)}`);
}

async function put(server, key, body) {
  const request = await sign(server, "PUT", `/${BUCKET}/${key}`, { body });
  const start = performance.now();
  const res = await fetch(request);
  await expectStatus(res, [200], `${server.name} PUT ${key}`);
  await res.arrayBuffer();
  return performance.now() - start;
}

/** GETs a key (or a range of it), reading the whole body; `keep` also returns the bytes. */
async function get(server, key, { range, keep = false } = {}) {
  const headers = range ? { range: `bytes=${range[0]}-${range[1] - 1}` } : {};
  const request = await sign(server, "GET", `/${BUCKET}/${key}`, { headers });
  const start = performance.now();
  const res = await fetch(request);
  await expectStatus(res, [range ? 206 : 200], `${server.name} GET ${key}`);
  // miniflare gzips bodies without a Content-Type (as Cloudflare's edge does): that would time gzip.
  if (res.headers.has("content-encoding")) throw new Error(`${server.name} GET ${key}: body sent with content-encoding`);
  let firstByteMs = null;
  let length = 0;
  const chunks = [];
  for await (const chunk of res.body) {
    firstByteMs ??= performance.now() - start;
    length += chunk.length;
    if (keep) chunks.push(chunk);
  }
  return { ms: performance.now() - start, firstByteMs, length, bytes: keep ? Buffer.concat(chunks) : null };
}

/** Sum of shardgate_node_bytes_read_total over every node. */
async function nodeBytesRead(gateway) {
  const res = await fetch(await sign(gateway, "GET", "/_shardgate/metrics"));
  await expectStatus(res, [200], "GET /_shardgate/metrics");
  let sum = 0;
  for (const m of (await res.text()).matchAll(/^shardgate_node_bytes_read_total\{[^}]*\} (\S+)$/gm)) sum += Number(m[1]);
  return sum;
}

/** Runs fn(0..count-1) with `concurrency` calls in flight; returns the wall time in ms. */
async function pool(count, concurrency, fn) {
  let next = 0;
  const start = performance.now();
  const worker = async () => {
    while (next < count) await fn(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return performance.now() - start;
}

// --- measurements ----------------------------------------------------------------------------

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** Calls fn(server, i) for both servers, i = 0..reps-1, alternating which goes first. */
async function alternate(pair, reps, fn) {
  const results = { gateway: [], baseline: [] };
  for (let i = 0; i < reps; i++) {
    for (const server of i % 2 ? [...pair].reverse() : pair) results[server.name].push(await fn(server, i));
  }
  return results;
}

const row = (metric, size, unit, gateway, baseline) => ({ metric, size, unit, gateway, baseline, ratio: baseline ? gateway / baseline : null });

async function throughput(pair, { size, reps }) {
  log(`throughput: ${sizeLabel(size)} × ${reps}`);
  const data = randomBytes(size);
  const key = (i) => `throughput-${size}-${i}`;
  const puts = await alternate(pair, reps, (server, i) => put(server, key(i), data));
  const gets = await alternate(pair, reps, async (server, i) => {
    const r = await get(server, key(i));
    if (r.length !== size) throw new Error(`${server.name} GET ${key(i)}: ${r.length} bytes, expected ${size}`);
    return r;
  });
  const mibPerS = (ms) => size / MiB / (ms / 1000);
  const med = (results, f) => ({ gateway: median(results.gateway.map(f)), baseline: median(results.baseline.map(f)) });
  const p = med(puts, mibPerS);
  const g = med(gets, (r) => mibPerS(r.ms));
  const t = med(gets, (r) => r.firstByteMs);
  return {
    objectKey: key(0),
    data,
    rows: [
      row("PUT throughput", size, "MiB/s", p.gateway, p.baseline),
      row("GET throughput", size, "MiB/s", g.gateway, g.baseline),
      row("GET time to first byte", size, "ms", t.gateway, t.baseline),
    ],
  };
}

/** mulberry32: the same "random" offsets for both servers and every run. */
function seededRandom(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

async function ranges(pair, gateway, key, data, { size, count }) {
  log(`ranges: ${count} × ${sizeLabel(size)}`);
  const random = seededRandom(size);
  const offsets = Array.from({ length: count }, () => Math.floor(random() * (data.length - size + 1)));
  const before = await nodeBytesRead(gateway);
  let received = 0;
  const results = await alternate(pair, count, async (server, i) => {
    const range = [offsets[i], offsets[i] + size];
    const r = await get(server, key, { range, keep: true });
    if (!r.bytes.equals(data.subarray(...range))) throw new Error(`${server.name}: wrong bytes for range ${range}`);
    if (server === gateway) received += r.length;
    return r.ms;
  });
  const nodeBytes = (await nodeBytesRead(gateway)) - before;
  return [
    row("range GET latency", size, "ms", median(results.gateway), median(results.baseline)),
    row("read amplification", size, "node B / client B", nodeBytes / received, null),
    row("node bytes per range GET", size, "KiB", nodeBytes / count / KiB, null),
  ];
}

async function smallObjects(pair) {
  const { size, count, concurrency } = SMALL;
  log(`small objects: ${count} PUTs and GETs of ${sizeLabel(size)}, ${concurrency} in flight`);
  const data = randomBytes(size);
  // Two rounds of half the objects each, so that neither server always goes first.
  const half = count / 2;
  const key = (round, i) => `small-${round * half + i}`;
  const puts = await alternate(pair, 2, (server, round) => pool(half, concurrency, (i) => put(server, key(round, i), data)));
  const gets = await alternate(pair, 2, (server, round) =>
    pool(half, concurrency, async (i) => {
      const r = await get(server, key(round, i));
      if (r.length !== size) throw new Error(`${server.name} GET ${key(round, i)}: ${r.length} bytes, expected ${size}`);
    }),
  );
  const perSecond = (results, name) => count / (results[name][0] + results[name][1]) * 1000;
  return [
    row(`PUT objects/s (${concurrency} in flight)`, size, "objects/s", perSecond(puts, "gateway"), perSecond(puts, "baseline")),
    row(`GET objects/s (${concurrency} in flight)`, size, "objects/s", perSecond(gets, "gateway"), perSecond(gets, "baseline")),
  ];
}

/** Sum of one counter over every series, from the signed /_shardgate/metrics. */
async function counter(gateway, name) {
  const res = await fetch(await sign(gateway, "GET", "/_shardgate/metrics"));
  await expectStatus(res, [200], "GET /_shardgate/metrics");
  let sum = 0;
  for (const m of (await res.text()).matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))) sum += Number(m[1]);
  return sum;
}

/**
 * GETs of the 64 MiB objects with one node down: the gateway restarts on the same data with NODE_0
 * left out of its configuration (and m = 1 for new objects, so five nodes are enough). Every
 * object has one shard file there; only the GETs that needed parity (a data shard lost, as the
 * degraded-read counter shows) count, each checked byte for byte. The baseline column is the
 * pass-through's healthy GET.
 */
async function degradedGets(pair, largest) {
  const [gateway, baseline] = pair;
  log("degraded GETs: restarting the gateway without NODE_0");
  await stop(gateway, { keepData: true });
  servers.splice(servers.indexOf(gateway), 1);
  const down = await serve("gateway", ["--var", "SHARDGATE_NODES:NODE_1,NODE_2,NODE_3,NODE_4,NODE_5", "--var", "SHARDGATE_PARITY_SHARDS:1"], gateway.persist);
  const size = largest.data.length;
  const times = [];
  for (let i = 0; i < THROUGHPUT.find((t) => t.size === size).reps; i++) {
    const key = largest.objectKey.replace(/-0$/, `-${i}`);
    const before = await counter(down, "shardgate_degraded_reads_total");
    const r = await get(down, key, { keep: true });
    if (!r.bytes.equals(largest.data)) throw new Error(`degraded GET ${key}: wrong bytes`);
    if ((await counter(down, "shardgate_degraded_reads_total")) > before) times.push(r.ms);
  }
  const baselineGets = [];
  for (let i = 0; i < 3; i++) baselineGets.push((await get(baseline, largest.objectKey)).ms);
  const mibPerS = (ms) => size / MiB / (ms / 1000);
  const metric = `GET throughput, a data node down (${times.length} degraded GETs)`;
  const base = median(baselineGets.map(mibPerS));
  // NODE_0 can hold only parity shards of every object (about 1 run in 250): nothing to show then.
  return times.length ? row(metric, size, "MiB/s", median(times.map(mibPerS)), base) : { ...row(metric, size, "MiB/s", 0, base), gateway: null, ratio: null };
}

/** First requests compile the Worker and the WASM core: keep them out of the figures. */
async function warmUp(pair) {
  const data = randomBytes(MiB);
  for (const server of pair) {
    await put(server, "warm-up", data);
    await get(server, "warm-up", { range: [1000, 2000] });
    await get(server, "warm-up");
  }
}

// --- report ----------------------------------------------------------------------------------

function sizeLabel(bytes) {
  return bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`;
}

function round(x) {
  if (x === null) return null;
  const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
  return Number(x.toFixed(digits));
}

/** The gateway's geometry as configured ([vars] of the root wrangler.toml). */
function gatewayConfig() {
  const toml = readFileSync(join(root, "wrangler.toml"), "utf8");
  const v = (name) => Number(toml.match(new RegExp(`^SHARDGATE_${name} = "(.*)"$`, "m"))?.[1]);
  return {
    dataShards: v("DATA_SHARDS"),
    parityShards: v("PARITY_SHARDS"),
    blockBytes: v("BLOCK_BYTES"),
    chunkBytes: v("CHUNK_BYTES"),
    inlineBytes: v("INLINE_BYTES"),
  };
}

function environment(seconds) {
  const wrangler = JSON.parse(readFileSync(join(root, "node_modules/wrangler/package.json"), "utf8")).version;
  return {
    date: new Date().toISOString(),
    node: process.version,
    wrangler,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    platform: `${os.platform()} ${os.release()}`,
    gateway: gatewayConfig(),
    throughputRepetitions: Object.fromEntries(THROUGHPUT.map((t) => [sizeLabel(t.size), t.reps])),
    rangeRequests: Object.fromEntries(RANGES.map((r) => [sizeLabel(r.size), r.count])),
    smallObjects: SMALL,
    seconds: Number(seconds.toFixed(1)),
  };
}

const fmt = (x) => (x === null ? "—" : String(round(x)));

function table(rows) {
  const head = ["metric", "size", "gateway", "baseline", "gateway/baseline", "unit"];
  const cells = rows.map((r) => [r.metric, sizeLabel(r.size), fmt(r.gateway), fmt(r.baseline), r.ratio === null ? "—" : r.ratio.toFixed(2), r.unit]);
  const widths = head.map((h, c) => Math.max(h.length, ...cells.map((r) => r[c].length)));
  const numeric = (c) => c >= 2 && c <= 4;
  const line = (r) => `| ${r.map((cell, c) => (numeric(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join(" | ")} |`;
  const rule = `|${widths.map((w, c) => (numeric(c) ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`;
  return [line(head), rule, ...cells.map(line)].join("\n");
}

function footnotes(env) {
  const g = env.gateway;
  const reps = Object.entries(env.throughputRepetitions).map(([size, n]) => `${n} (${size})`);
  const small = env.smallObjects;
  return [
    `Both Workers served by scripts/serve.mjs as \`npm start\` does (wrangler ${env.wrangler} dev behind the same Node front);`,
    `requests alternate between them, from this process (Node ${env.node} fetch + aws4fetch, SigV4, PUTs with`,
    `x-amz-content-sha256: UNSIGNED-PAYLOAD so the client never hashes), on ${env.cpus} cores shared with everything else.`,
    `Baseline: bench/passthrough, a Worker streaming bodies to and from one R2 bucket (no auth, no coding).`,
    `Gateway: ${g.dataShards}+${g.parityShards} erasure coding, ${sizeLabel(g.blockBytes)} blocks, ${sizeLabel(g.chunkBytes)} chunks; objects up to ${g.inlineBytes} B live in their`,
    `manifest (the bucket's Durable Object) and never touch R2.`,
    `Throughput and first byte: median of ${reps.join(", ")} requests. Ranges: one at a time, at seeded random`,
    `offsets in a 64 MiB object, every body checked; read amplification = node bytes asked for`,
    `(shardgate_node_bytes_read_total, all nodes) / range bytes received; the baseline reads exactly the range (1).`,
    `A data node down: the gateway restarted on the same data without NODE_0; only GETs that read parity count.`,
    `Small objects: ${small.count} PUTs, then ${small.count} GETs, ${small.concurrency} in flight. Ratio = gateway / baseline: below 1 is`,
    `slower for MiB/s and objects/s, above 1 is slower for ms. Run took ${env.seconds} s.`,
  ].join("\n");
}

// --- main ------------------------------------------------------------------------------------

async function main() {
  const started = performance.now();
  log("starting the gateway and the pass-through baseline…");
  const pair = await Promise.all([serve("gateway"), serve("baseline", ["-c", "bench/passthrough/wrangler.toml"])]);
  const [gateway] = pair;
  const bucket = await fetch(await sign(gateway, "PUT", `/${BUCKET}`));
  await expectStatus(bucket, [200], `CreateBucket ${BUCKET}`);
  await bucket.arrayBuffer();
  await warmUp(pair);

  const rows = [];
  let largest;
  for (const t of THROUGHPUT) {
    const result = await throughput(pair, t);
    rows.push(...result.rows);
    if (!largest || result.data.length > largest.data.length) largest = result;
  }
  for (const r of RANGES) rows.push(...(await ranges(pair, gateway, largest.objectKey, largest.data, r)));
  rows.push(...(await smallObjects(pair)));
  rows.push(await degradedGets(pair, largest));
  await stopAll(); // the paused-node benchmark runs a cluster of its own
  const stall = await stallBench({ log });

  const env = environment((performance.now() - started) / 1000);
  const rounded = rows.map((r) => ({ ...r, gateway: round(r.gateway), baseline: round(r.baseline), ratio: r.ratio === null ? null : Number(r.ratio.toFixed(3)) }));
  console.log(
    json
      ? JSON.stringify({ rows: rounded, stall: { rows: roundStallRows(stall.rows), info: stall.info }, environment: env }, null, 2)
      : `${table(rows)}\n\n${footnotes(env)}\n\n${stallTable(stall.rows)}\n\n${stallFootnotes(stall.info)}`,
  );
}

let interrupted = false;
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    interrupted = true;
    log(`${signal}: stopping the servers…`);
    Promise.all([stopAll(), stopStallCluster()]).finally(() => process.exit(130));
  });
}

try {
  await main();
} catch (e) {
  // After a signal, requests fail because the servers are going: not worth a stack trace.
  if (!interrupted) log(e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.exitCode = 1;
} finally {
  await Promise.all([stopAll(), stopStallCluster()]);
}
