// `npm run bench:core [-- --json]`: erasure encode and degraded decode throughput of the core, and
// the per-chunk checksum against a plain memory copy, natively (Rust binary) and in WASM (the built
// core/pkg, in this Node), measured in the same run. The erasure rows run in WASM twice: on the
// crate's own scalar engine and decoder (`wasm-scalar`, what WASM ran before the simd128 engine) and
// on the default path, the simd128 engine with the small-code encoder and decoder (`wasm-simd`).
//
// Each figure is GiB/s of object data, the median of ROUNDS rounds of ROUND_MS. The rounds of the
// engines alternate (native, wasm-scalar, wasm-simd, native, …), the native ones in a `bench-core
// --serve` child, so that on a shared machine every engine sees the same load and the ratios hold
// even when the absolute figures move. Prints the tables, or with --json the rows as a JSON array
// (`config`, `block_bytes`, `op`, `engine`: native | wasm-scalar | wasm-simd, `gib_per_s`).
import { execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const json = process.argv.includes("--json");
const log = (line) => json || console.error(line);

const BLOCK_BYTES = 1 << 20;
const CONFIGS = [
  [4, 2],
  [8, 4],
];
const ROUND_MS = 300;
const ROUNDS = 5;

/** The native benchmark as a server: `round(k, m, op)` resolves to the GiB/s of one round. */
function nativeServer() {
  log("building the native benchmark…");
  execFileSync("cargo", ["build", "--release", "--quiet", "-p", "shardgate-core", "--bin", "bench-core"], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const child = spawn(join(root, "target/release/bench-core"), ["--serve"], { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
  const waiting = [];
  createInterface({ input: child.stdout }).on("line", (line) => waiting.shift()(Number(line)));
  return {
    round: (k, m, op) =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin.write(`${k} ${m} ${op}\n`);
      }),
    close: () => child.stdin.end(),
  };
}

/** One WASM workload; `round()` returns the GiB/s of one round. */
function wasmWorkload(core, k, m, op, engine) {
  const work = new core.BenchWorkload(k, m, BLOCK_BYTES, op, engine);
  work.run(3);
  return {
    round() {
      const start = performance.now();
      let iters = 0;
      while (performance.now() - start < ROUND_MS) {
        work.run(2);
        iters += 2;
      }
      return (iters * BLOCK_BYTES) / ((performance.now() - start) / 1000) / 2 ** 30;
    },
    free: () => work.free(),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure() {
  const native = nativeServer();
  log("running native and WASM (Node " + process.version + ") rounds alternately…");
  const core = await import(join(root, "core/pkg/shardgate_core.js"));
  core.initSync({ module: readFileSync(join(root, "core/pkg/shardgate_core_bg.wasm")) });
  const cases = [];
  for (const [k, m] of CONFIGS) {
    for (const op of ["encode", "decode"]) cases.push({ k, m, op, config: `${k}+${m}`, wasm: ["scalar", "simd128"] });
  }
  for (const op of ["checksum", "copy"]) cases.push({ k: 1, m: 1, op, config: "-", wasm: ["simd128"] });
  const rows = [];
  for (const { k, m, op, config, wasm } of cases) {
    const engines = wasm.map((engine) => ({ name: engine === "scalar" ? "wasm-scalar" : "wasm-simd", work: wasmWorkload(core, k, m, op, engine) }));
    const rates = { native: [] };
    for (const e of engines) rates[e.name] = [];
    for (let r = 0; r < ROUNDS; r++) {
      rates.native.push(await native.round(k, m, op));
      for (const e of engines) rates[e.name].push(e.work.round());
    }
    for (const e of engines) e.work.free();
    for (const [engine, xs] of Object.entries(rates)) {
      rows.push({ config, block_bytes: BLOCK_BYTES, op, engine, gib_per_s: Number(median(xs).toFixed(4)) });
    }
  }
  native.close();
  return rows;
}

function tables(rows) {
  const pick = (config, op, engine) => rows.find((r) => r.config === config && r.op === op && r.engine === engine).gib_per_s;
  const lines = [
    "| config | block | op | wasm-scalar GiB/s | wasm-simd GiB/s | native GiB/s | simd/scalar | simd/native |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const [k, m] of CONFIGS) {
    for (const op of ["encode", "decode"]) {
      const config = `${k}+${m}`;
      const [scalar, simd, native] = ["wasm-scalar", "wasm-simd", "native"].map((e) => pick(config, op, e));
      const name = op === "decode" ? `decode (${m} lost)` : op;
      lines.push(
        `| ${config} | 1 MiB | ${name} | ${scalar.toFixed(3)} | ${simd.toFixed(2)} | ${native.toFixed(2)} | ${(simd / scalar).toFixed(1)} | ${(simd / native).toFixed(2)} |`,
      );
    }
  }
  lines.push("", "| op | block | wasm-simd GiB/s | native GiB/s | wasm / wasm copy |", "|---|---|---|---|---|");
  const copy = pick("-", "copy", "wasm-simd");
  for (const [op, name] of [
    ["checksum", "chunk checksum (xxh3, 16 KiB chunks)"],
    ["copy", "memory copy"],
  ]) {
    const wasm = pick("-", op, "wasm-simd");
    lines.push(`| ${name} | 1 MiB | ${wasm.toFixed(2)} | ${pick("-", op, "native").toFixed(2)} | ${(wasm / copy).toFixed(2)} |`);
  }
  return lines.join("\n");
}

const rows = await measure();
console.log(json ? JSON.stringify(rows) : tables(rows));
