// The entry of the one-file binary (`npm run build:binary`, scripts/build-binary.mjs; docs/binary.md):
// Node's single executable application, holding this launcher (bundled with esbuild), workerd
// (gzipped), the Worker bundle, the console's files and what wrangler.toml says. It needs nothing
// else on the machine than glibc.
//
//   shardgate [serve] [--config shardgate.json] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--processes N] [--quiet]
//   shardgate COMMAND …    the admin CLI (bin/shardgate.mjs: status, key, bucket, node, heal, …)
//
// Serving is what `npm start` does (scripts/lib/serve-gateway.mjs), with the same flags and the same
// shardgate.json, relative paths resolved from the working directory. The runtime's parts are
// unpacked once per build into DATA/runtime/<build hash>/ (workerd, the Worker, the console), and
// other builds' parts there are removed: the data directory is the only place it writes (unpack).
import { createHash } from "node:crypto";
import { closeSync, existsSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import { getAsset, getRawAsset } from "node:sea";
import { gunzipSync } from "node:zlib";
import { main as cli, nearFlag } from "../../bin/lib/cli.mjs";
import { untrustedPath } from "../lib/private-path.mjs";
import { serveGateway } from "../lib/serve-gateway.mjs";

/**
 * What scripts/build-binary.mjs put in the binary besides the parts: the build's hash, wrangler's
 * config (the fields the workerd config reads), the Worker's modules and the console's files.
 * @typedef {{ hash: string, workerdSha256: string, workerdSize: number, version: string, wrangler: object, worker: { name: string, type: "esModule" | "wasm" }[], console: string[] | null }} Manifest
 */
/** @type {Manifest} */
const manifest = JSON.parse(getAsset("manifest.json", "utf8"));

/** The serve flags: a command line that starts with one of them (or is empty) serves. */
const SERVE_FLAGS = ["--config", "--ip", "--port", "--console-port", "--data-dir", "--processes", "--quiet"];
/** A first word that is a flag of neither the commands nor serving but near a serve flag (`--prot`): serving's own check names the flag. */
const mistypedServeFlag = (first) => nearFlag(first, SERVE_FLAGS) !== null;
const serves = (first) =>
  first === undefined || first === "serve" || SERVE_FLAGS.some((f) => first === f || first.startsWith(`${f}=`)) || mistypedServeFlag(first);

/** Serves, or runs an admin command: what the command line asks for. */
async function run(argv) {
  if (argv[0] === "--version") {
    console.log(`shardgate ${manifest.version} (build ${manifest.hash.slice(0, 12)})`);
    return 0;
  }
  if (argv.length === 1 && (argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help")) {
    console.log(
      `shardgate ${manifest.version}: an S3-compatible object gateway in one file (docs/binary.md).\n\n` +
        "Serve:  shardgate [serve] [--config shardgate.json] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--processes N] [--quiet]\n" +
        "Admin:  shardgate COMMAND … (below)\n",
    );
    return cli(["help"]);
  }
  if (serves(argv[0])) {
    await serveGateway(argv[0] === "serve" ? argv.slice(1) : argv, {
      command: "shardgate serve",
      cli: process.execPath,
      base: process.cwd(),
      runtime: "plain workerd, one-file binary",
      wrangler: async () => manifest.wrangler,
      parts: unpack,
    });
    return undefined; // serving: the process ends with workerd
  }
  // A closed pipe (`shardgate key list | head -1`) ends the CLI quietly.
  process.stdout.on("error", (e) => process.exit(/** @type {NodeJS.ErrnoException} */ (e).code === "EPIPE" ? 0 : 1));
  return cli(argv);
}

run(process.argv.slice(2)).then(
  (status) => status !== undefined && process.exit(status),
  (e) => {
    console.error(`shardgate: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);

/**
 * The runtime's parts in DATA/runtime/<hash>/, unpacked at the first start of this build (into a
 * fresh directory, every file and directory synced, then renamed into place: a start killed
 * half-way leaves nothing that looks complete). What is run from there must be this process's own
 * doing: the data directory, runtime/ and the build's directory are real directories of this user
 * that nobody else may write (nor any directory above them: ownDirectory), and workerd has the size
 * this build unpacks; otherwise it is made again. Runs once the data directory is locked (scripts/lib/serve-gateway.mjs).
 * @param {string} dataDir @returns {import("../lib/serve-gateway.mjs").RuntimeParts}
 */
function unpack(dataDir) {
  const runtimes = join(dataDir, "runtime");
  const dir = join(runtimes, manifest.hash);
  const parts = {
    bundle: { dir: join(dir, "worker"), modules: manifest.worker },
    assetsDir: manifest.console ? join(dir, "console") : null,
    assetsWorker: join(dir, "console-assets.js"),
    cacheWorker: join(dir, "block-cache.js"),
    workerdBin: join(dir, "workerd"),
  };
  ownDirectory(dataDir);
  mkdirSync(runtimes, { recursive: true, mode: 0o700 });
  ownDirectory(runtimes);
  if (unpacked(dir)) return parts;
  // Another build's parts, and what a start killed half-way left: only directories named as this makes them.
  for (const entry of readdirSync(runtimes, { withFileTypes: true }))
    if (entry.isDirectory() && /^[0-9a-f]{64}(\.tmp-[0-9]+)?$/.test(entry.name)) rmSync(join(runtimes, entry.name), { recursive: true, force: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  const put = (path, bytes, mode = 0o600) => {
    mkdirSync(dirname(join(tmp, path)), { recursive: true, mode: 0o700 });
    const fd = openSync(join(tmp, path), "wx", mode);
    writeSync(fd, bytes);
    fsyncSync(fd);
    closeSync(fd);
  };
  const workerd = gunzipSync(new Uint8Array(getRawAsset("workerd.gz")));
  if (createHash("sha256").update(workerd).digest("hex") !== manifest.workerdSha256) throw new Error("the binary's workerd is damaged (sha256 differs)");
  put("workerd", workerd, 0o700);
  for (const m of manifest.worker) put(`worker/${m.name}`, new Uint8Array(getRawAsset(`worker/${m.name}`)));
  for (const path of manifest.console ?? []) put(`console/${path}`, new Uint8Array(getRawAsset(`console/${path}`)));
  put("console-assets.js", new Uint8Array(getRawAsset("console-assets.js")));
  put("block-cache.js", new Uint8Array(getRawAsset("block-cache.js")));
  put(".complete", `${manifest.hash}\n`);
  for (const d of [join(tmp, "worker"), join(tmp, "console"), tmp]) if (existsSync(d)) syncDirectory(d);
  renameSync(tmp, dir);
  syncDirectory(runtimes);
  return parts;
}

/** Whether `dir` holds this build's parts, whole and this user's; a directory that does not is removed. */
function unpacked(dir) {
  if (!existsSync(dir)) return false;
  try {
    ownDirectory(dir);
    const workerd = lstatSync(join(dir, "workerd"));
    const mine = workerd.isFile() && workerd.uid === process.getuid?.() && (workerd.mode & 0o022) === 0;
    if (mine && workerd.size === manifest.workerdSize && existsSync(join(dir, ".complete"))) return true;
  } catch {
    // not whole: made again below
  }
  rmSync(dir, { recursive: true, force: true });
  return false;
}

/**
 * Refuses a path that is not a real directory of this user, or that others may write, itself or
 * through any directory above it (scripts/lib/private-path.mjs): the binary runs workerd from it.
 */
function ownDirectory(path) {
  const st = lstatSync(path);
  if (!st.isDirectory() || st.uid !== process.getuid?.())
    throw new Error(`${path} must be a directory of this user that nobody else may write (not a symbolic link): the binary runs workerd from it`);
  const refusal = untrustedPath(path, "runtime directory", { parents: true });
  if (refusal) throw new Error(refusal);
}

function syncDirectory(path) {
  const fd = openSync(path, "r");
  fsyncSync(fd);
  closeSync(fd);
}
