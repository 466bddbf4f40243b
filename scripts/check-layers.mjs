// `node scripts/check-layers.mjs`: checks that imports go one way (docs/architecture.md), in every
// package of the repository: worker/src (the Worker), web/src (the console), client/src
// (@shardgate/client), bench/, scripts/ and bin/ (the shardgate CLI).
//
// Inside worker/src, by layer:
//
//   entry (index.ts, console.ts)
//     → api/        S3 and admin HTTP: parse, authorize, answer
//     → jobs/       background work on the scheduler's alarm: calls services, never api/
//     → services/   plain functions over typed inputs and outputs, no Request or Response
//     → config.ts   the composition root: builds the node drivers from the Worker's vars
//     → meta/ and storage/  (siblings that never import each other: metadata does no node I/O)
//     → base        shared/, core, auth/, observability/, sse/, errors, s3-error
//
// A module may import its own layer and any layer below it; below config.ts, only `import type`
// from config.ts (the Env and GatewayConfig types), and config.ts imports only types from above;
// services/ too import only types from it (they receive the configuration, never load it).
// Within api/, the folder says what a module is: api/http/ (request handling: routing, who may do
// what, errors, CORS, bodies) and api/format/ (S3's formats: XML, headers, parameters), the helpers,
// which import only helpers; api/s3/ and api/admin/ (operations: import helpers and their own parts,
// `<operation>.<part>.ts` beside them, never another operation); api/*.ts (dispatchers: may import
// any of them).
//
// worker/src/shared/ is the shared module: what the client library and the console run of the
// Worker's code (the core's wrapper and types, the direct path's wire types, byte helpers, the
// node interface and breaker, the range reader). It imports only itself and the core's generated
// bindings (core/pkg/), never a type from elsewhere, so that whoever imports it gets nothing else.
//
// Between packages (SHARES): each imports outside its own tree only what its row allows; the
// Worker imports no other package; core/pkg/ (the core's bindings, build output) anyone may.
//
// And the metadata Durable Objects are reached through meta/stubs.ts only (never env.BUCKET_INDEX
// and the like elsewhere): with `--processes N` the other processes get stand-ins from there.
// And the Worker's SHARDGATE_* variables are read by config.ts alone (and config-vars.ts, its
// schema): never `env.SHARDGATE_…` (or `x.SHARDGATE_…`, `env["SHARDGATE_…"]`) elsewhere; a binding
// of that prefix is allowed where ENV_BINDINGS says, with why.
// Nothing imports a package's entry from inside: web/src/main.ts, client/src/index.ts.
//
// And docs/architecture.md names every module of worker/src: in a row of its worker table, as
// `folder/file.ts`, or as `file.ts` after the row's first name in that folder.
//
// No import circles, type-only imports included, in any package.
//
// Modules are .ts, .mts, .cts, .js, .mjs and .cjs files (not .d.ts). Imports are every kind that
// names a module: `import … from`, `export … from` (re-exports), `import "…"`, `import("…")`,
// `require("…")` and a Web Worker's `new Worker(new URL("…", import.meta.url))`, relative or as
// `@shardgate/<package>[/path]`; a folder import resolves to its index, and one that resolves to no
// module is itself a violation (tests/node/check-layers.test.ts plants each kind in each package).
// Paths handed to tools as strings (a bundler's entry point, a file read as text) are not imports.
//
// Exit status 1 on a violation, naming each import and the rule; `--list` prints every module's
// layer and imports; `--repo DIR` checks another repository root (the packages it has, and the
// docs when it has docs/architecture.md); `--root DIR` checks only a tree shaped like worker/src.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, extname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const argument = (name) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? null : resolve(process.argv[i + 1]);
};
/** --root: a worker/src-shaped tree alone (its modules named relative to it, as before --repo). */
const workerOnly = argument("--root");
const repo = workerOnly ?? argument("--repo") ?? resolve(fileURLToPath(new URL("..", import.meta.url)));

/** The packages, by folder (repo-relative). */
const PACKAGES = ["worker/src", "web/src", "client/src", "bench", "scripts", "bin"];
/** Where each package's folder is on disk. */
const packageDir = (pkg) => (workerOnly ? (pkg === "worker/src" ? workerOnly : null) : join(repo, pkg));

const SHARED = "worker/src/shared/";
const CORE_BINDINGS = "core/pkg/";
const CLIENT_ENTRY = "client/src/index.ts";

/**
 * What each package may import outside its own tree (a folder ends with "/"), and why. Everything
 * else outside is a violation. core/pkg/ (the core's generated bindings) is open to every package.
 */
const SHARES = {
  "worker/src": [["worker/package.json", "its version"]],
  "web/src": [
    [SHARED, "the shared module"],
    [CLIENT_ENTRY, "@shardgate/client's entry, as client/package.json exports it"],
  ],
  "client/src": [[SHARED, "the shared module"]],
  bench: [
    [SHARED, "the shared module"],
    [CLIENT_ENTRY, "@shardgate/client's entry"],
    // The benchmarks start gateways and clusters the way `npm start` does: a free port.
    ["scripts/lib/", "the serving helpers"],
  ],
  scripts: [
    [SHARED, "the shared module"],
    [CLIENT_ENTRY, "@shardgate/client's entry"],
    // npm start checks the variables it passes the Worker with the Worker's own schema.
    ["worker/src/config-vars.ts", "the Worker's variables' schema"],
    // The one-file binary (scripts/binary/launcher.mjs) runs the admin CLI too.
    ["bin/lib/cli.mjs", "the CLI's entry"],
    // The gateway makes the root key's file that the CLI reads: one module says where and how.
    ["bin/lib/local-key.mjs", "the root key's file"],
  ],
  // The CLI (`npx shardgate`) talks to a gateway over HTTP only: it imports nothing of the others
  // (bin/lib/pkg/sealed.mjs is its build of client/src/sealed.ts; core/pkg/ is open to every package).
  bin: [],
};

/** The npm workspaces `@shardgate/<name>` names (package.json workspaces). */
const WORKSPACES = { worker: "worker", web: "web", client: "client", tests: "tests" };

/** Layers from top to bottom: a module imports its own layer or one further down. */
const LAYERS = ["entry", "api", "jobs", "services", "config", "meta|storage", "base"];

/** The layer of a module of worker/src (its path relative to worker/src). */
function layerOf(path) {
  if (path === "index.ts" || path === "console.ts") return "entry";
  if (path === "config.ts") return "config";
  const top = path.split("/")[0];
  if (["api", "jobs", "services", "meta", "storage"].includes(top)) return top;
  return "base";
}

const rank = (layer) => LAYERS.findIndex((l) => l.split("|").includes(layer));

/**
 * api/'s rooms, from the folder: api/http/ and api/format/ hold what operations share (request
 * handling; S3's formats), the helpers; api/s3/ and api/admin/ hold the operations, one file per
 * family, with the parts only one of them uses beside it (`list.xml.ts` is list.ts's); a module
 * directly in api/ dispatches (the operations table, the S3 entry, the admin app).
 */
function apiRoom(path) {
  const parts = path.split("/");
  if (parts[0] !== "api") return null;
  if (parts.length === 2) return "dispatch";
  return parts[1] === "http" || parts[1] === "format" ? "helper" : "operation";
}

/** Whether `to` is a part of the operation module `from`: `<dir>/<name>.<part>.ts` beside `<dir>/<name>.ts`. */
function partOf(from, to) {
  const base = from.replace(/\.[^./]+$/, "");
  return (
    to.startsWith(`${base}.`) &&
    !to
      .slice(base.length + 1)
      .replace(/\.[^./]+$/, "")
      .includes("/")
  );
}

const MODULE = /\.(ts|mts|cts|js|mjs|cjs)$/;
const SKIP = new Set(["node_modules", "dist", "pkg", "target"]);

function sources(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIP.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, out);
    else if (MODULE.test(entry.name) && !entry.name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

/** A module's text with its comment lines (`//`, and `*` inside a block comment) blanked, so that
 *  what comments mention is not read as code; lines keep their numbers. */
function code(file) {
  return readFileSync(file, "utf8").replace(/^[ \t]*(\/\/|\/?\*).*$/gm, "");
}

/** Every module specifier a module names, of every kind: { spec, typeOnly }. */
function specifiers(file) {
  const text = code(file);
  const found = [];
  const statics = /^\s*(import|export)\s+(type\s+)?(?:[^;'"`]*?\s+from\s+)?["']([^"']+)["']/gms;
  for (const m of text.matchAll(statics)) found.push({ spec: m[3], typeOnly: Boolean(m[2]) });
  // import("x"), require("x"), new Worker(new URL("x", import.meta.url)): evaluated at run time,
  // so never type-only.
  for (const m of text.matchAll(/\b(?:import|require)\s*\(\s*["']([^"']+)["']\s*\)/g)) found.push({ spec: m[1], typeOnly: false });
  for (const m of text.matchAll(/\bnew\s+(?:Shared)?Worker\s*\(\s*new\s+URL\s*\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url\s*\)/g))
    found.push({ spec: m[1], typeOnly: false });
  return found;
}

/** A repo-relative path for a file on disk; null outside (with --root: outside the worker tree). */
function repoPath(abs) {
  const r = relative(workerOnly ?? repo, abs);
  if (r.startsWith("..") || r === "") return null;
  return workerOnly ? `worker/src/${r}` : r;
}

/** The file on disk a repo-relative path names. */
const onDisk = (path) => (workerOnly ? join(workerOnly, path.slice("worker/src/".length)) : join(repo, path));

const EXTENSIONS = [".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json"];

/** The file a path names, as a bundler or Node finds it: as is, with an extension, a .js path's .ts
 *  source, or a folder's index; null when none exists. */
function findFile(target) {
  const isFile = (p) => existsSync(p) && statSync(p).isFile();
  if (isFile(target)) return target;
  const ext = extname(target);
  if ([".js", ".mjs", ".cjs"].includes(ext)) {
    const ts = target.slice(0, -ext.length) + { ".js": ".ts", ".mjs": ".mts", ".cjs": ".cts" }[ext];
    if (isFile(ts)) return ts;
  }
  for (const e of EXTENSIONS) if (isFile(target + e)) return target + e;
  if (existsSync(target) && statSync(target).isDirectory()) for (const e of EXTENSIONS) if (isFile(join(target, `index${e}`))) return join(target, `index${e}`);
  return null;
}

/** Where a module's specifier leads: { to (repo-relative, or null outside), found }, or null for a
 *  package from npm or the runtime (node:…, cloudflare:…, hono). */
function resolveImport(file, spec) {
  const path = spec.replace(/\?.*$/, ""); // Vite's ?url, ?worker
  let target;
  if (path.startsWith(".") || path.startsWith("/")) target = resolve(dirname(file), path);
  else {
    const m = /^@shardgate\/([^/]+)(?:\/(.*))?$/.exec(path);
    if (!m || workerOnly) return null;
    const dir = join(repo, WORKSPACES[m[1]] ?? m[1]);
    if (m[2]) target = join(dir, m[2]);
    else if (m[1] === "client")
      target = join(repo, CLIENT_ENTRY); // its sources' entry (exports names the built dist/)
    else {
      const manifest = join(dir, "package.json");
      const pkg = existsSync(manifest) ? JSON.parse(readFileSync(manifest, "utf8")) : {};
      const dot = typeof pkg.exports === "string" ? pkg.exports : pkg.exports?.["."];
      const entry = (typeof dot === "string" ? dot : dot?.import) ?? pkg.main;
      target = entry ? join(dir, entry) : join(dir, "index");
    }
  }
  const found = findFile(target);
  const named = found ?? (extname(target) ? target : `${target}${extname(file) === ".ts" ? ".ts" : extname(file)}`);
  return { to: repoPath(named), found: Boolean(found) };
}

const packageOf = (path) => PACKAGES.find((p) => path.startsWith(`${p}/`)) ?? null;
const inside = (path, prefix) => (prefix.endsWith("/") ? path.startsWith(prefix) : path === prefix);

/** Why module `from` may not import `to` (repo-relative paths), or null when it may. */
function violation(from, imp) {
  const { to } = imp;
  if (to === null) return workerOnly ? null : "reaches outside the repository"; // with --root: the core's bindings, package.json
  if (inside(to, CORE_BINDINGS)) return null; // build output: may not exist yet
  if (!imp.found) return "names no module";
  const pkg = packageOf(from);
  if (inside(from, SHARED) && !inside(to, SHARED))
    return `${SHARED} imports only itself and ${CORE_BINDINGS} (whoever imports the shared module gets nothing of the Worker's besides)`;
  if (packageOf(to) !== pkg) {
    if (SHARES[pkg].some(([allowed]) => inside(to, allowed))) return null;
    const allowed = [...SHARES[pkg].map(([p, why]) => `${p} (${why})`), `${CORE_BINDINGS} (the core's bindings)`];
    return `${pkg} may import from outside its tree only ${allowed.join(", ")}`;
  }
  if (pkg === "web/src" && to === "web/src/main.ts") return "the console's entry imports its views, never the other way (shared code: web/src/app.ts)";
  if (pkg === "client/src" && to === CLIENT_ENTRY) return "the client library's entry re-exports its modules, never the other way";
  if (pkg === "worker/src") return workerViolation(from.slice("worker/src/".length), to.slice("worker/src/".length), imp.typeOnly);
  return null;
}

/** The layering inside worker/src (paths relative to it). */
function workerViolation(from, to, typeOnly) {
  const a = layerOf(from);
  const b = layerOf(to);
  if (from === "config.ts" && typeOnly) return null; // Env names every Durable Object class, whatever its layer
  if (b === "config" && rank(a) > rank("config")) return typeOnly ? null : `${a}/ may import only types from config.ts`;
  if (a === "services" && b === "config" && !typeOnly) return "services/ receive the configuration, never load it: only `import type` from config.ts";
  if ((a === "meta" && b === "storage") || (a === "storage" && b === "meta")) return "meta/ and storage/ never import each other";
  if (rank(b) < rank(a)) return `${a} may not import ${b} (a higher layer)`;
  if (a === "api" && b === "api" && from !== to) {
    const [fromRoom, toRoom] = [apiRoom(from), apiRoom(to)];
    if (fromRoom === "helper" && toRoom !== "helper")
      return "api/http/ and api/format/ import only each other (helpers never reach up to operations or dispatch)";
    if (fromRoom === "operation" && toRoom !== "helper" && !partOf(from, to))
      return "an api/ operation imports another operation or a dispatcher (share through services/, api/http/ or api/format/)";
  }
  return null;
}

/** How a path is shown: repo-relative, or with --root relative to the worker tree as before. */
const show = (path) => (path === null ? "(outside)" : workerOnly ? path.replace(/^worker\/src\//, "") : path);

// Every module of every package present, each read once: its imports, resolved.
const present = PACKAGES.filter((p) => packageDir(p) && existsSync(packageDir(p)));
const modules = new Map(); // repo-relative path → [{ spec, typeOnly, to, found }]
for (const pkg of present)
  for (const file of sources(packageDir(pkg)).sort())
    modules.set(
      repoPath(file),
      specifiers(file).flatMap((s) => {
        const where = resolveImport(file, s.spec);
        return where ? [{ ...s, ...where }] : [];
      }),
    );

const problems = [];
for (const [from, imps] of modules) {
  if (process.argv.includes("--list")) {
    const pkg = packageOf(from);
    const kind = pkg === "worker/src" ? layerOf(from.slice("worker/src/".length)) : pkg;
    console.log(`${kind.padEnd(10)} ${show(from)}: ${imps.map((i) => show(i.to)).join(" ")}`);
  }
  for (const imp of imps) {
    const why = violation(from, imp);
    if (why) problems.push(`${show(from)} -> ${show(imp.to)}: ${why}`);
  }
}

// The metadata Durable Objects are reached through meta/stubs.ts only: with `--processes N` they
// live in one process and stubs.ts hands the others stand-ins (meta/remote.ts); a namespace used
// directly would be missing there.
const NAMESPACE_USE = /\benv\.(BUCKET_INDEX|BUCKET_REGISTRY|METRICS_STORE|KEY_STORE)\b/g;
for (const from of [...modules.keys()].filter((f) => packageOf(f) === "worker/src")) {
  if (from === "worker/src/meta/stubs.ts" || from === "worker/src/meta/remote.ts") continue;
  code(onDisk(from))
    .split("\n")
    .forEach((line, i) => {
      const used = [...new Set([...line.matchAll(NAMESPACE_USE)].map((m) => m[1]))];
      for (const name of used)
        problems.push(
          `${show(from)}:${i + 1}: env.${name} used directly: reach the Durable Objects through meta/stubs.ts (with --processes N they live in one process)`,
        );
    });
}

// The Worker's SHARDGATE_* variables are read by config.ts alone: each parsed once, checked against
// config-vars.ts's schema, its default in one place; other modules receive the parsed value
// (GatewayConfig, or config.ts's functions). A property read of that name on any object counts
// (`env.X`, `ctx.env.X`, `vars.X`, `env["X"]`); comments and text in quotes do not.
const VAR_READERS = ["worker/src/config.ts", "worker/src/config-vars.ts"];
/** Module → the SHARDGATE_* bindings (not variables) it may read, and why. */
const ENV_BINDINGS = {
  "worker/src/meta/stubs.ts": {
    names: ["SHARDGATE_META"],
    reason: "a service binding (the home process's MetaGate under --processes N), read with the Durable Object namespaces it stands in for",
  },
};
const VAR_READ = /(?:\??\.\s*|\[\s*["'`])(SHARDGATE_[A-Za-z0-9_]+)/g;
for (const from of [...modules.keys()].filter((f) => packageOf(f) === "worker/src" && !VAR_READERS.includes(f))) {
  code(onDisk(from))
    .split("\n")
    .forEach((line, i) => {
      // Text in quotes (an error message naming a variable) is not a read; a key in brackets is.
      const unquoted = line.replace(/(["'`])(?:\\.|(?!\1).)*\1/g, (q) => (/^["'`]SHARDGATE_[A-Za-z0-9_]+["'`]$/.test(q) ? q : '""'));
      for (const m of unquoted.matchAll(VAR_READ)) {
        if (ENV_BINDINGS[from]?.names.includes(m[1])) continue;
        problems.push(
          `${show(from)}:${i + 1}: ${m[1]} read directly: the Worker's variables are read by config.ts alone (GatewayConfig or its functions; a binding: ENV_BINDINGS in scripts/check-layers.mjs)`,
        );
      }
    });
}

// No import circles (type-only imports included) in any package; modules named relative to it.
for (const pkg of present) {
  const local = (p) => p.slice(pkg.length + 1);
  const graph = new Map();
  for (const [from, imps] of modules)
    if (packageOf(from) === pkg)
      graph.set(
        local(from),
        imps.filter((i) => i.to && packageOf(i.to) === pkg).map((i) => local(i.to)),
      );
  for (const circle of circles(graph)) problems.push(`${pkg}: import circle ${[...circle, circle[0]].join(" -> ")}`);
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

// Every module of worker/src is named in docs/architecture.md's table of the worker (checked where
// the docs are: this repository, or a --repo tree that has them).
const docs = workerOnly ? null : join(repo, "docs/architecture.md");
if (docs && existsSync(docs)) {
  const architecture = readFileSync(docs, "utf8");
  const workerTable = architecture.slice(architecture.indexOf("## The worker"));
  const named = new Set();
  for (const row of workerTable.split("\n").filter((l) => l.startsWith("| `"))) {
    let folder = "";
    for (const [, name] of row.split(" | ")[0].matchAll(/`([\w./-]+\.ts)`/g)) {
      if (name.includes("/")) folder = name.slice(0, name.lastIndexOf("/") + 1);
      named.add(name.includes("/") ? name : folder + name);
    }
  }
  for (const file of modules.keys())
    if (packageOf(file) === "worker/src" && !named.has(file.slice("worker/src/".length)))
      problems.push(`${file}: not named in docs/architecture.md's table of the worker`);
}

if (problems.length) {
  console.error(`check-layers: ${problems.length} problem(s) with the layering (docs/architecture.md):`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
console.log(
  `check-layers: ${modules.size} modules in ${present.join(", ")}: imports go one way, no import circles, each worker module named in docs/architecture.md`,
);
