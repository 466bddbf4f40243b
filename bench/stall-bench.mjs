// `node bench/stall-bench.mjs [--json]` (and the last part of `npm run bench`): GET latency with a
// storage node paused (SIGSTOP), against the same cluster healthy, in one run on this machine.
//
// Starts `scripts/cluster.mjs --quiet` (the gateway over six versitygw node processes, 4 + 2) in a
// process group of its own, PUTs a 1 MiB and a 64 KiB object whose data shard 0 lives on the same
// node (from the signed GET /_shardgate/admin/object), and times sequential GETs of them, one at a
// time (request sent → body read in full, length checked), alternating the two objects. Two ways
// of pausing that node, each against healthy blocks of the same length run just before:
//
//   - one long pause: healthy block, the node paused for one block, SIGCONT. The first read
//     hedges (the node does not answer within its hedge delay) and later reads go around the
//     node from the start (for 2 s after a hedge, then one read hedges again), as a stalled node
//     in production would be read around;
//   - short pauses: BLOCKS rounds of a healthy block and a paused block. The node comes back
//     between blocks and is read from again (see settle()) before the next, so every paused block
//     pays for its first hedged read again: the worst case.
//
// The paused GETs are compared with the healthy ones of the same mode: p50, p99 and paused/healthy.
// Reads around the node: the growth of shardgate_hedged_reads_total (signed GET
// /_shardgate/metrics; each read that hedged the node or went around it for being slow) over the
// paused blocks, and over the healthy ones (a healthy node slower than its hedge delay).
// The node is always resumed and the cluster always stopped (its whole process group), on errors
// and signals too; the measurements are bounded in time (DEADLINE_MS). A GET that fails is counted
// (a row of its own) and left out of the latencies. STALL_DEBUG=1 logs every paused GET's time.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { AwsClient } from "aws4fetch";
import { freePort } from "../scripts/lib/free-port.mjs";
import { SHARDGATE_KEY, SHARDGATE_KEY_ENV } from "./lib/targets.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const KiB = 1024;
const MiB = 1024 * KiB;
const CREDENTIALS = SHARDGATE_KEY; // given to the cluster's gateway below
const BUCKET = "stall";
const SIZES = [MiB, 64 * KiB];
/** GETs per block (alternating the sizes), and blocks per mode. */
const BLOCK = 100;
const SHORT = { block: 20, rounds: 5 };
/** The measurements stop (and report what they have) after this long. */
const DEADLINE_MS = 240_000;
/** How long after SIGCONT the node may take to be read from again (its breaker closed). */
const SETTLE_MS = 12_000;

const aws = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });

// --- the cluster -----------------------------------------------------------------------------

let cluster = null;

/** scripts/cluster.mjs on a free port, detached (its own process group: the gateway, wrangler,
 *  workerd and the six nodes); resolves with its `cluster {json}` line. */
async function startCluster(log) {
  const port = await freePort();
  // The block cache off: a paused node is only met by reads that go to the nodes.
  const child = spawn(process.execPath, [join(root, "scripts/cluster.mjs"), "--quiet", "--port", String(port), "--var", "SHARDGATE_BLOCK_CACHE:off"], {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...SHARDGATE_KEY_ENV },
  });
  cluster = { child, info: null, paused: null, output: "" };
  const c = cluster;
  const keep = (d) => (c.output = (c.output + d).slice(-16 * KiB));
  child.stderr.on("data", keep);
  c.info = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`the cluster did not come up within 180 s:\n${c.output}`)), 180_000);
    child.stdout.on("data", (d) => {
      out += d;
      keep(d);
      const line = out.split("\n").find((l) => l.startsWith("cluster "));
      if (line) {
        clearTimeout(timer);
        resolve(JSON.parse(line.slice("cluster ".length)));
      }
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the cluster exited with ${code}:\n${c.output}`));
    });
  });
  log(`stall: cluster serving on ${c.info.endpoint}`);
  return c.info;
}

function signalPid(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function pause(node) {
  cluster.paused = node;
  signalPid(node.pid, "SIGSTOP");
}

function resume() {
  if (cluster?.paused) signalPid(cluster.paused.pid, "SIGCONT");
  if (cluster) cluster.paused = null;
}

/** Resumes the paused node and ends the cluster's process group (SIGTERM, then SIGKILL). */
export async function stopStallCluster() {
  const c = cluster;
  if (!c) return;
  resume();
  cluster = null;
  const { child } = c;
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once("exit", r));
    signalPid(-child.pid, "SIGTERM");
    await Promise.race([exited, sleep(5000)]);
  }
  signalPid(-child.pid, "SIGKILL"); // whatever of the group is left
  for (const n of c.info?.nodes ?? []) signalPid(n.pid, "SIGKILL");
  if (c.info?.data) rmSync(c.info.data, { recursive: true, force: true });
}

// --- requests --------------------------------------------------------------------------------

const url = (path) => `${cluster.info.endpoint}${path}`;

async function expectStatus(res, status, what) {
  if (res.status === status) return;
  throw new Error(`${what}: HTTP ${res.status}: ${(await res.text()).slice(0, 500)}`);
}

async function adminJson(path) {
  const res = await fetch(await aws.sign(url(path)));
  await expectStatus(res, 200, `GET ${path}`);
  return res.json();
}

async function put(key, body) {
  const res = await fetch(await aws.sign(url(`/${BUCKET}/${key}`), { method: "PUT", body, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } }));
  await expectStatus(res, 200, `PUT ${key}`);
  await res.arrayBuffer();
}

/** One timed GET (signed first, so only the request is timed): sent → body read in full. */
async function timedGet(key, size) {
  const request = await aws.sign(url(`/${BUCKET}/${key}`));
  const start = performance.now();
  const res = await fetch(request);
  await expectStatus(res, 200, `GET ${key}`);
  let length = 0;
  for await (const chunk of res.body) length += chunk.length;
  const ms = performance.now() - start;
  if (length !== size) throw new Error(`GET ${key}: ${length} bytes, expected ${size}`);
  return ms;
}

/** Sum of one counter over every series, from the signed /_shardgate/metrics. */
async function counter(name) {
  const res = await fetch(await aws.sign(url("/_shardgate/metrics")));
  await expectStatus(res, 200, "GET /_shardgate/metrics");
  let sum = 0;
  for (const m of (await res.text()).matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "gm"))) sum += Number(m[1]);
  return sum;
}

async function nodeStatus(id) {
  return (await adminJson("/_shardgate/admin/nodes")).nodes.find((n) => n.id === id);
}

// --- measurements ----------------------------------------------------------------------------

/** PUTs `size`-byte objects until one has data shard 0 on `node` (any data shard after 24 tries). */
async function placeOn(node, size, tag) {
  const data = randomBytes(size);
  let fallback = null;
  for (let i = 0; i < 24; i++) {
    const key = `${tag}-${i}`;
    await put(key, data);
    const layout = await adminJson(`/_shardgate/admin/object?bucket=${BUCKET}&key=${encodeURIComponent(key)}`);
    const shards = layout.parts[0].shards;
    if (shards[0].node === node) return { key, size, shard: 0 };
    const shard = shards.find((s) => s.kind === "data" && s.node === node);
    if (shard && !fallback) fallback = { key, size, shard: shard.index };
  }
  if (!fallback) throw new Error(`no ${size}-byte object with a data shard on ${node}`);
  return fallback;
}

const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.ceil(s.length * p) - 1)];
};

/**
 * After SIGCONT: unmeasured GETs until the node's breaker is closed again and it has answered
 * (the cool-down's probe closes it), so the next block starts from a healthy node.
 */
async function settle(objects, node) {
  const started = Date.now();
  for (let i = 0; Date.now() - started < SETTLE_MS; i++) {
    const s = await nodeStatus(node.id);
    if (s.state === "closed" && s.consecutiveFailures === 0 && !s.slow) return Date.now() - started;
    const o = objects[i % objects.length];
    await timedGet(o.key, o.size);
    await sleep(100);
  }
  return Date.now() - started;
}

/** `count` sequential GETs alternating the objects; ms per size. A GET that fails (an error
 *  status, a short body) is counted in `failed` and left out of the latencies. */
async function block(objects, count, deadline, failed, log) {
  const ms = new Map(objects.map((o) => [o.size, []]));
  for (let i = 0; i < count && Date.now() < deadline; i++) {
    const o = objects[i % objects.length];
    try {
      ms.get(o.size).push(await timedGet(o.key, o.size));
    } catch (e) {
      failed.push(e instanceof Error ? e.message.split("\n")[0] : String(e));
      log(`stall: ${failed.at(-1)}`);
      if (failed.length > 20) throw new Error(`stall: ${failed.length} GETs failed`);
    }
  }
  return ms;
}

/** shared/node-health.ts's hedge bounds, read from its source (for the log and the footnotes). */
function hedgeBounds() {
  const src = readFileSync(join(root, "worker/src/shared/node-health.ts"), "utf8");
  const v = (name) => Number(src.match(new RegExp(`^const ${name} = ([\\d_]+);`, "m"))?.[1].replaceAll("_", ""));
  return { floorMs: v("HEDGE_FLOOR_MS"), capMs: v("HEDGE_CAP_MS"), unknownMs: v("HEDGE_UNKNOWN_MS") };
}

/** What hedgeAfterMs answers for a latency average. */
function hedgeDelay(latencyMs) {
  const b = hedgeBounds();
  return latencyMs === null ? b.unknownMs : Math.round(Math.min(b.capMs, Math.max(b.floorMs, 4 * latencyMs)));
}

function merge(into, from) {
  for (const [size, xs] of from) into.set(size, [...(into.get(size) ?? []), ...xs]);
}

/** Healthy and paused blocks of one mode: rounds × (healthy block, paused block). */
async function run(objects, node, { name, block: count, rounds }, deadline, log) {
  const healthy = new Map();
  const paused = new Map();
  const hedged = { healthy: 0, paused: 0 };
  const failed = { healthy: [], paused: [] };
  const delays = [];
  let settleMs = 0;
  for (let r = 0; r < rounds && Date.now() < deadline; r++) {
    let before = await counter("shardgate_hedged_reads_total");
    merge(healthy, await block(objects, count, deadline, failed.healthy, log));
    let after = await counter("shardgate_hedged_reads_total");
    hedged.healthy += after - before;
    before = after;
    const { latencyMs } = await nodeStatus(node.id);
    delays.push(hedgeDelay(latencyMs));
    pause(node);
    let ms;
    try {
      ms = await block(objects, count, deadline, failed.paused, log);
    } finally {
      resume();
    }
    merge(paused, ms);
    if (process.env.STALL_DEBUG)
      log(
        `stall debug: latency before pause ${latencyMs} ms; paused GETs: ${[...ms].map(([size, xs]) => `${size}: ${xs.map((x) => x.toFixed(0)).join(" ")}`).join(" | ")}`,
      );
    after = await counter("shardgate_hedged_reads_total");
    hedged.paused += after - before;
    const s = await nodeStatus(node.id);
    const back = await settle(objects, node);
    settleMs = Math.max(settleMs, back);
    log(
      `stall: ${name}, round ${r + 1}/${rounds}: ${after - before} hedged while paused (hedge delay ${hedgeDelay(latencyMs)} ms); after SIGCONT breaker ${s.state}, latency ${s.latencyMs} ms, slow ${s.slow}, read from again in ${(back / 1000).toFixed(1)} s`,
    );
  }
  return { healthy, paused, hedged, failed, settleMs, delays };
}

const row = (metric, size, unit, healthy, paused) => ({ metric, size, unit, healthy, paused, ratio: healthy ? paused / healthy : null });

function rows(mode, result) {
  const out = [];
  const all = (m) => [...m.values()].flat();
  const groups = [
    ...[...result.healthy.keys()].map((size) => [size, result.healthy.get(size), result.paused.get(size) ?? []]),
    ["all", all(result.healthy), all(result.paused)],
  ];
  for (const [size, h, p] of groups) {
    if (!h.length || !p.length) continue;
    out.push(row(`GET latency p50, ${mode}`, size, "ms", percentile(h, 0.5), percentile(p, 0.5)));
    out.push(row(`GET latency p99, ${mode}`, size, "ms", percentile(h, 0.99), percentile(p, 0.99)));
  }
  const n = (m) => all(m).length;
  out.push({
    ...row(
      `reads around a slow node, ${mode} (of ${n(result.healthy)} + ${n(result.paused)} GETs)`,
      "all",
      "reads",
      result.hedged.healthy,
      result.hedged.paused,
    ),
    ratio: null,
  });
  if (result.failed.healthy.length || result.failed.paused.length) {
    out.push({ ...row(`failed GETs, ${mode}`, "all", "GETs", result.failed.healthy.length, result.failed.paused.length), ratio: null });
  }
  return out;
}

/** The whole benchmark: cluster up, objects placed, both modes, cluster down. */
export async function stallBench({ log = (line) => console.error(line) } = {}) {
  const started = performance.now();
  try {
    log("stall: starting the cluster (six versitygw nodes, 4 + 2)…");
    const info = await startCluster(log);
    const res = await fetch(await aws.sign(url(`/${BUCKET}`), { method: "PUT" }));
    await expectStatus(res, 200, `CreateBucket ${BUCKET}`);
    await res.arrayBuffer();

    await put("first", randomBytes(SIZES[0])); // the node holding its data shard 0 is the one paused
    const layout = await adminJson(`/_shardgate/admin/object?bucket=${BUCKET}&key=first`);
    const node = info.nodes.find((n) => n.id === layout.parts[0].shards[0].node);
    const objects = [];
    for (const size of SIZES) objects.push(await placeOn(node.id, size, `obj-${size}`));
    log(`stall: pausing ${node.id} (pid ${node.pid}): data shard ${objects.map((o) => o.shard).join(", ")} of ${objects.map((o) => o.key).join(", ")}`);
    // Warm-up: the first requests compile the Worker and the WASM core, and the node's latency
    // average (its hedge delay) needs samples.
    for (let i = 0; i < 20; i++) await timedGet(objects[i % 2].key, objects[i % 2].size);

    const deadline = Date.now() + DEADLINE_MS;
    const long = await run(objects, node, { name: "one long pause", block: BLOCK * SIZES.length, rounds: 1 }, deadline, log);
    const short = await run(objects, node, { name: `${SHORT.rounds} short pauses`, block: SHORT.block, rounds: SHORT.rounds }, deadline, log);
    return {
      rows: [...rows("one long pause", long), ...rows(`${SHORT.rounds} pauses of ${SHORT.block} GETs`, short)],
      info: {
        pausedNode: node.id,
        objects: objects.map((o) => ({ key: o.key, bytes: o.size, pausedShard: o.shard })),
        longPauseGets: BLOCK * SIZES.length,
        shortPauses: SHORT,
        settleMsMax: Math.max(long.settleMs, short.settleMs),
        hedge: { ...hedgeBounds(), delaysAtPauseMs: [...long.delays, ...short.delays] },
        failedGets: [...long.failed.healthy, ...long.failed.paused, ...short.failed.healthy, ...short.failed.paused],
        seconds: Number(((performance.now() - started) / 1000).toFixed(1)),
      },
    };
  } finally {
    await stopStallCluster();
  }
}

// --- report ----------------------------------------------------------------------------------

const sizeLabel = (bytes) => (bytes === "all" ? "both" : bytes >= MiB ? `${bytes / MiB} MiB` : `${bytes / KiB} KiB`);

function round(x) {
  if (x === null) return null;
  const digits = Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
  return Number(x.toFixed(digits));
}

export function roundStallRows(rows) {
  return rows.map((r) => ({ ...r, healthy: round(r.healthy), paused: round(r.paused), ratio: r.ratio === null ? null : Number(r.ratio.toFixed(3)) }));
}

const fmt = (x) => (x === null ? "—" : String(round(x)));

export function stallTable(rows) {
  const head = ["metric", "size", "healthy", "node paused", "paused/healthy", "unit"];
  const cells = rows.map((r) => [r.metric, sizeLabel(r.size), fmt(r.healthy), fmt(r.paused), r.ratio === null ? "—" : r.ratio.toFixed(2), r.unit]);
  const widths = head.map((h, c) => Math.max(h.length, ...cells.map((r) => r[c].length)));
  const numeric = (c) => c >= 2 && c <= 4;
  const line = (r) => `| ${r.map((cell, c) => (numeric(c) ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join(" | ")} |`;
  const rule = `|${widths.map((w, c) => (numeric(c) ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`;
  return [line(head), rule, ...cells.map(line)].join("\n");
}

export function stallFootnotes(info) {
  return [
    `A paused node: npm run cluster (six versitygw processes, 4+2), ${info.pausedNode} (${info.objects.map((o) => `data shard ${o.pausedShard} of the ${sizeLabel(o.bytes)}`).join(" and ")}`,
    `object) stopped with SIGSTOP; sequential GETs alternating the two objects, each timed from`,
    `sending to the last body byte. One long pause: ${info.longPauseGets} GETs healthy, then ${info.longPauseGets} with the node paused (reads hedge`,
    `it once, then go around it). Short pauses: ${info.shortPauses.rounds} × (${info.shortPauses.block} GETs healthy, ${info.shortPauses.block} paused), the node resumed between blocks and`,
    `read from again (at most ${(info.settleMsMax / 1000).toFixed(1)} s after SIGCONT) before the next, so every pause is hedged anew.`,
    `Hedge delay when each pause began: ${[...new Set(info.hedge.delaysAtPauseMs)].join(", ")} ms (4 × the node's latency average, at least ${info.hedge.floorMs} ms).`,
    `Reads around the node: growth of shardgate_hedged_reads_total over the healthy and the paused blocks. Took ${info.seconds} s.`,
  ].join("\n");
}

// --- on its own ------------------------------------------------------------------------------

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const json = process.argv.includes("--json");
  let interrupted = false;
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => {
      interrupted = true;
      console.error(`${signal}: resuming the node and stopping the cluster…`);
      stopStallCluster().finally(() => process.exit(130));
    });
  }
  try {
    const { rows, info } = await stallBench();
    console.log(json ? JSON.stringify({ rows: roundStallRows(rows), info }, null, 2) : `${stallTable(rows)}\n\n${stallFootnotes(info)}`);
  } catch (e) {
    if (!interrupted) console.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    process.exitCode = 1;
  } finally {
    await stopStallCluster();
  }
}
