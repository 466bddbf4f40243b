// `npm run bench:core [-- --json]`: erasure encode and degraded decode throughput of the core,
// native (Rust binary) and WASM (the built core/pkg, in this Node), measured in the same run.
// Prints a table with the WASM/native ratio, or with --json the raw rows as a JSON array.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
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

function nativeRows() {
  log("building and running the native benchmark…");
  execFileSync("cargo", ["build", "--release", "--quiet", "-p", "shardgate-core", "--bin", "bench-core"], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const out = execFileSync(join(root, "target/release/bench-core"), { cwd: root, encoding: "utf8" });
  return out
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line));
}

async function wasmRows() {
  log("running the WASM benchmark in Node " + process.version + "…");
  const core = await import(join(root, "core/pkg/shardgate_core.js"));
  core.initSync({ module: readFileSync(join(root, "core/pkg/shardgate_core_bg.wasm")) });
  const rows = [];
  for (const [k, m] of CONFIGS) {
    for (const op of ["encode", "decode"]) {
      const work = new core.BenchWorkload(k, m, BLOCK_BYTES, op === "decode");
      work.run(3);
      const rates = [];
      for (let r = 0; r < ROUNDS; r++) {
        const start = performance.now();
        let iters = 0;
        while (performance.now() - start < ROUND_MS) {
          work.run(2);
          iters += 2;
        }
        const seconds = (performance.now() - start) / 1000;
        rates.push((iters * BLOCK_BYTES) / seconds / 2 ** 30);
      }
      work.free();
      rates.sort((a, b) => a - b);
      const gib_per_s = Number(rates[Math.floor(ROUNDS / 2)].toFixed(4));
      rows.push({ config: `${k}+${m}`, block_bytes: BLOCK_BYTES, op, engine: "wasm", gib_per_s });
    }
  }
  return rows;
}

function table(rows) {
  const lines = [
    "| config | block | op | native GiB/s | wasm GiB/s | wasm/native |",
    "|---|---|---|---|---|---|",
  ];
  for (const [k, m] of CONFIGS) {
    for (const op of ["encode", "decode"]) {
      const pick = (engine) => rows.find((r) => r.config === `${k}+${m}` && r.op === op && r.engine === engine);
      const native = pick("native").gib_per_s;
      const wasm = pick("wasm").gib_per_s;
      lines.push(
        `| ${k}+${m} | 1 MiB | ${op === "decode" ? `decode (${m} lost)` : op} | ${native.toFixed(2)} | ${wasm.toFixed(3)} | ${(wasm / native).toFixed(3)} |`,
      );
    }
  }
  return lines.join("\n");
}

const rows = [...nativeRows(), ...(await wasmRows())];
console.log(json ? JSON.stringify(rows) : table(rows));
