// `node scripts/check-bodies.mjs`: checks that no code in worker/src reads a body whole with
// `.arrayBuffer()`, `.text()`, `.json()`, `.formData()`, `.blob()` or `.bytes()`. A request body is
// read through api/http/request-body.ts readBodyUpTo (which stops at a bound) or streamed; reading one
// whole lets a client make the gateway hold as much as it sends. The only calls allowed are the
// ones in ALLOWED, each a body that is not a client's, with the reason.
//
// Exit status 1 on a violation, naming each call with its file and line; `--list` prints the
// allowed calls found.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const src = join(root, "worker/src");

/** file (under worker/src) → the calls it may make (the text of the call, receiver included) and why. */
const ALLOWED = {
  "storage/disk-node.ts": { calls: ["res.json()"], reason: "a disk node's directory listing, not a request body" },
  "services/cache-status.ts": { calls: ["counts.json()"], reason: "the block cache store's own counts (a Worker of the gateway's), not a request body" },
  "storage/block-cache.ts": {
    calls: ["entry.arrayBuffer()"],
    reason: "a cached entry of at most MEMORY_ENTRY_BYTES, its length checked before, not a request body",
  },
  "meta/remote.ts": {
    calls: ["request.text()", "response.text()"],
    reason: "a Durable Object call and its answer between the gateway's own processes, on a socket only its owner can open",
  },
};

/** A zero-argument call of a body-consuming method, with the receiver before it (an identifier path or a closing paren). */
const CALL = /([A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)*|\))\s*\??\.\s*(arrayBuffer|text|json|formData|blob|bytes)\s*\(\s*\)/g;

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

/** The source with comments blanked out (kept the same length, so line numbers hold). */
function withoutComments(source) {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " "))
    .replace(/(^|[^:"'`\\])\/\/[^\n]*/g, (c, before) => before + " ".repeat(c.length - before.length));
}

const violations = [];
const allowed = [];
for (const path of files(src)) {
  const file = relative(src, path).split("\\").join("/");
  const text = readFileSync(path, "utf8");
  const lines = text.split("\n");
  const source = withoutComments(text);
  for (const m of source.matchAll(CALL)) {
    const call = m[0].replace(/\s+/g, "");
    const line = source.slice(0, m.index).split("\n").length;
    const rule = ALLOWED[file];
    if (rule?.calls.includes(call)) allowed.push(`worker/src/${file}:${line}: ${call} (${rule.reason})`);
    else violations.push(`worker/src/${file}:${line}: ${lines[line - 1].trim()}`);
  }
}

if (process.argv.includes("--list")) for (const a of allowed) console.log(a);
if (violations.length > 0) {
  console.error(
    "check-bodies: bodies read whole outside api/http/request-body.ts readBodyUpTo (read the request body with readBodyUpTo, or add the call to ALLOWED in scripts/check-bodies.mjs with why it is not a client's body):",
  );
  for (const v of violations) console.error(`  ${v}`);
  process.exit(1);
}
console.log(`check-bodies: no body read whole outside the bounded reader (${allowed.length} allowed: bodies that are not a client's)`);
