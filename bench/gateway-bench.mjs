// `npm run bench [-- --json] [-- --quick] [-- --pin] [-- --stall] [-- --no-direct]`: shardgate against MinIO 4+2 and a
// pass-through Worker, side by side in one run on this machine (bench/lib/targets.mjs):
//   shardgate as `npm start` serves it (plain workerd) and under `wrangler dev`; the pass-through
//   Worker on plain workerd over a disk service; MinIO in erasure mode 4+2 on six folders.
//   --targets=ID,ID and --cases=ID,ID run a subset. All get the same requests from the same client
//   (bench/lib/s3-client.mjs: keep-alive node:http, SigV4 with UNSIGNED-PAYLOAD).
//
// Cases, each at 1, 4 and 16 requests in flight (--quick: 4 only): GET of 1 MiB and 64 MiB
// objects, 4 KiB GETs at random offsets of a 16 MiB object (every body checked against the
// source), PUT of 1 MiB and 16 KiB objects (fresh keys), HEAD, and LIST (ListObjectsV2 pages of
// 1,000 keys). Each (case, in flight) is measured for WINDOW_MS per target, in ROUNDS rounds whose
// order alternates (forward, backward), so load from elsewhere on the machine hits all alike.
// Figures: throughput, p50/p99 latency, for GETs time to first byte, the bytes the server
// processes read (/proc/PID/io rchar: files and sockets) per byte served, and the CPU time of the
// server's processes (/proc/PID/stat utime + stime: every thread, every process it started) per
// operation and per MiB moved, each sampled at both ends of the measured window.
//
// --pin: equal cores. Every server runs on CPU 0 only (taskset at spawn), the client on CPU 1, so
// each server gets one core and the client one of its own; without it all share the machine.
// --pin-servers=0-1 (with --pin) gives the servers those CPUs instead (the client keeps CPU 1):
// how `--processes 2` uses a second core (docs/benchmarks.md, "More than one process").
//
// Targets not in the default run (--targets=workerd,workerd2 names them): `workerd2`, shardgate
// as `npm start -- --processes 2` serves it; `floor`, the pass-through whose whole GETs go as an
// erasure-coded read through JS and WASM must (4 ranged requests, copied into WASM memory, written
// out from there: bench/passthrough/worker.js), the least such a GET can cost on this runtime.
//
// Prints one table per case with the ratios shardgate (npm start) / MinIO and, for CPU per
// operation, shardgate / the pass-through (what the runtime needs to move the same bytes), or with --json only the
// figures on stdout; progress goes to stderr. --stall adds bench/stall-bench.mjs (a paused node).
// Then bench/hot-bench.mjs: hot reads through the block cache, nodes 20 ms away (not with --no-hot),
// and bench/direct-bench.mjs: the direct path against the classic path (not with --no-direct);
// neither when --targets or --cases pick a subset. A full run (none of --quick, --targets, --cases)
// also draws docs/bench-chart.svg: throughput and CPU per operation of shardgate, MinIO and the
// pass-through at 4 in flight (bench/lib/chart.mjs).
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import os from "node:os";
import { chartFromBench } from "./lib/chart.mjs";
import { S3Client } from "./lib/s3-client.mjs";
import { allowedCpus, bytesRead, cpuMs, pinSelf, seeded, startTarget, TARGETS } from "./lib/targets.mjs";
import { directBench, directTable } from "./direct-bench.mjs";
import { hotBench, hotTable } from "./hot-bench.mjs";
import { roundStallRows, stallBench, stallFootnotes, stallTable, stopStallCluster } from "./stall-bench.mjs";

const args = new Set(process.argv.slice(2));
// --targets=ID,ID and --cases=ID,ID run a subset (for a quick look; the table compares all).
const only = (name) =>
  process.argv
    .find((a) => a.startsWith(`--${name}=`))
    ?.slice(name.length + 3)
    .split(",");
const json = args.has("--json");
const quick = args.has("--quick");
const log = (line) => console.error(line);
// --pin: the servers on CPU 0, the client on CPU 1 (restored after the cases, for --stall and the
// direct-path bench, whose servers are not pinned).
const PIN = args.has("--pin") ? { servers: only("pin-servers")?.join(",") ?? "0", client: "1" } : null;
const CLIENT_CPUS = allowedCpus(process.pid);
if (PIN && os.availableParallelism() < 2) throw new Error("bench: --pin needs two CPUs");
const MODE = PIN
  ? PIN.servers === "0"
    ? `one core each: every server confined to CPU ${PIN.servers}, the client to CPU ${PIN.client} (--pin)`
    : `every server confined to CPUs ${PIN.servers}, the client to CPU ${PIN.client} (--pin --pin-servers=${PIN.servers})`
  : `unpinned: the servers and the client share the machine's ${os.availableParallelism()} CPUs`;

const KiB = 1024;
const MiB = 1024 * KiB;
const BUCKET = "bench";
const IN_FLIGHT = quick ? [4] : [1, 4, 16];
const ROUNDS = quick ? 1 : 2;
const WINDOW_MS = quick ? 800 : 1500;
// WARMUP_MS=… in the environment lengthens the warm-up (docs/benchmarks.md).
const WARMUP_MS = Number(process.env.WARMUP_MS ?? 300);
const LIST_KEYS = 1000;
// The chart of the figures a full run writes (bench/lib/chart.mjs), from the repository's root.
const CHART = "docs/bench-chart.svg";

const OBJECTS = {
  small: { prefix: "one-mib/", count: 16, body: seeded(MiB, "one-mib") },
  large: { prefix: "big/", count: 2, body: seeded(64 * MiB, "big") },
  ranged: { key: "ranged", body: seeded(16 * MiB, "ranged") },
};

/** The cases: `op(client, i)` does one request and returns { ok, bytes, ttfb, ms }. */
const CASES = [
  { id: "get-1m", label: "GET 1 MiB", unit: "MiB/s", op: (c, i) => get(c, `${OBJECTS.small.prefix}${i % OBJECTS.small.count}`, MiB) },
  { id: "get-64m", label: "GET 64 MiB", unit: "MiB/s", op: (c, i) => get(c, `${OBJECTS.large.prefix}${i % OBJECTS.large.count}`, 64 * MiB) },
  { id: "range-4k", label: "GET 4 KiB ranges of 16 MiB", unit: "req/s", op: range },
  { id: "put-1m", label: "PUT 1 MiB", unit: "MiB/s", op: (c, i, run) => put(c, `put/${run}/${i}`, OBJECTS.small.body) },
  { id: "put-16k", label: "PUT 16 KiB", unit: "req/s", op: (c, i, run) => put(c, `put16/${run}/${i}`, OBJECTS.small.body.subarray(0, 16 * KiB)) },
  { id: "head", label: "HEAD", unit: "req/s", op: (c, i) => request(c, "HEAD", `/${BUCKET}/${OBJECTS.small.prefix}${i % OBJECTS.small.count}`) },
  { id: "list", label: `LIST (pages of ${LIST_KEYS})`, unit: "obj/s", op: list },
];

async function request(client, method, path, opts) {
  const r = await client.request(method, path, opts);
  return { ok: r.status >= 200 && r.status < 300, bytes: r.bytes, ttfb: r.ttfb, ms: r.ms, status: r.status, body: r.body };
}

async function get(client, key, size) {
  const r = await request(client, "GET", `/${BUCKET}/${key}`);
  return { ...r, ok: r.ok && r.bytes === size };
}

async function range(client) {
  const body = OBJECTS.ranged.body;
  const start = Math.floor(Math.random() * (body.length - 4 * KiB));
  const r = await request(client, "GET", `/${BUCKET}/${OBJECTS.ranged.key}`, { headers: { range: `bytes=${start}-${start + 4 * KiB - 1}` }, keep: true });
  return { ...r, ok: r.status === 206 && r.body.equals(body.subarray(start, start + 4 * KiB)) };
}

async function put(client, key, body) {
  const r = await request(client, "PUT", `/${BUCKET}/${key}`, { body });
  return { ...r, bytes: body.length };
}

async function list(client, _i, _run, target) {
  // The pass-through has no S3 listing: its disk service lists the directory instead.
  const path = target.id === "passthrough" || target.id === "floor" ? `/${BUCKET}/list` : `/${BUCKET}?list-type=2&max-keys=${LIST_KEYS}&prefix=list%2F`;
  const r = await request(client, "GET", path, { keep: true });
  const count =
    target.id === "passthrough" || target.id === "floor" ? (r.body.toString().match(/"name"/g) ?? []).length : (r.body.toString().match(/<Key>/g) ?? []).length;
  return { ...r, ok: r.ok && count === LIST_KEYS, bytes: count };
}

/** Creates the bucket and the objects the read cases read. */
async function prepare(target, client) {
  // A server may say it is ready a moment before it takes writes (MinIO answers 503 meanwhile).
  let created = await client.request("PUT", `/${BUCKET}`);
  for (let tries = 0; created.status === 503 && tries < 50; tries++) {
    await new Promise((r) => setTimeout(r, 200));
    created = await client.request("PUT", `/${BUCKET}`);
  }
  if (created.status !== 200) throw new Error(`${target.label}: CreateBucket answered ${created.status}`);
  const puts = [
    ...Array.from({ length: OBJECTS.small.count }, (_, i) => [`${OBJECTS.small.prefix}${i}`, OBJECTS.small.body]),
    ...Array.from({ length: OBJECTS.large.count }, (_, i) => [`${OBJECTS.large.prefix}${i}`, OBJECTS.large.body]),
    [OBJECTS.ranged.key, OBJECTS.ranged.body],
    ...Array.from({ length: LIST_KEYS }, (_, i) => [`list/${String(i).padStart(5, "0")}`, OBJECTS.small.body.subarray(0, 100)]),
  ];
  for (let i = 0; i < puts.length; i += 8) {
    await Promise.all(
      puts.slice(i, i + 8).map(async ([key, body]) => {
        const r = await client.request("PUT", `/${BUCKET}/${key}`, { body });
        if (r.status !== 200) throw new Error(`${target.label}: PUT ${key} answered ${r.status}`);
      }),
    );
  }
}

/** Runs `testCase` against `target` with `inFlight` requests at a time for WINDOW_MS, after
 *  WARMUP_MS of the same unmeasured (the JIT and connections warm, earlier cases' work settled). */
async function measure(target, client, testCase, inFlight, run) {
  await load(client, testCase, inFlight, `${run}-warm`, target, performance.now() + WARMUP_MS, () => {});
  const samples = [];
  let errors = 0;
  let bytes = 0;
  const readers = target.readers();
  const processes = target.processes();
  const readBefore = bytesRead(readers);
  const cpuBefore = cpuMs(processes);
  const clientBefore = process.cpuUsage();
  const started = performance.now();
  await load(client, testCase, inFlight, run, target, started + WINDOW_MS, (r) => {
    if (!r.ok) return errors++;
    samples.push({ ms: r.ms, ttfb: r.ttfb });
    bytes += r.bytes;
  });
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuMs(processes) - cpuBefore;
  const clientUsage = process.cpuUsage(clientBefore);
  const read = readers.length ? bytesRead(readers) - readBefore : null;
  return { seconds, samples, errors, bytes, read, cpu, clientCpu: (clientUsage.user + clientUsage.system) / 1000 };
}

/** `inFlight` loops of `testCase` until `deadline`, each result given to `seen`. */
async function load(client, testCase, inFlight, run, target, deadline, seen) {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < deadline) seen(await testCase.op(client, next++, run, target).catch(() => ({ ok: false })));
    }),
  );
}

function summarize(testCase, parts) {
  const samples = parts.flatMap((p) => p.samples);
  const seconds = parts.reduce((s, p) => s + p.seconds, 0);
  const bytes = parts.reduce((s, p) => s + p.bytes, 0);
  const read = parts.every((p) => p.read !== null) ? parts.reduce((s, p) => s + p.read, 0) : null;
  const cpu = parts.reduce((s, p) => s + p.cpu, 0);
  const clientCpu = parts.reduce((s, p) => s + p.clientCpu, 0);
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const ttfb = samples.map((s) => s.ttfb).sort((a, b) => a - b);
  const pct = (xs, q) => (xs.length ? xs[Math.min(xs.length - 1, Math.floor(xs.length * q))] : null);
  const served = testCase.unit === "MiB/s" ? bytes : testCase.id === "range-4k" ? samples.length * 4 * KiB : null;
  return {
    throughput: testCase.unit === "MiB/s" ? bytes / MiB / seconds : testCase.unit === "obj/s" ? bytes / seconds : samples.length / seconds,
    requests: samples.length,
    errors: parts.reduce((s, p) => s + p.errors, 0),
    p50: pct(ms, 0.5),
    p99: pct(ms, 0.99),
    ttfbP50: testCase.id.startsWith("get") || testCase.id === "range-4k" ? pct(ttfb, 0.5) : null,
    readPerServed: read !== null && served ? read / served : null,
    // The server's CPU (ms) per successful request, MiB moved per CPU-second (byte cases), and
    // the cores it kept busy on average; the client's cores likewise.
    cpuMsPerOp: samples.length ? cpu / samples.length : null,
    mibPerCpuS: testCase.unit === "MiB/s" && cpu > 0 ? bytes / MiB / (cpu / 1000) : null,
    cores: cpu / 1000 / seconds,
    clientCores: clientCpu / 1000 / seconds,
  };
}

/** The storage node requests (subrequests) a shardgate target makes per operation of `testCase`:
 *  the change of shardgate_node_requests_total over COUNTED_OPS operations one at a time, less its
 *  change over as long a time without requests (the background jobs'), each read from the gateway's
 *  metrics once their flush (every second) has passed. */
async function nodeRequestsPerOp(client, testCase, target) {
  const total = async () => {
    await new Promise((r) => setTimeout(r, 1500));
    const text = (await client.request("GET", "/_shardgate/metrics", { keep: true })).body.toString();
    let sum = 0;
    for (const line of text.split("\n")) if (line.startsWith("shardgate_node_requests_total{")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
    return sum;
  };
  const before = await total();
  const started = performance.now();
  for (let i = 0; i < COUNTED_OPS; i++) await testCase.op(client, i, "counted", target);
  const elapsed = performance.now() - started;
  const during = (await total()) - before;
  const idleFrom = await total();
  await new Promise((r) => setTimeout(r, elapsed));
  const idle = (await total()) - idleFrom;
  return Math.max(0, during - idle) / COUNTED_OPS;
}
const COUNTED_OPS = 20;

// --- run -------------------------------------------------------------------------------------

const running = [];
process.on("SIGINT", async () => {
  await Promise.all(running.map((t) => t.stop()));
  process.exit(130);
});

const results = {}; // case id -> in flight -> target id -> summary
const nodeRequests = {}; // case id -> target id -> node requests per operation (shardgate targets)
// What was measured: the commit, and whether the working tree differed from it (the servers run
// the tree as it is when they start).
const git = (...a) => execFileSync("git", a, { encoding: "utf8" }).trim();
const code = { commit: git("rev-parse", "--short", "HEAD"), changed: git("status", "--porcelain", "--", "worker", "core", "scripts").length > 0 };
const loadAverage = { start: os.loadavg(), end: null };
log(`bench: ${MODE}; load average ${loadAverage.start.map((l) => l.toFixed(2)).join(" ")}`);
try {
  if (PIN) pinSelf(PIN.client);
  for (const target of TARGETS.filter((t) => (only("targets") ? only("targets").includes(t.id) : !t.optional)))
    running.push(await startTarget(target, log, { pin: PIN?.servers }));
  const clients = new Map(running.map((t) => [t.id, new S3Client({ endpoint: t.endpoint, ...t.credentials })]));
  for (const t of running) {
    log(`bench: preparing ${t.label}`);
    await prepare(t, clients.get(t.id));
  }
  for (const testCase of CASES.filter((c) => !only("cases") || only("cases").includes(c.id))) {
    results[testCase.id] = {};
    for (const inFlight of IN_FLIGHT) {
      const parts = new Map(running.map((t) => [t.id, []]));
      for (let round = 0; round < ROUNDS; round++) {
        const order = round % 2 === 0 ? running : [...running].reverse();
        for (const t of order)
          parts.get(t.id).push(await measure(t, clients.get(t.id), testCase, inFlight, `${round}-${inFlight}-${randomBytes(3).toString("hex")}`));
      }
      results[testCase.id][inFlight] = Object.fromEntries(running.map((t) => [t.id, summarize(testCase, parts.get(t.id))]));
      log(
        `bench: ${testCase.label} x${inFlight}: ${running.map((t) => `${t.id} ${fmt(results[testCase.id][inFlight][t.id].throughput)} (${fmt(results[testCase.id][inFlight][t.id].cpuMsPerOp, 2)} ms CPU/op)`).join(", ")}`,
      );
    }
    if (testCase.id.startsWith("get") || testCase.id === "range-4k" || testCase.id === "head") {
      nodeRequests[testCase.id] = {};
      for (const t of running.filter((t) => t.id === "workerd" || t.id === "workerd2"))
        nodeRequests[testCase.id][t.id] = await nodeRequestsPerOp(clients.get(t.id), testCase, t);
    }
  }
  for (const c of clients.values()) c.close();
} finally {
  await Promise.all(running.map((t) => t.stop()));
  if (PIN && CLIENT_CPUS) pinSelf(CLIENT_CPUS);
}
loadAverage.end = os.loadavg();
log(`bench: load average at the end ${loadAverage.end.map((l) => l.toFixed(2)).join(" ")}`);

// The figures as --json prints them, and as the chart (bench/lib/chart.mjs) reads them.
const figures = {
  date: new Date().toISOString().slice(0, 10),
  machine: { cpus: os.availableParallelism(), loadAverage },
  code,
  mode: PIN ? { pinned: true, serverCpus: PIN.servers, clientCpus: PIN.client } : { pinned: false },
  targets: TARGETS.map(({ id, label }) => ({ id, label })),
  cases: CASES.map(({ id, label, unit }) => ({ id, label, unit })),
  results,
  nodeRequests,
};

// The chart in docs/ is redrawn by a full run only: a quick run or a subset would replace it with
// fewer figures, or with figures measured another way.
if (quick || only("targets") || only("cases")) log(`bench: ${CHART} left as it is (a --quick, --targets or --cases run)`);
else {
  writeFileSync(new URL(`../${CHART}`, import.meta.url), chartFromBench(figures));
  log(`bench: chart written to ${CHART}`);
}

let stall = null;
if (args.has("--stall")) {
  try {
    stall = await stallBench({ log });
  } finally {
    await stopStallCluster();
  }
}

// Hot reads through the block cache (bench/hot-bench.mjs): not with --no-hot, nor when --targets or --cases pick a subset.
let hot = null;
if (!args.has("--no-hot") && !only("targets") && !only("cases")) {
  if (PIN) pinSelf(PIN.client);
  try {
    hot = await hotBench({ log, pin: PIN?.servers });
  } finally {
    if (PIN && CLIENT_CPUS) pinSelf(CLIENT_CPUS);
  }
}

const direct = args.has("--no-direct") || only("targets") || only("cases") ? null : await directBench({ log });

if (json) {
  const stallJson = stall && { rows: roundStallRows(stall.rows), info: stall.info };
  console.log(JSON.stringify({ ...figures, stall: stallJson, hot, direct }, null, 2));
} else {
  console.log(report(results));
  if (stall) console.log(`\n${stallTable(stall.rows)}\n\n${stallFootnotes(stall.info)}`);
  if (hot) console.log(`\n${hotTable(hot)}`);
  if (direct) console.log(`\n${directTable(direct)}`);
}

function fmt(n, digits = 0) {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(n >= 10 ? Math.max(digits, 0) : Math.max(digits, 1));
}

/** CPU milliseconds to three figures. */
function fmtCpu(ms) {
  return ms === null || ms === undefined ? "–" : ms >= 100 ? fmt(ms) : ms.toFixed(ms >= 10 ? 1 : 2);
}

/** shardgate (npm start) over `peer` (MinIO, the pass-through) of `key` in a row of summaries, as "0.50×" ("–" without both). */
function ratio(row, main, key, peer = "minio") {
  return row[peer]?.[key] && typeof row[main]?.[key] === "number" ? `${(row[main][key] / row[peer][key]).toFixed(2)}×` : "–";
}

function report(res) {
  const targets = TARGETS.filter((t) => running.some((r) => r.id === t.id));
  const cases = CASES.filter((c) => res[c.id]);
  const main = targets[0].id;
  const tag = PIN ? (PIN.servers === "0" ? "one core each" : `servers on CPUs ${PIN.servers}, client on CPU ${PIN.client}`) : "unpinned";
  const lines = [];
  const tree = `commit ${code.commit}${code.changed ? " with uncommitted changes in worker/, core/ or scripts/" : ""}`;
  lines.push(`Mode: ${MODE}. Load average at start / end: ${loadAverage.start[0].toFixed(2)} / ${loadAverage.end[0].toFixed(2)}; ${tree}.`);
  lines.push("");
  lines.push(
    `| case (${tag}) | in flight | ${targets.map((t) => t.label).join(" | ")} | npm start / MinIO | CPU per op, npm start / MinIO | CPU per op, npm start / pass-through |`,
  );
  lines.push(`|---|---|${targets.map(() => "---").join("|")}|---|---|---|`);
  for (const testCase of cases) {
    for (const inFlight of IN_FLIGHT) {
      const row = res[testCase.id][inFlight];
      const cells = targets.map((t) => {
        const s = row[t.id];
        const errors = s.errors ? ` (${s.errors} errors)` : "";
        return `${fmt(s.throughput)} ${testCase.unit} · ${fmt(s.p50, 1)}/${fmt(s.p99, 1)} ms${errors}`;
      });
      lines.push(
        `| ${testCase.label} | ${inFlight} | ${cells.join(" | ")} | ${ratio(row, main, "throughput")} | ${ratio(row, main, "cpuMsPerOp")} | ${ratio(row, main, "cpuMsPerOp", "passthrough")} |`,
      );
    }
  }
  lines.push("");
  lines.push(
    `Cells: throughput · p50/p99 latency. CPU of each server's processes (utime + stime, all threads) per operation · MiB moved per CPU-second · cores it kept busy (and the client):`,
  );
  lines.push("");
  // The floor (bench/passthrough/worker.js SHARDS) when it ran: what an erasure-coded GET through JS must cost.
  const floor = targets.some((t) => t.id === "floor");
  lines.push(
    `| case (${tag}) | in flight | ${targets.map((t) => t.label).join(" | ")} | CPU per op, npm start / MinIO | × pass-through |${floor ? " × floor |" : ""}`,
  );
  lines.push(`|---|---|${targets.map(() => "---").join("|")}|---|---|${floor ? "---|" : ""}`);
  for (const testCase of cases) {
    for (const inFlight of IN_FLIGHT) {
      const row = res[testCase.id][inFlight];
      const cells = targets.map((t) => {
        const s = row[t.id];
        const perCpuS = s.mibPerCpuS === null ? "" : ` · ${fmt(s.mibPerCpuS)} MiB/CPU-s`;
        return `${fmtCpu(s.cpuMsPerOp)} ms${perCpuS} · ${s.cores.toFixed(2)} cores (client ${s.clientCores.toFixed(2)})`;
      });
      const toFloor = floor ? ` ${ratio(row, main, "cpuMsPerOp", "floor")} |` : "";
      lines.push(
        `| ${testCase.label} | ${inFlight} | ${cells.join(" | ")} | ${ratio(row, main, "cpuMsPerOp")} | ${ratio(row, main, "cpuMsPerOp", "passthrough")} |${toFloor}`,
      );
    }
  }
  const at = IN_FLIGHT.includes(4) ? 4 : IN_FLIGHT[0];
  lines.push("");
  lines.push(`Reads at ${at} in flight: time to first byte (p50) · bytes the server processes read per byte served:`);
  lines.push("");
  lines.push(`| case | ${targets.map((t) => t.label).join(" | ")} |`);
  lines.push(`|---|${targets.map(() => "---").join("|")}|`);
  for (const testCase of cases.filter((c) => c.id.startsWith("get") || c.id === "range-4k")) {
    const row = res[testCase.id][at];
    lines.push(
      `| ${testCase.label} | ${targets.map((t) => `${fmt(row[t.id].ttfbP50, 1)} ms · ${row[t.id].readPerServed === null ? "–" : `${fmt(row[t.id].readPerServed, 1)}×`}`).join(" | ")} |`,
    );
  }
  const counted = cases.filter((c) => nodeRequests[c.id]);
  if (counted.length > 0) {
    const ids = Object.keys(nodeRequests[counted[0].id]);
    lines.push("");
    lines.push(`Storage node requests (subrequests) per operation, ${COUNTED_OPS} operations one at a time (shardgate_node_requests_total):`);
    lines.push("");
    lines.push(`| case | ${ids.map((id) => TARGETS.find((t) => t.id === id).label).join(" | ")} |`);
    lines.push(`|---|${ids.map(() => "---").join("|")}|`);
    for (const testCase of counted) lines.push(`| ${testCase.label} | ${ids.map((id) => fmt(nodeRequests[testCase.id][id], 1)).join(" | ")} |`);
  }
  return lines.join("\n");
}
