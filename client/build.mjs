// Builds @shardgate/client into dist/ (`npm run build` here; `npm pack` runs it first):
//   dist/index.js                ESM, client/src and the shared module it imports (worker/src/shared)
//                                bundled; aws4fetch, the one dependency, left to the caller's install
//   dist/shardgate_core_bg.wasm  the core (core/pkg, committed), loaded by index.js from next to itself
//   dist/types/…                 declarations of client/src, worker/src/shared and core/pkg's bindings,
//                                in the repository's layout: entry dist/types/client/src/index.d.ts
// With esbuild and TypeScript from the repository's node_modules.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const core = join(here, "../core/pkg");
const dist = join(here, "dist");
const WASM = "shardgate_core_bg.wasm";

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

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
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
