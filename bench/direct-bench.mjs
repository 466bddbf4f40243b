// The direct path against the classic path (docs/direct-path.md), part of `npm run bench` and on
// its own as `npm run bench:direct [-- --json]`: the same 64 MiB object uploaded and downloaded
//   - classic: one PutObject / GetObject, the gateway coding and decoding;
//   - direct path: @shardgate/client (client/, bundled for Node here) coding and decoding in
//     this process, shard files moving as the gateway's plan says;
// on two set-ups: `npm start`'s six disk nodes, which only the gateway reaches (shard files pass
// through its shard endpoint, chunk checksums checked, no coding), and `npm run cluster
// --client-urls`, six versitygw S3 nodes that clients reach themselves (presigned node URLs: the
// gateway sees no data byte). Rounds alternate the two paths. Per operation: the client's time and
// throughput, the CPU time of the gateway's workerd processes (/proc/PID/stat utime + stime), and
// the bytes the gateway handled: from and to clients, from and to nodes (its own metrics; workerd's
// socket traffic does not show in /proc/PID/io).
//
// On its own it also measures client-side encryption in the console (docs/console.md, issue #43):
// in Chromium (/usr/bin/chromium, headless), the same file uploaded and downloaded through the
// console's direct path plain and sealed with a passphrase, rounds alternating the two, on
// `npm start`'s disk nodes: MiB/s from the click to the upload's "Done" and to the download's
// save, and sealed / plain. A sealed upload's time includes its one Argon2id (64 MiB, t = 3); a
// sealed download's is after the object was unlocked, whose Argon2id is reported on its own.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { freePort } from "../scripts/lib/free-port.mjs";
import { S3Client } from "./lib/s3-client.mjs";
import { cpuMs, descendants, SHARDGATE_KEY, SHARDGATE_KEY_ENV, startTarget, TARGETS } from "./lib/targets.mjs";
import { metricSum, ok } from "./lib/windows.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const MiB = 1 << 20;
const SIZE = 64 * MiB;
const ROUNDS = 3;

/** The client library and the core, loaded once. */
async function loadClient() {
  const dir = mkdtempSync(join(os.tmpdir(), "shardgate-direct-bench-"));
  const out = join(dir, "client.mjs");
  await build({ entryPoints: [join(root, "client/src/index.ts")], bundle: true, format: "esm", platform: "node", outfile: out, logLevel: "error" });
  const lib = await import(pathToFileURL(out).href);
  rmSync(dir, { recursive: true, force: true });
  const bindings = await import(pathToFileURL(join(root, "core/pkg/shardgate_core.js")).href);
  const memory = bindings.initSync({ module: readFileSync(join(root, "core/pkg/shardgate_core_bg.wasm")) }).memory;
  return { ShardgateClient: lib.ShardgateClient, core: new lib.Core(bindings, memory) };
}

const HANDLED = [
  "shardgate_client_bytes_received_total",
  "shardgate_client_bytes_sent_total",
  "shardgate_node_bytes_read_total",
  "shardgate_node_bytes_written_total",
];

/** Bytes the gateway has handled so far: from and to clients, from and to its nodes. */
const handledBytes = (s3) => metricSum(s3, HANDLED);

async function measure(s3, pids, fn) {
  const bytesBefore = await handledBytes(s3);
  const cpuBefore = cpuMs(pids);
  const started = performance.now();
  await fn();
  const seconds = (performance.now() - started) / 1000;
  const cpu = cpuMs(pids) - cpuBefore;
  return { seconds, cpuMs: cpu, bytes: (await handledBytes(s3)) - bytesBefore };
}

/** The cluster of `npm run cluster --client-urls`, started for the bench. */
async function startCluster(log) {
  const port = await freePort();
  // The block cache off: the classic path's downloads read the nodes, as the direct path's do.
  const args = [join(root, "scripts/cluster.mjs"), "--quiet", "--port", String(port), "--client-urls", "--var", "SHARDGATE_BLOCK_CACHE:off"];
  const child = spawn(process.execPath, args, {
    cwd: root,
    detached: true,
    stdio: ["ignore", "pipe", "ignore"],
    env: { ...process.env, ...SHARDGATE_KEY_ENV },
  });
  const info = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      out += d.toString();
      const line = out.split("\n").find((l) => l.startsWith("cluster "));
      if (line) resolve(JSON.parse(line.slice("cluster ".length)));
    });
    child.once("exit", (code) => reject(new Error(`the cluster exited with ${code}`)));
  });
  log(`bench:direct: cluster on ${info.endpoint}`);
  return {
    endpoint: info.endpoint,
    pids: () => descendants(info.gatewayPid, "workerd"),
    stop: () => {
      for (const n of info.nodes) {
        try {
          process.kill(n.pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
      rmSync(info.data, { recursive: true, force: true });
    },
  };
}

/** Both paths, both directions, ROUNDS alternating rounds, on one gateway. */
async function benchSetup(label, endpoint, pids, lib, log) {
  const s3 = new S3Client({ endpoint, ...SHARDGATE_KEY });
  const client = new lib.ShardgateClient({ endpoint, ...SHARDGATE_KEY, core: lib.core });
  const body = randomBytes(SIZE);
  await ok(s3, "PUT", "/direct-bench");
  const ops = { classicPut: [], directPut: [], classicGet: [], directGet: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const classicFirst = round % 2 === 0;
    const put = {
      classic: () => measure(s3, pids(), () => ok(s3, "PUT", `/direct-bench/classic-${round}`, { body })),
      direct: () => measure(s3, pids(), () => client.upload("direct-bench", `direct-${round}`, body)),
    };
    for (const path of classicFirst ? ["classic", "direct"] : ["direct", "classic"]) ops[`${path}Put`].push(await put[path]());
    const get = {
      classic: () =>
        measure(s3, pids(), async () => {
          const res = await ok(s3, "GET", `/direct-bench/classic-${round}`);
          if (res.bytes !== SIZE) throw new Error(`GET returned ${res.bytes} bytes`);
        }),
      direct: () =>
        measure(s3, pids(), async () => {
          const got = await client.download("direct-bench", `direct-${round}`);
          let n = 0;
          for await (const piece of got.body) n += piece.length;
          if (n !== SIZE || got.mode !== "direct") throw new Error(`the direct path returned ${n} bytes (${got.mode})`);
        }),
    };
    for (const path of classicFirst ? ["classic", "direct"] : ["direct", "classic"]) ops[`${path}Get`].push(await get[path]());
    log(`bench:direct: ${label}: round ${round + 1}/${ROUNDS}`);
  }
  s3.close();
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const summarize = (runs) => ({
    mibPerS: SIZE / MiB / median(runs.map((r) => r.seconds)),
    cpuMs: median(runs.map((r) => r.cpuMs)),
    mibMoved: median(runs.map((r) => r.bytes)) / MiB,
  });
  return { label, ...Object.fromEntries(Object.entries(ops).map(([k, runs]) => [k, summarize(runs)])) };
}

/** Runs both set-ups; resolves with one row per set-up and direction. */
export async function directBench({ log }) {
  const lib = await loadClient();
  const rows = [];
  const workerd = await startTarget(
    TARGETS.find((t) => t.id === "workerd"),
    log,
  );
  try {
    rows.push(await benchSetup("disk nodes (npm start): shard files through the gateway", workerd.endpoint, workerd.readers, lib, log));
  } finally {
    await workerd.stop();
  }
  const cluster = await startCluster(log);
  try {
    rows.push(await benchSetup("S3 nodes clients reach (cluster --client-urls): presigned node URLs", cluster.endpoint, cluster.pids, lib, log));
  } finally {
    cluster.stop();
  }
  return rows;
}

const fmt = (n) => (n >= 100 ? Math.round(n).toLocaleString("en-US") : n.toFixed(n >= 10 ? 0 : 1));

export function directTable(rows) {
  const lines = [
    "| 64 MiB, one client | operation | classic: client MiB/s · gateway CPU ms · MiB the gateway moved | direct path: client MiB/s · gateway CPU ms · MiB moved | gateway CPU direct / classic |",
    "|---|---|---|---|---|",
  ];
  for (const r of rows) {
    for (const [op, classic, direct] of [
      ["upload", r.classicPut, r.directPut],
      ["download", r.classicGet, r.directGet],
    ]) {
      const cell = (s) => `${fmt(s.mibPerS)} MiB/s · ${fmt(s.cpuMs)} ms · ${fmt(s.mibMoved)} MiB`;
      const ratio = classic.cpuMs > 0 ? `${(direct.cpuMs / classic.cpuMs).toFixed(2)}×` : "–";
      lines.push(`| ${r.label} | ${op} | ${cell(classic)} | ${cell(direct)} | ${ratio} |`);
    }
  }
  return lines.join("\n");
}

const CHROMIUM = "/usr/bin/chromium";
const BROWSER_SIZE = 64 * MiB;
const PASSPHRASE = "bench passphrase, not a secret";

/** Plain and sealed uploads and downloads through the console in Chromium, ROUNDS alternating rounds. */
export async function sealedBrowserBench({ log }) {
  if (!existsSync(CHROMIUM)) return null;
  const { chromium } = await import("playwright-core");
  const dir = mkdtempSync(join(os.tmpdir(), "shardgate-sealed-bench-"));
  const files = { plain: join(dir, "plain.bin"), sealed: join(dir, "sealed.bin") };
  const body = randomBytes(BROWSER_SIZE);
  for (const f of Object.values(files)) writeFileSync(f, body);
  const gateway = await startTarget(
    TARGETS.find((t) => t.id === "workerd"),
    log,
  );
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
  try {
    const s3 = new S3Client({ endpoint: gateway.endpoint, ...SHARDGATE_KEY });
    await ok(s3, "PUT", "/sealed-bench");
    s3.close();
    // npm start serves the console on the gateway's port + 1.
    const consoleBase = gateway.endpoint.replace(/:(\d+)$/, (_, p) => `:${Number(p) + 1}`);
    const page = await (await browser.newContext({ acceptDownloads: true })).newPage();
    await page.goto(`${consoleBase}/`);
    await page.getByLabel("Access key").fill(SHARDGATE_KEY.accessKeyId);
    await page.getByLabel("Secret key").fill(SHARDGATE_KEY.secretAccessKey);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "sealed-bench" }).click();
    await page.getByLabel("Encrypt with a passphrase").check();
    await page.getByLabel("Passphrase", { exact: true }).fill(PASSPHRASE);
    await page.getByLabel("Confirm passphrase").fill(PASSPHRASE);
    const runs = { plainPut: [], sealedPut: [], plainGet: [], sealedGet: [], unlock: [] };
    const upload = async (kind) => {
      const clear = page.getByRole("button", { name: "Clear finished" });
      if (await clear.isVisible()) await clear.click();
      await page.getByLabel("Encrypt with a passphrase").setChecked(kind === "sealed");
      const row = page.locator("li.upload", { has: page.getByLabel(`Progress of ${kind}.bin`, { exact: true }) });
      const started = performance.now();
      await page.getByLabel("Upload files").setInputFiles(files[kind]);
      for (;;) {
        const text = (await row.textContent().catch(() => "")) ?? "";
        if (text.includes("Done")) break;
        if (text.includes("Failed")) throw new Error(`bench:direct: the ${kind} upload failed: ${text}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      runs[`${kind}Put`].push((performance.now() - started) / 1000);
    };
    const download = async (kind) => {
      await page.getByRole("button", { name: "Refresh" }).click();
      await page.getByRole("button", { name: `${kind}.bin`, exact: true }).click();
      const dialog = page.getByRole("dialog", { name: `${kind}.bin` });
      if (kind === "sealed") {
        await dialog.getByLabel("Passphrase").fill(PASSPHRASE);
        const started = performance.now();
        await dialog.getByRole("button", { name: "Unlock" }).click();
        await dialog.locator(".no-preview").waitFor({ timeout: 60_000 });
        runs.unlock.push((performance.now() - started) / 1000);
      }
      const saved = page.waitForEvent("download", { timeout: 300_000 });
      const started = performance.now();
      await dialog.getByRole("link", { name: "Download" }).click();
      const got = await saved;
      runs[`${kind}Get`].push((performance.now() - started) / 1000);
      const path = join(dir, `got-${kind}.bin`);
      await got.saveAs(path);
      if (!readFileSync(path).equals(body)) throw new Error(`bench:direct: the ${kind} download differs`);
      rmSync(path);
      await dialog.getByRole("button", { name: "Close" }).click();
    };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? ["plain", "sealed"] : ["sealed", "plain"];
      for (const kind of order) await upload(kind);
      for (const kind of order) await download(kind);
      log(`bench:direct: Chromium, plain and sealed: round ${round + 1}/${ROUNDS}`);
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const mibPerS = (xs) => BROWSER_SIZE / MiB / median(xs);
    return {
      mib: BROWSER_SIZE / MiB,
      upload: { plain: mibPerS(runs.plainPut), sealed: mibPerS(runs.sealedPut) },
      download: { plain: mibPerS(runs.plainGet), sealed: mibPerS(runs.sealedGet) },
      unlockSeconds: median(runs.unlock),
      runs,
    };
  } finally {
    await browser.close();
    await gateway.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export function sealedBrowserTable(r) {
  const lines = [
    `| ${r.mib} MiB through the console in Chromium (direct path, disk nodes) | plain MiB/s | sealed MiB/s | sealed / plain |`,
    "|---|---|---|---|",
  ];
  for (const op of ["upload", "download"]) lines.push(`| ${op} | ${fmt(r[op].plain)} | ${fmt(r[op].sealed)} | ${(r[op].sealed / r[op].plain).toFixed(2)}× |`);
  lines.push(`\nUnlocking a sealed object (Argon2id, 64 MiB, t = 3, in a Web Worker): ${r.unlockSeconds.toFixed(2)} s (median), before its download.`);
  lines.push(
    `Seconds per run: ${Object.entries(r.runs)
      .map(([op, xs]) => `${op} ${xs.map((x) => x.toFixed(2)).join(" / ")}`)
      .join("; ")}.`,
  );
  return lines.join("\n");
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const log = (l) => console.error(l);
  const json = process.argv.includes("--json");
  const rows = process.argv.includes("--browser-only") ? [] : await directBench({ log });
  const sealed = await sealedBrowserBench({ log });
  if (json) console.log(JSON.stringify({ rows, sealed }, null, 2));
  else {
    if (rows.length) console.log(directTable(rows));
    console.log(sealed ? `\n${sealedBrowserTable(sealed)}` : "\n(no Chromium at /usr/bin/chromium: the console's sealed uploads were not measured)");
  }
}
