// Builds @shardgate/client into dist/ (`npm run build` here; `npm pack` runs it first):
//   dist/index.js                ESM, client/src and the shared module it imports (worker/src/shared)
//                                bundled; aws4fetch, the one dependency, left to the caller's install
//   dist/shardgate_core_bg.wasm  the core (core/pkg, committed), loaded by index.js from next to itself
//   dist/types/…                 declarations of client/src, worker/src/shared and core/pkg's bindings,
//                                in the repository's layout: entry dist/types/client/src/index.d.ts
// With esbuild and TypeScript at the versions this package's devDependencies declare: the
// repository's (`npm test` installs them), else, after `npm start` (which installs only what
// serving needs), installed once from the registry into client/node_modules, where TypeScript
// finds the declared types too. A build that fails leaves no dist/ behind.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const core = join(here, "../core/pkg");
const dist = join(here, "dist");
const WASM = "shardgate_core_bg.wasm";
const declared = JSON.parse(readFileSync(join(here, "package.json"), "utf8")).devDependencies;

/** A require() that finds the build tools at their declared versions (see above). */
function tools() {
  const ours = createRequire(import.meta.url);
  const at = (req, name) => {
    try {
      return JSON.parse(readFileSync(req.resolve(`${name}/package.json`), "utf8")).version;
    } catch {
      return null;
    }
  };
  const specs = Object.entries(declared).map(([name, version]) => `${name}@${version}`);
  if (Object.entries(declared).every(([name, version]) => at(ours, name) === version)) return ours;
  const theirs = createRequire(join(here, "node_modules", "index.js"));
  if (!Object.entries(declared).every(([name, version]) => at(theirs, name) === version)) {
    console.error(`client: installing its build tools into client/node_modules (${specs.join(", ")})`);
    const npm = process.platform === "win32" ? "npm.cmd" : "npm";
    const args = ["install", "--prefix", here, "--workspaces=false", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error", ...specs];
    const installed = spawnSync(npm, args, { stdio: ["ignore", "inherit", "inherit"] });
    if (installed.status !== 0) throw new Error(`npm install of ${specs.join(" ")} exited with ${installed.status}`);
  }
  return theirs;
}

try {
  await buildPackage(tools());
} catch (e) {
  rmSync(dist, { recursive: true, force: true });
  console.error(`client: build failed: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
}

async function buildPackage(require) {
  const { build } = require("esbuild");
  rmSync(dist, { recursive: true, force: true });
  await build({
    entryPoints: [join(here, "src/index.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    external: ["aws4fetch"],
    outfile: join(dist, "index.js"),
    legalComments: "none",
    logLevel: "warning",
  });

  // The core's URL, relative to the source in the repository, becomes relative to dist/index.js.
  const js = join(dist, "index.js");
  const source = readFileSync(js, "utf8");
  const fromSource = `new URL("../../core/pkg/${WASM}", import.meta.url)`;
  if (source.split(fromSource).length !== 2) throw new Error(`expected ${fromSource} once in ${js}`);
  writeFileSync(js, source.replace(fromSource, `new URL("./${WASM}", import.meta.url)`));
  copyFileSync(join(core, WASM), join(dist, WASM));

  const tsc = require.resolve("typescript/bin/tsc");
  const emitted = spawnSync(process.execPath, [tsc, "-p", join(here, "tsconfig.build.json")], { stdio: "inherit" });
  if (emitted.status !== 0) throw new Error(`tsc exited with ${emitted.status}`);
  const types = join(dist, "types");
  mkdirSync(join(types, "core/pkg"), { recursive: true });
  // The bindings' classes are Disposable (`[Symbol.dispose]()`, TypeScript's "esnext.disposable"
  // lib): left out of the types, so that callers need no newer lib than ES2022 (they still have it).
  const bindings = readFileSync(join(core, "shardgate_core.d.ts"), "utf8");
  const disposable = /^ *\[Symbol\.dispose\]\(\): void;\n/gm;
  if (!disposable.test(bindings)) throw new Error("expected [Symbol.dispose]() in core/pkg/shardgate_core.d.ts");
  writeFileSync(join(types, "core/pkg/shardgate_core.d.ts"), bindings.replace(disposable, ""));

  // Relative imports name their file (./client.js), as Node's ESM resolution (TypeScript's
  // "nodenext") wants; bundler resolution accepts either.
  const files = (dir) => readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? files(join(dir, name)) : [join(dir, name)]));
  for (const file of files(types).filter((f) => f.endsWith(".d.ts"))) {
    const text = readFileSync(file, "utf8");
    const fixed = text.replace(/(from\s+|import\()(["'])(\.{1,2}\/[^"']+)\2/g, (all, head, quote, spec) => {
      if (spec.endsWith(".js")) return all;
      const target = join(dirname(file), spec);
      const found = [".d.ts", "/index.d.ts"].find((ext) => {
        try {
          return statSync(target + ext).isFile();
        } catch {
          return false;
        }
      });
      if (!found) throw new Error(`${relative(here, file)}: ${spec} names no declaration file`);
      return `${head}${quote}${spec}${found === ".d.ts" ? ".js" : "/index.js"}${quote}`;
    });
    if (fixed !== text) writeFileSync(file, fixed);
  }

  for (const file of files(dist)) console.log(`${relative(here, file).padEnd(48)} ${statSync(file).size} bytes`);
}
