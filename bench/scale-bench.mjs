// `npm run bench:scale [-- --steps=10000,100000,1000000] [-- --data-dir=DIR] [-- --json]`: how each
// cost grows with the number of objects in one bucket, on shardgate as `npm start` serves it
// (plain workerd, six disk nodes, 4 + 2), loopback only.
//
// One bucket is filled through the S3 API with 1 KiB objects (stored in their manifests) at 16 in
// flight, under keys `dir/NNNNN/obj-IIIIIIIII` (10,000 "directories"). At each step it measures:
// PUT latency (the last 2,000 writes of the fill), HEAD latency (2,000 random keys), the first
// page of a listing and a page deep in the key space (start-after), a delimiter listing of `dir/`
// (10,000 common prefixes: its first page, and paging through all of them), the metadata bytes
// per object (the data directory's Durable Object storage over the object count), and the time the
// heal walk takes over the bucket, per 100,000 objects.
//
// Resumable: the data directory (default .bench-scale/) keeps the objects and a state file with
// how many were written, so a later run with bigger steps goes on from there. Progress on stderr.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../scripts/lib/free-port.mjs";
import { S3Client } from "./lib/s3-client.mjs";
import { SHARDGATE_KEY, SHARDGATE_KEY_ENV } from "./lib/targets.mjs";
import { ok, pct } from "./lib/windows.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const json = process.argv.includes("--json");
const STEPS = arg("steps", "10000,100000").split(",").map(Number);
const DIR = resolve(root, arg("data-dir", ".bench-scale"));
const BUCKET = "scale";
const DIRS = 10_000;
const IN_FLIGHT = 16;
const log = (line) => console.error(line);
const keyOf = (i) => `dir/${String(i % DIRS).padStart(5, "0")}/obj-${String(i).padStart(9, "0")}`;
const tags = (xml, name) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);

function bytesUnder(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? bytesUnder(path) : statSync(path).size;
  }
  return total;
}

async function serve() {
  mkdirSync(DIR, { recursive: true });
  const port = await freePort();
  const out = openSync(join(DIR, "output.log"), "a");
  const child = spawn(process.execPath, [join(root, "scripts/serve.mjs"), "--quiet", "--port", String(port), "--data-dir", DIR], {
    cwd: root,
    detached: true,
    stdio: ["ignore", out, out],
    env: { ...process.env, ...SHARDGATE_KEY_ENV },
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the gateway exited (${child.exitCode}); see ${join(DIR, "output.log")}`);
    if (
      await fetch(`${endpoint}/_shardgate/health`)
        .then((r) => r.ok)
        .catch(() => false)
    )
      break;
    if (Date.now() > deadline) throw new Error("the gateway did not come up within 120 s");
    await new Promise((r) => setTimeout(r, 200));
  }
  return { endpoint, stop: () => process.kill(-child.pid, "SIGTERM") };
}

/** `count` calls of `op(i)` at `inFlight`, their latencies. */
async function run(count, inFlight, op) {
  const ms = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      for (let i = next++; i < count; i = next++) ms.push((await op(i)).ms);
    }),
  );
  return ms;
}

async function timed(n, op) {
  const ms = [];
  for (let i = 0; i < n; i++) ms.push((await op(i)).ms);
  return ms;
}

async function main() {
  const gateway = await serve();
  const client = new S3Client({ endpoint: gateway.endpoint, ...SHARDGATE_KEY });
  const stateFile = join(DIR, "scale-state.json");
  const state = existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")) : { written: 0 };
  const body = Buffer.alloc(1024, 5);
  const rows = [];
  try {
    if (state.written === 0) await ok(client, "PUT", `/${BUCKET}`);
    for (const target of STEPS) {
      // Fill up to the step (resuming), keeping the last 2,000 writes' latencies.
      let putMs = [];
      if (state.written < target) {
        log(`bench:scale: writing objects ${state.written} … ${target}`);
        const from = state.written;
        const started = performance.now();
        let lastSave = Date.now();
        let done = from;
        const latencies = await run(target - from, IN_FLIGHT, async (i) => {
          const r = await ok(client, "PUT", `/${BUCKET}/${keyOf(from + i)}`, { body });
          done += 1;
          if (Date.now() - lastSave > 5_000) {
            lastSave = Date.now();
            writeFileSync(stateFile, JSON.stringify({ written: Math.max(state.written, done - IN_FLIGHT) }));
            log(`bench:scale: ${done} objects (${((done - from) / ((performance.now() - started) / 1000)).toFixed(0)}/s)`);
          }
          return r;
        });
        state.written = target;
        writeFileSync(stateFile, JSON.stringify(state));
        putMs = latencies.slice(-2000);
      } else {
        // Already there: measure PUT latency with 2,000 overwrites of existing keys.
        putMs = await run(2000, IN_FLIGHT, (i) => ok(client, "PUT", `/${BUCKET}/${keyOf((i * 7919) % target)}`, { body }));
      }
      log(`bench:scale: measuring at ${target} objects`);
      const headMs = await run(2000, IN_FLIGHT, (i) => ok(client, "HEAD", `/${BUCKET}/${keyOf((i * 104729 + 17) % target)}`));
      const firstPage = await timed(5, () => ok(client, "GET", `/${BUCKET}?list-type=2&max-keys=1000`, { keep: true }));
      const deepPage = await timed(5, (i) =>
        ok(client, "GET", `/${BUCKET}?list-type=2&max-keys=1000&start-after=${encodeURIComponent(keyOf(Math.floor(target / 2) + i * 97))}`, { keep: true }),
      );
      const delimFirst = await timed(5, () => ok(client, "GET", `/${BUCKET}?list-type=2&prefix=dir%2F&delimiter=%2F&max-keys=1000`, { keep: true }));
      // Page through every common prefix of dir/.
      const walkStarted = performance.now();
      let prefixes = 0;
      let token = "";
      for (;;) {
        const r = await ok(client, "GET", `/${BUCKET}?list-type=2&prefix=dir%2F&delimiter=%2F&max-keys=1000${token}`, { keep: true });
        const xml = r.body.toString();
        prefixes += tags(xml, "Prefix").length - 1; // the request's own <Prefix> is one of them
        const next = tags(xml, "NextContinuationToken")[0];
        if (!next) break;
        token = `&continuation-token=${encodeURIComponent(next)}`;
      }
      const delimWalkMs = performance.now() - walkStarted;
      // The heal walk over the whole bucket, batch after batch.
      const healStarted = performance.now();
      let checked = 0;
      let startAfter = "";
      for (;;) {
        const r = await ok(client, "POST", `/_shardgate/admin/heal?bucket=${BUCKET}&max-objects=1000${startAfter}`, { keep: true });
        const report = JSON.parse(r.body.toString());
        checked += report.objectsChecked ?? 0;
        if (!report.next) break;
        startAfter = `&start-after=${encodeURIComponent(report.next)}`;
      }
      const healMs = performance.now() - healStarted;
      const metaBytes = bytesUnder(join(DIR, "meta"));
      rows.push({
        objects: target,
        put: { p50: pct(putMs, 0.5), p99: pct(putMs, 0.99) },
        head: { p50: pct(headMs, 0.5), p99: pct(headMs, 0.99) },
        firstPageMs: pct(firstPage, 0.5),
        deepPageMs: pct(deepPage, 0.5),
        delimiterFirstPageMs: pct(delimFirst, 0.5),
        delimiterPrefixes: prefixes,
        delimiterWalkMs: delimWalkMs,
        metaBytesPerObject: metaBytes / target,
        healChecked: checked,
        healMsPer100k: (healMs / Math.max(1, checked)) * 100_000,
      });
    }
  } finally {
    client.close();
    gateway.stop();
  }
  if (json) {
    console.log(JSON.stringify(rows, null, 2));
    return;
  }
  const f = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
  console.log(
    "| objects in the bucket | PUT p50/p99 ms | HEAD p50/p99 ms | LIST first page ms | LIST deep page ms | delimiter: first page ms · all 10,000 prefixes s | metadata bytes/object | heal walk s per 100k |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  for (const r of rows) {
    console.log(
      `| ${r.objects.toLocaleString("en")} | ${f(r.put.p50)}/${f(r.put.p99)} | ${f(r.head.p50)}/${f(r.head.p99)} | ${f(r.firstPageMs)} | ${f(r.deepPageMs)} | ${f(r.delimiterFirstPageMs)} · ${(r.delimiterWalkMs / 1000).toFixed(2)} (${r.delimiterPrefixes.toLocaleString("en")}) | ${r.metaBytesPerObject.toFixed(0)} | ${(r.healMsPer100k / 1000).toFixed(1)} |`,
    );
  }
}

await main();
