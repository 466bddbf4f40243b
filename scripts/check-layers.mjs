// `node scripts/check-layers.mjs`: checks that imports in worker/src go one way (docs/architecture.md):
//
//   entry (index.ts, console.ts)
//     → api/        S3 and admin HTTP: parse, authorize, answer
//     → jobs/       background work on the scheduler's alarm: calls services, never api/
//     → services/   plain functions over typed inputs and outputs, no Request or Response
//     → config.ts   the composition root: builds the node drivers from the Worker's vars
//     → meta/ and storage/  (siblings that never import each other: metadata does no node I/O)
//     → base        core, core-api, auth/, observability/, piece-reader, buffer-pool, errors, s3-error
//
// In the console (web/src), nothing imports main.ts, its entry: what views share is in app.ts.
//
// A module may import its own layer and any layer below it; below config.ts, only `import type`
// from config.ts (the Env and GatewayConfig types), and config.ts imports only types from above;
// services/ too import only types from it (they receive the configuration, never load it).
// Within api/, the folder says what a module is: api/common/ (helpers: import only api/common/),
// api/s3/ and api/admin/ (operations: import api/common/, never another operation), api/*.ts
// (dispatchers: may import any of them).
//
// And the metadata Durable Objects are reached through meta/stubs.ts only (never env.BUCKET_INDEX
// and the like elsewhere): with `--processes N` the other processes get stand-ins from there.
//
// And docs/architecture.md names every module of worker/src: in a row of its worker table, as
// `folder/file.ts`, or as `file.ts` after the row's first name in that folder.
//
// No import circles, type-only imports included, in worker/src, web/src and client/src.
//
// Imports are every kind that names a module: `import … from`, `export … from` (re-exports),
// `import "…"`, `import("…")` and `require("…")`; a folder import resolves to its index.ts, and one
// that resolves to no module is itself a violation (tests/node/check-layers.test.ts plants each).
//
// Exit status 1 on a violation, naming each import and the rule; `--list` prints every module's
// layer and imports; `--root DIR` checks another tree shaped like worker/src (without the docs).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const rootArg = process.argv.indexOf("--root");
const ownTree = rootArg < 0;
const root = ownTree ? resolve(fileURLToPath(new URL("..", import.meta.url)), "worker/src") : resolve(process.argv[rootArg + 1]);

/** Layers from top to bottom: a module imports its own layer or one further down. */
const LAYERS = ["entry", "api", "jobs", "services", "config", "meta|storage", "base"];

function layerOf(path) {
  if (path === "index.ts" || path === "console.ts") return "entry";
  if (path === "config.ts") return "config";
  const top = path.split("/")[0];
  if (["api", "jobs", "services", "meta", "storage"].includes(top)) return top;
  return "base";
}

const rank = (layer) => LAYERS.findIndex((l) => l.split("|").includes(layer));

/**
 * api/'s rooms, from the folder: api/common/ holds what operations share (parsing, answering, the
 * request context, who may do what); api/s3/ and api/admin/ hold the operations, one file per
 * family; a module directly in api/ dispatches (the operations table, the S3 entry, the admin app).
 */
function apiRoom(path) {
  const parts = path.split("/");
  if (parts[0] !== "api") return null;
  if (parts.length === 2) return "dispatch";
  return parts[1] === "common" ? "common" : "operation";
}

function sources(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, out);
    else if (/\.ts$/.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** Relative imports of a module, of every kind: { to (relative to `base`), typeOnly }. */
function imports(file, base = root) {
  const text = code(file);
  const found = [];
  const add = (spec, typeOnly) => found.push({ to: relative(base, resolveModule(dirname(file), spec)), typeOnly });
  const statics = /^\s*(import|export)\s+(type\s+)?(?:[^;'"]*?\s+from\s+)?["'](\.[^"']+)["']/gms;
  for (const m of text.matchAll(statics)) add(m[3], Boolean(m[2]));
  // import("./x"), require("./x"): evaluated at run time, so never type-only.
  for (const m of text.matchAll(/\b(?:import|require)\s*\(\s*["'](\.[^"']+)["']\s*\)/g)) add(m[1], false);
  return found;
}

/** A module's text with its comment lines (`//`, and `*` inside a block comment) blanked, so that
 *  what comments mention is not read as code; lines keep their numbers. */
function code(file) {
  return readFileSync(file, "utf8").replace(/^[ \t]*(\/\/|\/?\*).*$/gm, "");
}

/** The module a relative specifier names: the file, the file with .ts, or a folder's index.ts. */
function resolveModule(dir, spec) {
  const target = resolve(dir, spec);
  if (/\.(ts|js|json|wasm)$/.test(target)) return target;
  if (existsSync(target) && statSync(target).isDirectory()) return join(target, "index.ts");
  return `${target}.ts`;
}

/** Why `from` may not import `imp`, or null when it may. */
function violation(from, imp) {
  const to = imp.to;
  if (to.startsWith("..")) return null; // outside worker/src: the core's generated bindings, package.json
  if (!existsSync(join(root, to))) return "names no module";
  const a = layerOf(from);
  const b = layerOf(to);
  if (from === "config.ts" && imp.typeOnly) return null; // Env names every Durable Object class, whatever its layer
  if (b === "config" && rank(a) > rank("config")) return imp.typeOnly ? null : `${a}/ may import only types from config.ts`;
  if (a === "services" && b === "config" && !imp.typeOnly) return "services/ receive the configuration, never load it: only `import type` from config.ts";
  if ((a === "meta" && b === "storage") || (a === "storage" && b === "meta")) return "meta/ and storage/ never import each other";
  if (rank(b) < rank(a)) return `${a} may not import ${b} (a higher layer)`;
  if (a === "api" && b === "api" && from !== to) {
    const [fromRoom, toRoom] = [apiRoom(from), apiRoom(to)];
    if (fromRoom === "common" && toRoom !== "common") return "api/common/ imports only api/common/ (helpers never reach up to operations or dispatch)";
    if (fromRoom === "operation" && toRoom !== "common")
      return "an api/ operation imports another operation or a dispatcher (share through services/ or api/common/)";
  }
  return null;
}

const files = sources(root)
  .map((f) => relative(root, f))
  .sort();
const problems = [];
const importsOf = new Map(files.map((f) => [f, imports(join(root, f))]));
for (const from of files) {
  if (process.argv.includes("--list"))
    console.log(
      `${layerOf(from).padEnd(8)} ${from}: ${importsOf
        .get(from)
        .map((i) => i.to)
        .join(" ")}`,
    );
  for (const imp of importsOf.get(from)) {
    const why = violation(from, imp);
    if (!why) continue;
    problems.push(`${from} -> ${imp.to}: ${why}`);
  }
}

// The metadata Durable Objects are reached through meta/stubs.ts only: with `--processes N` they
// live in one process and stubs.ts hands the others stand-ins (meta/remote.ts); a namespace used
// directly would be missing there.
const NAMESPACE_USE = /\benv\.(BUCKET_INDEX|BUCKET_REGISTRY|METRICS_STORE|KEY_STORE)\b/g;
for (const from of files.filter((f) => f !== "meta/stubs.ts" && f !== "meta/remote.ts")) {
  code(join(root, from))
    .split("\n")
    .forEach((line, i) => {
      const used = [...new Set([...line.matchAll(NAMESPACE_USE)].map((m) => m[1]))];
      for (const name of used)
        problems.push(
          `${from}:${i + 1}: env.${name} used directly: reach the Durable Objects through meta/stubs.ts (with --processes N they live in one process)`,
        );
    });
}

// The console (web/src): main.ts is its entry and imports the views; nothing imports main.ts.
const web = resolve(root, "../../web/src");
for (const from of ownTree ? sources(web).map((f) => relative(web, f)) : []) {
  for (const imp of imports(join(web, from), web)) {
    if (imp.to === "main.ts")
      problems.push(`web/src/${from} -> web/src/main.ts: the console's entry imports its views, never the other way (shared code: web/src/app.ts)`);
  }
}

// No import circles (type-only imports included) in worker/src, and in the console's and the client
// library's own modules.
for (const [label, dir] of [
  ["worker/src", root],
  ...(ownTree
    ? [
        ["web/src", resolve(root, "../../web/src")],
        ["client/src", resolve(root, "../../client/src")],
      ]
    : []),
]) {
  const modules = dir === root ? importsOf : new Map(sources(dir).map((f) => [relative(dir, f), imports(f, dir)]));
  const graph = new Map([...modules].map(([f, imps]) => [f, imps.map((i) => i.to).filter((to) => !to.startsWith(".."))]));
  for (const circle of circles(graph)) problems.push(`${label}: import circle ${[...circle, circle[0]].join(" -> ")}`);
}

/** Every circle of `graph` (module → the modules it imports), one shortest-found path each, found by
 *  depth-first search; each set of modules in one circle is reported once. */
function circles(graph) {
  const found = [];
  const seen = new Set();
  const state = new Map(); // 1: on the current path, 2: done
  const path = [];
  const visit = (v) => {
    state.set(v, 1);
    path.push(v);
    for (const w of graph.get(v) ?? []) {
      if (state.get(w) === 1) {
        const circle = path.slice(path.indexOf(w));
        const key = [...circle].sort().join(" ");
        if (!seen.has(key)) {
          seen.add(key);
          found.push(circle);
        }
      } else if (!state.has(w) && graph.has(w)) visit(w);
    }
    path.pop();
    state.set(v, 2);
  };
  for (const v of [...graph.keys()].sort()) if (!state.has(v)) visit(v);
  return found;
}

// Every module is named in docs/architecture.md's table of the worker.
const architecture = ownTree ? readFileSync(resolve(root, "../../docs/architecture.md"), "utf8") : "";
const workerTable = architecture.slice(architecture.indexOf("## The worker"));
const named = new Set();
for (const row of workerTable.split("\n").filter((l) => l.startsWith("| `"))) {
  let folder = "";
  for (const [, name] of row.split(" | ")[0].matchAll(/`([\w./-]+\.ts)`/g)) {
    if (name.includes("/")) folder = name.slice(0, name.lastIndexOf("/") + 1);
    named.add(name.includes("/") ? name : folder + name);
  }
}
for (const file of ownTree ? files : []) if (!named.has(file)) problems.push(`${file}: not named in docs/architecture.md's table of the worker`);

if (problems.length) {
  console.error(`check-layers: ${problems.length} problem(s) with the layering (docs/architecture.md):`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
console.log(`check-layers: ${files.length} modules, imports go one way, no import circles, each named in docs/architecture.md`);
