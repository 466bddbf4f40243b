// The servers `npm run bench` compares, each started on a free loopback port in its own process
// group and temporary directory:
//   - shardgate on plain workerd, as `npm start` serves it;
//   - shardgate under `wrangler dev`, as `npm run dev` serves it;
//   - the pass-through Worker on plain workerd over one disk service (bench/passthrough/);
//   - MinIO in erasure mode 4+2 on six folders (go-installed by scripts/setup-bench.sh).
// Each target says which processes do its storage reads (`readers()`), so a run can count the
// bytes they read (/proc/PID/io rchar), and which processes are the server (`processes()`: the
// whole process tree it started), so a run can count their CPU time (/proc/PID/stat): the same
// measures for every server. With `pin`, every process of a target runs on those CPUs only.
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { writePassthroughConfig } from "../passthrough/config.mjs";
import { freePort } from "../../scripts/lib/free-port.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
/** The root key the benchmarks start shardgate with (without one, a gateway makes its own at its first start). */
export const SHARDGATE_KEY = { accessKeyId: "shardgate", secretAccessKey: "shardgate-bench-root-secret" };
/** SHARDGATE_KEY as the environment gives it to a gateway (scripts/serve.mjs, dev.mjs, cluster.mjs). */
export const SHARDGATE_KEY_ENV = { SHARDGATE_ACCESS_KEY_ID: SHARDGATE_KEY.accessKeyId, SHARDGATE_SECRET_ACCESS_KEY: SHARDGATE_KEY.secretAccessKey };
const MINIO_KEY = { accessKeyId: "shardgate-bench", secretAccessKey: "shardgate-bench-secret" };

/** The targets, in table order; the first is the one compared with MinIO. */
export const TARGETS = [
  { id: "workerd", label: "shardgate (npm start)", start: (dir, port, pin) => shardgate(dir, port, pin, "serve.mjs", ["--data-dir", dir]) },
  { id: "dev", label: "shardgate (wrangler dev)", start: (dir, port, pin) => shardgate(dir, port, pin, "dev.mjs", ["--persist-to", dir]) },
  { id: "passthrough", label: "pass-through (workerd)", start: (dir, port, pin) => passthrough(dir, port, pin) },
  // Only when --targets names it: the pass-through whose whole GETs move their bytes as an
  // erasure-coded read through JS and WASM must (bench/passthrough/worker.js, SHARDS): the floor.
  { id: "floor", label: "floor: 4 ranges via WASM (workerd)", optional: true, start: (dir, port, pin) => passthrough(dir, port, pin, 4) },
  // Only when named (bench/hot-bench.mjs): the pass-through whose GETs first check their signature
  // and look their key up in a Durable Object (bench/passthrough/worker.js META), the least a GET
  // that must authenticate and find the current version before it serves can cost on this runtime.
  {
    id: "lookup",
    label: "pass-through + signature + one metadata lookup (workerd)",
    optional: true,
    start: (dir, port, pin) => passthrough(dir, port, pin, null, SHARDGATE_KEY.secretAccessKey),
  },
  { id: "minio", label: "MinIO 4+2", start: minio },
  // Only when named (bench/hot-bench.mjs): the block cache on, every node 20 ms away.
  {
    id: "hot",
    label: "shardgate (npm start, block cache, nodes 20 ms away)",
    optional: true,
    start: (dir, port, pin) => shardgate(dir, port, pin, "serve.mjs", ["--data-dir", join(dir, "data"), "--config", hotConfig(dir)]),
  },
  // Only when --targets names it: two workerd processes on one listening socket (scripts/serve.mjs).
  {
    id: "workerd2",
    label: "shardgate (--processes 2)",
    optional: true,
    start: (dir, port, pin) => shardgate(dir, port, pin, "serve.mjs", ["--data-dir", dir, "--processes", "2"]),
  },
];

/** Starts a target; resolves once it answers. `pin` ("0", "0-1", …): the CPUs its processes
 *  may run on, set with taskset at spawn so that every thread and child inherits it, and so that
 *  runtimes sizing themselves by the CPUs they may use (Go's GOMAXPROCS) see only those. */
export async function startTarget(target, log, { pin = null } = {}) {
  const dir = mkdtempSync(join(os.tmpdir(), `shardgate-bench-${target.id}-`));
  const port = await freePort();
  const server = await target.start(dir, port, pin);
  const endpoint = `http://127.0.0.1:${port}`;
  const output = () => readFileSync(join(dir, "output.log"), "utf8").slice(-20_000);
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (server.child.exitCode !== null) throw new Error(`${target.label} exited (${server.child.exitCode}):\n${output()}`);
    if (await server.ready(endpoint).catch(() => false)) break;
    if (Date.now() > deadline) throw new Error(`${target.label} did not come up within 120 s:\n${output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const processes = () => [server.child.pid, ...descendants(server.child.pid)];
  if (pin) {
    const off = processes().filter((pid) => allowedCpus(pid) !== pin);
    if (off.length) throw new Error(`${target.label}: processes ${off.join(", ")} are not confined to CPU ${pin}`);
  }
  log(`bench: ${target.label} on ${endpoint}${pin ? ` (CPU ${pin})` : ""}`);
  return {
    ...target,
    endpoint,
    credentials: server.credentials,
    readers: server.readers,
    processes,
    output,
    stop: async () => {
      try {
        process.kill(-server.child.pid, "SIGKILL");
      } catch {
        // gone already
      }
      await new Promise((r) => setTimeout(r, 200));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `cmd` in its own process group, its output into dir/output.log: a file, never a pipe, whose
 *  reader (this process, busy being the client) could make the server wait on a full pipe. */
function detached(dir, pin, cmd, args, env = {}) {
  const out = openSync(join(dir, "output.log"), "a");
  // taskset execs the command: the child's pid is the server's.
  const [file, argv] = pin ? ["taskset", ["-c", pin, cmd, ...args]] : [cmd, args];
  return spawn(file, argv, { cwd: root, detached: true, stdio: ["ignore", out, out], env: { ...process.env, ...env } });
}

const healthy = async (endpoint) => (await fetch(`${endpoint}/_shardgate/health`)).ok;

function shardgate(dir, port, pin, script, args) {
  const child = detached(dir, pin, process.execPath, [join(root, "scripts", script), "--quiet", "--port", String(port), ...args], SHARDGATE_KEY_ENV);
  // Under wrangler dev the storage reads happen in processes wrangler owns: not counted.
  const readers = script === "serve.mjs" ? () => descendants(child.pid, "workerd") : () => [];
  return { child, credentials: SHARDGATE_KEY, ready: healthy, readers };
}

/** `size` bytes that are the same for every target and run (a SHA-256 chain seeded by `tag`), so runs are comparable too. */
export function seeded(size, tag) {
  const out = Buffer.alloc(size);
  let block = createHash("sha256").update(tag).digest();
  for (let at = 0; at < size; at += block.length) {
    block.copy(out, at);
    block = createHash("sha256").update(block).digest();
  }
  return out;
}

/** Node delay of the "hot" target (ms): nodes as far as a remote region's. */
export const HOT_NODE_DELAY_MS = 20;

/** The "hot" target's shardgate.json: the default six disk nodes, each HOT_NODE_DELAY_MS away, and a block cache. */
function hotConfig(dir) {
  const delays = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`NODE_${i}`, HOT_NODE_DELAY_MS]));
  const file = join(dir, "shardgate.json");
  writeFileSync(file, JSON.stringify({ cacheMiB: 1024, vars: { SHARDGATE_NODE_DELAY_MS: JSON.stringify(delays), SHARDGATE_CACHE_HEADER: "on" } }));
  return file;
}

const { unstable_readConfig } = await import("wrangler");
const compatibilityDate = unstable_readConfig({ config: join(root, "wrangler.toml") }, { hideWarnings: true }).compatibility_date;

function passthrough(dir, port, pin, shards = null, lookupSecret = null) {
  const config = writePassthroughConfig(dir, `127.0.0.1:${port}`, compatibilityDate, shards, lookupSecret);
  const child = detached(dir, pin, join(root, "node_modules/workerd/bin/workerd"), ["serve", config, ...(lookupSecret ? ["--experimental"] : [])]);
  // Ready once the Worker answers: 404 (no such file), or 403 (unsigned) with lookupSecret.
  const ready = async (endpoint) => [403, 404].includes((await fetch(`${endpoint}/none/none`)).status);
  return { child, credentials: SHARDGATE_KEY, ready, readers: () => [child.pid] };
}

function minio(dir, port, pin) {
  const drives = Array.from({ length: 6 }, (_, i) => join(dir, `d${i + 1}`));
  for (const d of drives) mkdirSync(d);
  const child = detached(
    dir,
    pin,
    join(root, ".tools/go/bin/minio"),
    ["server", "--quiet", "--address", `127.0.0.1:${port}`, "--console-address", "127.0.0.1:0", join(dir, "d{1...6}")],
    {
      MINIO_ROOT_USER: MINIO_KEY.accessKeyId,
      MINIO_ROOT_PASSWORD: MINIO_KEY.secretAccessKey,
      MINIO_STORAGE_CLASS_STANDARD: "EC:2", // 4 data + 2 parity over the six drives, like shardgate's default
      MINIO_BROWSER: "off",
      MINIO_CI_CD: "on", // six folders on one disk: MinIO refuses drives on the root disk without it
      MINIO_UPDATE: "off",
    },
  );
  return { child, credentials: MINIO_KEY, ready: async (endpoint) => (await fetch(`${endpoint}/minio/health/ready`)).ok, readers: () => [child.pid] };
}

/** Processes named `name` (any name without one) among the descendants of `pid`. */
export function descendants(pid, name) {
  const out = [];
  const walk = (p) => {
    let children = [];
    try {
      children = readFileSync(`/proc/${p}/task/${p}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
    } catch {
      return;
    }
    for (const c of children) {
      try {
        if (name === undefined || readFileSync(`/proc/${c}/comm`, "utf8").trim() === name) out.push(c);
      } catch {
        // gone
      }
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** Bytes the processes have read so far (rchar: every read, from files and sockets alike). */
export function bytesRead(pids) {
  let total = 0;
  for (const pid of pids) {
    try {
      total += Number(/rchar:\s*(\d+)/.exec(readFileSync(`/proc/${pid}/io`, "utf8"))?.[1] ?? 0);
    } catch {
      // gone
    }
  }
  return total;
}

// /proc/PID/stat counts CPU time in clock ticks (USER_HZ: 100 on Linux, 10 ms).
const TICK_MS = 1000 / (Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" })) || 100);

/** CPU time (ms) the processes have used so far: utime + stime of /proc/PID/stat, which sum all
 *  of a process's threads (children are listed as processes of their own). Sampled at both ends of
 *  a window, like bytesRead; ticks of 10 ms, so windows of a second or more. */
export function cpuMs(pids) {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" "); // comm may hold spaces
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    } catch {
      // gone
    }
  }
  return ticks * TICK_MS;
}

/** The CPUs a process may run on, as taskset and /proc write them ("0", "0-1"). */
export function allowedCpus(pid) {
  return /Cpus_allowed_list:\s*(\S+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? null;
}

/** Confines every thread of this process (and what it starts later) to `cpus`. */
export function pinSelf(cpus) {
  execFileSync("taskset", ["-a", "-p", "-c", cpus, String(process.pid)], { stdio: "ignore" });
  if (allowedCpus(process.pid) !== cpus) throw new Error(`bench: could not confine the client to CPU ${cpus}`);
}
