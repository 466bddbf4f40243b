// `npm start`: serves the gateway on plain workerd, the production runtime for self-hosting
// (docs/self-hosting.md). It bundles the Worker (scripts/lib/worker-bundle.mjs), writes a workerd
// config into the data directory (scripts/lib/workerd-config.mjs: Durable Objects in SQLite on
// local disk, one disk service per disk node, S3 nodes over the network, the console on a listener
// of its own) and runs `workerd serve` on the configured address. Nothing stands between clients
// and workerd. The console has its own origin (the console port, default port + 1): no stored
// object is ever served there (docs/console.md).
//
// With `--processes N` (config "processes"), N workerd processes serve the listen address: this
// script opens the listening socket and hands it to each (`--socket-fd`), the kernel gives each
// connection to one of them. The first, the home process, hosts the Durable Objects and the
// console; the others reach the Durable Objects through it over HTTP on a Unix socket in the
// data directory (worker/src/meta/remote.ts), and start taking connections once that socket exists.
// One gateway per data directory: a second start on it is refused (DATA/serve.pid).
//
//   node scripts/serve.mjs [--config shardgate.json] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--processes N] [--quiet]
//
// Flags override the file key by key (--port changes only the port of "listen"). A configuration
// that cannot be served (an unknown key or flag, a value of the wrong type, a bad Worker variable:
// scripts/lib/shardgate-config.mjs, scripts/lib/worker-vars.mjs) stops it before workerd starts,
// with one line on stderr and exit status 1.
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, portAvailable } from "./lib/free-port.mjs";
import { consoleOriginsFor, masterKey, printBanner, restrictDirectories, waitHealthy } from "./lib/serving.mjs";
import { loadShardgateConfig, parseFlags } from "./lib/shardgate-config.mjs";
import { workerBundle } from "./lib/worker-bundle.mjs";
import { checkVars } from "./lib/worker-vars.mjs";
import { workerdConfig, workerVars } from "./lib/workerd-config.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Until the gateway is up, any failure (a bad flag or file, a data directory that cannot be made) is one line, no stack trace. */
const startupFailure = (e) => {
  console.error(`shardgate: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
  process.exit(1);
};
process.on("uncaughtException", startupFailure);
process.on("unhandledRejection", startupFailure);

const { values: opts } = parseFlags(process.argv.slice(2), {
  config: { type: "string" },
  ip: { type: "string" },
  port: { type: "string" },
  "console-port": { type: "string" },
  "data-dir": { type: "string" },
  processes: { type: "string" },
  quiet: { type: "boolean", default: false },
  help: { type: "boolean", default: false },
});
if (opts.help) {
  console.log(
    "usage: node scripts/serve.mjs [--config shardgate.json] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--processes N] [--quiet]",
  );
  process.exit(0);
}

// Everything the gateway writes (metadata, shard files on disk nodes, its config, the master key)
// is its owner's alone: files 0600, directories 0700, workerd's included (it inherits the umask).
process.umask(0o077);

const config = loadShardgateConfig({
  root,
  file: opts.config,
  overrides: { dataDir: opts["data-dir"], ip: opts.ip, port: opts.port, consolePort: opts["console-port"], processes: opts.processes },
});
// Port + 1 by default; when that one is taken (and none was asked for), the next free port.
let consolePort = config.consolePort;
if (!config.consolePortSet && !(await portAvailable(config.ip, consolePort))) {
  consolePort = await freePort(config.ip);
  if (!opts.quiet) console.error(`shardgate: port ${config.consolePort} is taken: the console is served on port ${consolePort}`);
}
// The gateway answers CORS for the console's origins (never "*"), unless shardgate.json's vars name them.
const consoleVars = { SHARDGATE_CONSOLE_ORIGIN: consoleOriginsFor(config.ip, consolePort, config.tls ? "https" : "http").join(","), ...config.vars };
const { unstable_readConfig } = await import("wrangler");
const wrangler = unstable_readConfig({ config: join(root, "wrangler.toml") }, { hideWarnings: true });
// What the Worker will be given, checked as the Worker checks it (worker/src/config.ts): a bad
// variable stops here, not at the first request.
// (The master key is made only after this: a refused start writes nothing.)
const varProblems = checkVars(workerVars(wrangler, { ...config, masterKey: config.masterKey ?? "made at first start".padEnd(64, "."), vars: consoleVars }));
if (varProblems.length) startupFailure(new Error(`Worker variables: ${varProblems.join("; ")}`));
config.masterKey ??= masterKey(config.dataDir);

const diskPaths = config.nodes.filter((n) => n.type === "disk").map((n) => n.path);
for (const dir of [join(config.dataDir, "meta"), ...diskPaths]) mkdirSync(dir, { recursive: true });
// What an earlier version made before the umask above: the metadata whole, the node directories.
restrictDirectories([config.dataDir, join(config.dataDir, "nodes"), ...diskPaths], [join(config.dataDir, "meta")]);
lockDataDir(config.dataDir);
const host = config.ip.includes(":") ? `[${config.ip}]` : config.ip;
const address = `${host}:${config.port}`;
const split = config.processes > 1;
const metaSocket = join(config.dataDir, "meta.sock");
if (split && Buffer.byteLength(metaSocket) > 100) {
  console.error(`shardgate: --processes needs a shorter data directory path (the Unix socket ${metaSocket} is too long)`);
  process.exit(1);
}
const bundle = workerBundle(root);
/** Writes the config of the home process ("home"; "single" without --processes) or of the others ("front"). */
const writeConfig = (role) => {
  const file = join(config.dataDir, role === "front" ? "workerd-front.capnp" : "workerd.capnp");
  writeFileSync(
    file,
    workerdConfig({
      wrangler,
      config: { ...config, vars: consoleVars },
      bundle,
      configDir: config.dataDir,
      assetsDir: wrangler.assets?.directory ? resolve(root, wrangler.assets.directory) : null,
      assetsWorker: join(root, "scripts/workerd/console-assets.js"),
      address,
      consoleAddress: `${host}:${consolePort}`,
      consoleConfig: { gatewayPort: config.port, gateway: config.vars.SHARDGATE_GATEWAY_URL, region: config.region },
      split: role === "single" ? undefined : { role, metaSocket },
    }),
    { mode: 0o600 }, // it holds the credentials
  );
  chmodSync(file, 0o600);
  return file;
};
const workerdBin = join(root, "node_modules/workerd/bin/workerd");

let stopping = false;
/** @type {import("node:child_process").ChildProcess[]} */
const children = [];
const shutdown = () => {
  stopping = true;
  for (const child of children) child.kill("SIGTERM");
  setTimeout(() => process.exit(0), 3000).unref();
};
const watch = (child) => {
  children.push(child);
  child.on("exit", (code, signal) => {
    if (stopping) {
      if (children.every((c) => c.exitCode !== null || c.signalCode !== null)) process.exit(0);
      return;
    }
    // One process gone ends them all: a gateway serving part of its connections is not one to keep.
    console.error(`shardgate: workerd exited (${signal ?? code})`);
    for (const other of children) if (other !== child) other.kill("SIGTERM");
    process.exit(code ?? 1);
  });
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);

if (!split) {
  watch(spawn(workerdBin, ["serve", writeConfig("single"), "--experimental"], { cwd: config.dataDir, stdio: ["ignore", "inherit", "inherit"] }));
} else {
  const home = writeConfig("home");
  const front = writeConfig("front");
  rmSync(metaSocket, { force: true });
  // The listening socket, opened here and handed to every process as its fd 3. Everything below
  // runs within the 'listening' callback, before this process's event loop could accept a
  // connection; then this process closes its copy and the workerd processes alone accept.
  const listener = createServer();
  listener.on("error", (e) => {
    console.error(`shardgate: cannot listen on ${address}: ${e.message}`);
    process.exit(1);
  });
  listener.listen({ host: config.ip, port: config.port, backlog: 4096 }, () => {
    const fd = /** @type {any} */ (listener)._handle.fd;
    const stdio = /** @type {const} */ (["ignore", "inherit", "inherit", fd]);
    watch(spawn(workerdBin, ["serve", home, "--experimental", "--socket-fd", "http=3"], { cwd: config.dataDir, stdio }));
    // The others wait for the home process's metadata socket before they take connections (at
    // most 60 s: then the wait fails, and with it the whole gateway).
    const wait = `i=0; while [ ! -S "$1" ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 1; sleep 0.05; done; shift; exec "$@"`;
    for (let i = 1; i < config.processes; i++)
      watch(
        spawn("/bin/sh", ["-c", wait, "sh", metaSocket, workerdBin, "serve", front, "--experimental", "--socket-fd", "http=3"], { cwd: config.dataDir, stdio }),
      );
    listener.close();
  });
}
const gone = () => children.some((c) => c.exitCode !== null);

// A wildcard address is reached on loopback.
const local = `${config.tls ? "https" : "http"}://${config.ip === "0.0.0.0" ? "127.0.0.1" : config.ip === "::" ? "[::1]" : host}:${config.port}`;
if (!(await waitHealthy(`${local}/_shardgate/health`, { timeoutMs: 60_000, gone }))) {
  console.error("shardgate: workerd did not come up within 60 s");
  shutdown();
} else {
  process.off("uncaughtException", startupFailure);
  process.off("unhandledRejection", startupFailure);
  if (!opts.quiet) {
    const consoleBase = `${local.slice(0, local.lastIndexOf(":"))}:${consolePort}`;
    const runtime = split ? `plain workerd, ${config.processes} processes` : "plain workerd";
    printBanner({
      base: local,
      port: config.port,
      credentials: config.credentials,
      credentialsFrom: config.credentialsFrom,
      region: config.region,
      runtime,
      dataDir: config.dataDir,
      consoleBase,
    });
  }
}

/**
 * Makes this the one gateway serving `dir`: two on the same metadata would each believe they own
 * its Durable Objects (and, with --processes, its metadata socket). DATA/serve.pid names the one
 * that serves it; one left by a gateway that is gone (kill -9) is taken over.
 * @param {string} dir
 */
function lockDataDir(dir) {
  const file = join(dir, "serve.pid");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
      process.on("exit", () => {
        try {
          if (readFileSync(file, "utf8").trim() === String(process.pid)) rmSync(file, { force: true });
        } catch {
          // gone with its directory
        }
      });
      return;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    const pid = Number(readFileSync(file, "utf8").trim());
    if (serving(pid)) {
      console.error(`shardgate: another gateway (pid ${pid}) serves ${dir}: stop it first, or use another --data-dir`);
      process.exit(1);
    }
    rmSync(file, { force: true });
  }
  console.error(`shardgate: could not take ${file}: another gateway is starting on ${dir}`);
  process.exit(1);
}

/** Whether `pid` is a running scripts/serve.mjs (not a process that took a dead gateway's pid). */
function serving(pid) {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("serve.mjs");
  } catch {
    // no /proc (not Linux): whether it runs at all
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}
