// `npm run build:binary`: the gateway as one executable file (docs/binary.md), dist/shardgate by default.
// It is a Node single executable application (the Node that runs this script, with its launcher
// injected by postject) holding:
//   - scripts/binary/launcher.mjs and what it imports (the same serving code as `npm start`, and the
//     admin CLI), bundled into one CommonJS file with esbuild;
//   - workerd from node_modules, gzipped (its sha256 is checked when it is unpacked);
//   - the Worker as wrangler bundles it for `npm start` (scripts/lib/worker-bundle.mjs);
//   - the console (web/dist) and its small Worker (scripts/workerd/console-assets.js);
//   - the block cache's store, a small Worker too (scripts/workerd/block-cache.js);
//   - what wrangler.toml says (compatibility date and flags, Durable Objects, vars).
// Building needs the development dependencies (postject); the file it makes needs only glibc.
//
//   node scripts/build-binary.mjs [--out FILE]
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { workerBundle } from "./lib/worker-bundle.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const { values: opts } = parseArgs({ options: { out: { type: "string", default: join(root, "dist/shardgate") } } });
const out = resolve(opts.out);
const work = `${out}.parts-${process.pid}`; // beside the output: builds to different files never meet
rmSync(work, { recursive: true, force: true });
mkdirSync(work, { recursive: true });
const started = Date.now();
const say = (what) => console.error(`build:binary: ${what} (${((Date.now() - started) / 1000).toFixed(1)} s)`);

// 1. The parts: the Worker, the console, workerd, wrangler's config.
const { unstable_readConfig } = await import("wrangler");
const wrangler = unstable_readConfig({ config: join(root, "wrangler.toml") }, { hideWarnings: true });
const bundle = workerBundle(root);
const consoleDir = wrangler.assets?.directory ? resolve(root, wrangler.assets.directory) : null;
if (consoleDir && !existsSync(join(consoleDir, "index.html")))
  throw new Error(`${consoleDir} has no index.html: build the console first (bash scripts/setup.sh)`);
const consoleFiles = consoleDir ? [...walk(consoleDir)].map((f) => relative(consoleDir, f)).sort() : null;
const workerd = readFileSync(join(root, "node_modules/workerd/bin/workerd"));
const workerdGz = join(work, "workerd.gz");
writeFileSync(workerdGz, gzipSync(workerd, { level: 6 }));
say(`workerd gzipped: ${mib(workerd.length)} → ${mib(statSync(workerdGz).size)}`);

/** @type {Record<string, string>} asset name → file */
const assets = {
  "workerd.gz": workerdGz,
  "console-assets.js": join(root, "scripts/workerd/console-assets.js"),
  "block-cache.js": join(root, "scripts/workerd/block-cache.js"),
};
for (const m of bundle.modules) assets[`worker/${m.name}`] = join(bundle.dir, m.name);
for (const f of consoleFiles ?? []) assets[`console/${f}`] = join(consoleDir, f);
const hash = createHash("sha256");
for (const name of Object.keys(assets).sort()) hash.update(name).update("\0").update(readFileSync(assets[name])).update("\0");
const { compatibility_date, compatibility_flags, migrations, durable_objects, vars } = wrangler;
const manifest = {
  version: JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version,
  hash: hash.digest("hex"),
  workerdSha256: createHash("sha256").update(workerd).digest("hex"),
  workerdSize: workerd.length,
  wrangler: { compatibility_date, compatibility_flags, migrations, durable_objects, vars, assets: consoleDir ? { directory: "console" } : undefined },
  worker: bundle.modules,
  console: consoleFiles,
};
assets["manifest.json"] = join(work, "manifest.json");
writeFileSync(assets["manifest.json"], JSON.stringify(manifest));

// 2. The launcher in one CommonJS file (a single executable application's main script can require built-in modules only).
const esbuild = await import("esbuild");
await esbuild.build({
  entryPoints: [join(root, "scripts/binary/launcher.mjs")],
  outfile: join(work, "launcher.cjs"),
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node22",
  logLevel: "warning",
});
say("launcher bundled");

// 3. The blob, injected into a copy of this Node.
const seaConfig = join(work, "sea-config.json");
const blob = join(work, "sea.blob");
writeFileSync(seaConfig, JSON.stringify({ main: join(work, "launcher.cjs"), output: blob, disableExperimentalSEAWarning: true, useCodeCache: false, assets }));
execFileSync(process.execPath, ["--experimental-sea-config", seaConfig], { stdio: ["ignore", "ignore", "inherit"] });
mkdirSync(dirname(out), { recursive: true });
rmSync(out, { force: true });
copyFileSync(process.execPath, out);
chmodSync(out, 0o755);
const postject = join(root, "node_modules/postject/dist/cli.js");
if (!existsSync(postject)) throw new Error("postject is missing: run `bash scripts/setup-test.sh` (or SHARDGATE_DEV_DEPS=1 bash scripts/setup.sh) first");
execFileSync(process.execPath, [postject, out, "NODE_SEA_BLOB", blob, "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"], {
  stdio: ["ignore", "ignore", "pipe"],
});
rmSync(work, { recursive: true, force: true });
say(`${out}: ${mib(statSync(out).size)}, build ${manifest.hash.slice(0, 12)}`);

function* walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}

function mib(bytes) {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
