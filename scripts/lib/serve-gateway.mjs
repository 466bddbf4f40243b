// Serving the gateway on plain workerd: what `npm start` (scripts/serve.mjs) and the one-file binary
// (scripts/binary/launcher.mjs, `npm run build:binary`) both run, with the same flags and the same
// shardgate.json. They differ only in where the runtime's parts come from (a ServingRuntime): the
// repository (wrangler bundles the Worker, vite built the console, workerd from node_modules) or the
// binary itself (the parts built into it, unpacked into the data directory).
//
// It writes a workerd config into the data directory (scripts/lib/workerd-config.mjs: Durable
// Objects in SQLite on local disk, one disk service per disk node, S3 nodes over the network, the
// console on a listener of its own) and runs `workerd serve` on the configured address. Nothing
// stands between clients and workerd. The console has its own origin (the console port, default
// port + 1): no stored object is ever served there (docs/console.md).
//
// With `--processes N` (config "processes"), N workerd processes serve the listen address: this
// opens the listening socket and hands it to each (`--socket-fd`), the kernel gives each
// connection to one of them. The first, the home process, hosts the Durable Objects and the
// console; the others reach the Durable Objects through it over HTTP on a Unix socket in the
// data directory (worker/src/meta/remote.ts), and start taking connections once that socket exists.
// One gateway per data directory: DATA/serve.lock is locked (flock) before anything there is
// touched, and a second start on it is refused. The workerd processes end with this one, however
// it ends (kill -9 included: `setpriv --pdeathsig`, where the system has it), so a restart finds
// the port free; they hold the lock too until they are gone.
//
// Flags override the file key by key (--port changes only the port of "listen"). A configuration
// that cannot be served (an unknown key or flag, a value of the wrong type, a bad Worker variable:
// scripts/lib/shardgate-config.mjs, scripts/lib/worker-vars.mjs) stops it before workerd starts,
// with one line on stderr and exit status 1.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { ENDPOINT_FILE } from "../../bin/lib/local-key.mjs";
import { freePort, portAvailable } from "./free-port.mjs";
import { consoleOriginsFor, masterKey, ownDataDir, printBanner, publicKeyRefusal, ROOT_KEY_ID, restrictDirectories, rootKey, waitHealthy } from "./serving.mjs";
import { loadShardgateConfig, parseFlags } from "./shardgate-config.mjs";
import { checkVars } from "./worker-vars.mjs";
import { workerdConfig, workerVars } from "./workerd-config.mjs";

/**
 * @typedef {{ dir: string, modules: { name: string, type: "esModule" | "wasm" }[] }} WorkerBundle
 * @typedef {{ bundle: WorkerBundle, assetsDir: string | null, assetsWorker: string, cacheWorker: string, workerdBin: string }} RuntimeParts
 * @typedef {object} ServingRuntime
 * @property {string} command   how the usage line names the command
 * @property {string} cli       how the banner names the CLI (`npx shardgate`, the binary's path)
 * @property {string} base      where relative paths (shardgate.json, .shardgate) resolve: the repository for npm start, the working directory for the binary
 * @property {string} runtime   how the banner names what serves
 * @property {() => Promise<object>} wrangler  wrangler's parsed config (the fields workerdConfig reads)
 * @property {(dataDir: string) => RuntimeParts} parts  the Worker bundle, the console's files and workerd, ready to use
 */

const FLAGS = {
  config: { type: "string" },
  ip: { type: "string" },
  port: { type: "string" },
  "console-port": { type: "string" },
  "data-dir": { type: "string" },
  processes: { type: "string" },
  quiet: { type: "boolean", default: false },
  help: { type: "boolean", default: false },
};
const USAGE = `[--config FILE] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--processes N] [--quiet]

  --config FILE         shardgate.json to read (default: shardgate.json here, if present; docs/self-hosting.md)
  --ip IP               the address to listen on (default 127.0.0.1)
  --port PORT           the S3 endpoint's port (default 8787)
  --console-port PORT   the web console's port (default: the S3 port + 1, or the next free one)
  --data-dir DIR        metadata, disk nodes and keys (default .shardgate)
  --processes N         workerd processes on the port (default 1)
  --quiet               print no banner
Stop it with Ctrl-C, or SIGTERM to this process: it stops everything it started.`;

/** Until the gateway is up, any failure (a bad flag or file, a data directory that cannot be made) is one line, no stack trace. */
const startupFailure = (e) => {
  console.error(`shardgate: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
  process.exit(1);
};

/**
 * Serves the gateway until a signal ends it.
 * @param {string[]} argv the flags @param {ServingRuntime} runtime
 */
export async function serveGateway(argv, runtime) {
  process.on("uncaughtException", startupFailure);
  process.on("unhandledRejection", startupFailure);
  const { values: opts } = parseFlags(argv, FLAGS);
  if (opts.help) {
    console.log(`usage: ${runtime.command} ${USAGE}`);
    process.exit(0);
  }
  // Everything the gateway writes (metadata, shard files on disk nodes, its config, the master key)
  // is its owner's alone: files 0600, directories 0700, workerd's included (it inherits the umask).
  process.umask(0o077);
  const config = loadShardgateConfig({
    root: runtime.base,
    file: opts.config,
    overrides: { dataDir: opts["data-dir"], ip: opts.ip, port: opts.port, consolePort: opts["console-port"], processes: opts.processes },
  });
  const consolePort = await chooseConsolePort(config, opts.quiet);
  // The gateway answers CORS for the console's origins (never "*"), unless shardgate.json's vars name them.
  const consoleVars = { SHARDGATE_CONSOLE_ORIGIN: consoleOriginsFor(config.ip, consolePort, config.tls ? "https" : "http").join(","), ...config.vars };
  const wrangler = await runtime.wrangler();
  // What the Worker will be given, checked as the Worker checks it (worker/src/config.ts): a bad
  // variable stops here, not at the first request. (The master key and the root key are made only
  // after this: a refused start writes nothing.)
  const unmade = {
    masterKey: config.masterKey ?? "made at first start".padEnd(64, "."),
    credentials: config.credentials ?? { accessKeyId: ROOT_KEY_ID, secretAccessKey: "made at first start" },
  };
  const varProblems = checkVars(workerVars(wrangler, { ...config, ...unmade, vars: consoleVars }));
  if (varProblems.length) startupFailure(new Error(`Worker variables: ${varProblems.join("; ")}`));
  config.vars = consoleVars;

  const lock = prepareDataDir(config);
  config.masterKey ??= masterKey(config.dataDir);
  // No root key configured: the one this data directory keeps, made now at its first start (once it
  // is ours: locked). A kept one edited to the public secret is refused as a configured one is.
  config.credentials ??= rootKey(config.dataDir);
  const keptRefusal = publicKeyRefusal([config.ip], config.credentials);
  if (keptRefusal) startupFailure(new Error(keptRefusal));
  const host = config.ip.includes(":") ? `[${config.ip}]` : config.ip;
  const metaSocket = join(config.dataDir, "meta.sock");
  const longest = config.cacheMiB > 0 ? join(config.dataDir, "cache.sock") : metaSocket;
  if (config.processes > 1 && Buffer.byteLength(longest) > 100)
    startupFailure(new Error(`--processes needs a shorter data directory path (the Unix socket ${longest} is too long)`));
  const parts = runtime.parts(config.dataDir);
  const writeConfig = configWriter({ config, wrangler, parts, host, consolePort, metaSocket });
  const gone = startWorkerd({ config, host, metaSocket, workerdBin: parts.workerdBin, writeConfig, lock });
  await announce({
    config,
    host,
    consolePort,
    runtime: config.processes > 1 ? `${runtime.runtime}, ${config.processes} processes` : runtime.runtime,
    cliCommand: runtime.cli,
    quiet: opts.quiet,
    gone,
  });
}

/**
 * Makes the data directory, takes it (lockDataDir), then makes its metadata and node directories
 * (owner only). @returns the lock's descriptor, for the workerd processes to hold too
 */
function prepareDataDir(config) {
  try {
    ownDataDir(config.dataDir);
  } catch (e) {
    startupFailure(e);
  }
  const lock = lockDataDir(config.dataDir);
  const diskPaths = config.nodes.filter((n) => n.type === "disk").map((n) => n.path);
  const cache = config.cacheMiB > 0 ? [join(config.dataDir, "cache")] : [];
  for (const dir of [join(config.dataDir, "meta"), ...cache, ...diskPaths]) mkdirSync(dir, { recursive: true });
  // What an earlier version made before the umask above: the metadata whole, the node directories.
  restrictDirectories([config.dataDir, join(config.dataDir, "nodes"), ...diskPaths, ...cache], [join(config.dataDir, "meta")]);
  return lock;
}

/**
 * What writes the workerd config of the home process ("home"; "single" without --processes) or of
 * the others ("front") into the data directory, and answers its path.
 * @returns {(role: "single" | "home" | "front") => string}
 */
function configWriter({ config, wrangler, parts, host, consolePort, metaSocket }) {
  return (role) => {
    const file = join(config.dataDir, role === "front" ? "workerd-front.capnp" : "workerd.capnp");
    const consoleConfig = { gatewayPort: config.port, gateway: config.vars.SHARDGATE_GATEWAY_URL, region: config.region };
    const split = role === "single" ? undefined : { role, metaSocket, cacheSocket: join(config.dataDir, "cache.sock") };
    const { bundle, assetsDir, assetsWorker, cacheWorker } = parts;
    const address = `${host}:${config.port}`;
    const consoleAddress = `${host}:${consolePort}`;
    const text = workerdConfig({
      wrangler,
      config,
      bundle,
      configDir: config.dataDir,
      assetsDir,
      assetsWorker,
      cacheWorker,
      address,
      consoleAddress,
      consoleConfig,
      split,
    });
    writeFileSync(file, text, { mode: 0o600 }); // it holds the credentials
    chmodSync(file, 0o600);
    return file;
  };
}

/** Port + 1 by default; when that one is taken (and none was asked for), the next free port. */
async function chooseConsolePort(config, quiet) {
  if (config.consolePortSet || (await portAvailable(config.ip, config.consolePort))) return config.consolePort;
  const port = await freePort(config.ip);
  if (!quiet) console.error(`shardgate: port ${config.consolePort} is taken: the console is served on port ${port}`);
  return port;
}

/** Waits for the gateway's health check, then prints the banner; shuts down when it never answers. */
async function announce({ config, host, consolePort, runtime, cliCommand, quiet, gone }) {
  // A wildcard address is reached on loopback.
  const local = `${config.tls ? "https" : "http"}://${config.ip === "0.0.0.0" ? "127.0.0.1" : config.ip === "::" ? "[::1]" : host}:${config.port}`;
  if (!(await waitHealthy(`${local}/_shardgate/health`, { timeoutMs: 60_000, gone }))) {
    console.error("shardgate: workerd did not come up within 60 s");
    process.kill(process.pid, "SIGTERM");
    return;
  }
  process.off("uncaughtException", startupFailure);
  process.off("unhandledRejection", startupFailure);
  // Where this gateway answers, for the CLI run from the same directory (bin/lib/local-key.mjs).
  writeFileSync(join(config.dataDir, ENDPOINT_FILE), `${local}\n`);
  if (quiet) return;
  const consoleBase = `${local.slice(0, local.lastIndexOf(":"))}:${consolePort}`;
  const { credentials, credentialsFrom, region, dataDir } = config;
  printBanner({ base: local, port: config.port, credentials, credentialsFrom, region, runtime, dataDir, consoleBase, cli: cliCommand });
}

/**
 * Starts the workerd process (or, with --processes N, N of them on one listening socket) and
 * watches them: one gone ends them all. @returns whether any has exited
 */
function startWorkerd({ config, host, metaSocket, workerdBin, writeConfig, lock }) {
  const children = watchChildren();
  if (config.processes === 1) {
    const stdio = /** @type {const} */ (["ignore", "inherit", "inherit", lock]);
    children.watch(spawnTied(workerdBin, ["serve", writeConfig("single"), "--experimental"], { cwd: config.dataDir, stdio }));
    return children.gone;
  }
  const home = writeConfig("home");
  const front = writeConfig("front");
  rmSync(metaSocket, { force: true });
  rmSync(join(config.dataDir, "cache.sock"), { force: true });
  // The listening socket, opened here and handed to every process as its fd 3. Everything below
  // runs within the 'listening' callback, before this process's event loop could accept a
  // connection; then this process closes its copy and the workerd processes alone accept.
  const listener = createServer();
  listener.on("error", (e) => startupFailure(new Error(`cannot listen on ${host}:${config.port}: ${e.message}`)));
  listener.listen({ host: config.ip, port: config.port, backlog: 4096 }, () => {
    const fd = /** @type {any} */ (listener)._handle.fd;
    const stdio = /** @type {const} */ (["ignore", "inherit", "inherit", fd, lock]);
    children.watch(spawnTied(workerdBin, ["serve", home, "--experimental", "--socket-fd", "http=3"], { cwd: config.dataDir, stdio }));
    // The others wait for the home process's metadata socket before they take connections (at
    // most 60 s: then the wait fails, and with it the whole gateway).
    const wait = `i=0; while [ ! -S "$1" ]; do i=$((i+1)); [ $i -gt 1200 ] && exit 1; sleep 0.05; done; shift; exec "$@"`;
    const args = ["-c", wait, "sh", metaSocket, workerdBin, "serve", front, "--experimental", "--socket-fd", "http=3"];
    for (let i = 1; i < config.processes; i++) children.watch(spawnTied("/bin/sh", args, { cwd: config.dataDir, stdio }));
    listener.close();
  });
  return children.gone;
}

/** The workerd processes: a signal stops them all, and one that exits on its own ends the gateway. */
function watchChildren() {
  let stopping = false;
  /** @type {import("node:child_process").ChildProcess[]} */
  const children = [];
  const shutdown = () => {
    stopping = true;
    for (const child of children) child.kill("SIGTERM");
    setTimeout(() => process.exit(0), 3000).unref();
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
  // What started this one gone (a `kill` of `npm start`, whose shell does not pass the signal on):
  // this one is orphaned, and stops as if signalled, rather than serving on with no one to stop it.
  const parent = process.ppid;
  setInterval(() => process.ppid !== parent && !stopping && shutdown(), 500).unref();
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
      process.exit(code || 1); // an exit nobody asked for is a failure, whatever its status
    });
  };
  return { watch, gone: () => children.some((c) => c.exitCode !== null) };
}

const SETPRIV = "/usr/bin/setpriv";

/**
 * Spawns a process that gets SIGTERM when this one dies, however it dies (kill -9, the OOM
 * killer): util-linux's setpriv sets the parent-death signal and execs the command, so the child
 * keeps its pid and its signals. Without setpriv (not Linux), a plain spawn.
 */
function spawnTied(command, args, options) {
  return existsSync(SETPRIV) ? spawn(SETPRIV, ["--pdeathsig", "TERM", "--", command, ...args], options) : spawn(command, args, options);
}

const FLOCK = "/usr/bin/flock";
/** How long a start waits for the lock: a gateway just killed is still stopping its workerd. */
const LOCK_WAIT_S = 10;

/**
 * Makes this the one gateway serving `dir`: two on the same metadata would each believe they own
 * its Durable Objects (and, with --processes, its metadata socket). DATA/serve.lock is locked with
 * flock(2) (util-linux's flock on a descriptor this process opened and keeps): the lock belongs to
 * that open file, which the workerd processes inherit, so it lasts while any of them runs and goes
 * with the last, however they end. No pid to trust, whoever started the gateway and however (a
 * relative path, a symlink, `npm start` or the binary). Without flock (not Linux): DATA/serve.pid.
 * @param {string} dir @returns {number | "ignore"} the descriptor the workerd processes inherit
 */
function lockDataDir(dir) {
  if (!existsSync(FLOCK)) {
    pidLock(dir);
    return "ignore";
  }
  const fd = openSync(join(dir, "serve.lock"), "a", 0o600);
  const taken = spawnSync(FLOCK, ["-w", String(LOCK_WAIT_S), "-E", "75", "3"], { stdio: ["ignore", "ignore", "inherit", fd] });
  if (taken.status === 75) startupFailure(new Error(`another gateway serves ${dir} (its serve.lock is held): stop it first, or use another --data-dir`));
  if (taken.status !== 0)
    startupFailure(new Error(`could not lock ${join(dir, "serve.lock")} (flock: ${taken.error?.message ?? taken.status ?? taken.signal})`));
  return fd;
}

/** The lock where flock is missing: DATA/serve.pid names the gateway; one left by a gateway that is gone is taken over. */
function pidLock(dir) {
  const file = join(dir, "serve.pid");
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: "wx", mode: 0o600 });
      process.on("exit", () => {
        if (existsSync(file) && readFileSync(file, "utf8").trim() === String(process.pid)) rmSync(file, { force: true });
      });
      return;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    const pid = Number(readFileSync(file, "utf8").trim());
    if (running(pid)) startupFailure(new Error(`another gateway (pid ${pid}) serves ${dir}: stop it first, or use another --data-dir`));
    rmSync(file, { force: true });
  }
  startupFailure(new Error(`could not take ${file}: another gateway is starting on ${dir}`));
}

function running(pid) {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
