// `node scripts/check-sizes.mjs`: keeps worker/src's modules within their line budgets, so that a
// file split to be read in one sitting does not grow back. Every module has DEFAULT_BUDGET lines at
// most; BUDGETS names the ones held tighter, each with the reason. A module over its budget is
// split by concern (as meta/bucket-index.ts and meta/bucket-background.ts were), not given more.
//
// Exit status 1 naming each module over its budget; `--list` prints the ten largest.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const src = join(root, "worker/src");

const DEFAULT_BUDGET = 700;
/** file (under worker/src) → its budget in lines, and why it is tighter than the default. */
const BUDGETS = {
  "meta/bucket-index.ts": { lines: 350, reason: "the bucket's RPC surface: each method checks and delegates to the module keeping its tables" },
  "meta/bucket-background.ts": { lines: 350, reason: "the bucket's alarm, events, replication and jobs' calls: the same rule" },
};

function* modules(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* modules(path);
    else if (entry.name.endsWith(".ts")) yield path;
  }
}

const sizes = [...modules(src)].map((path) => {
  const text = readFileSync(path, "utf8");
  return { file: relative(src, path), lines: text.split("\n").length - (text.endsWith("\n") ? 1 : 0) };
});
const over = sizes.filter(({ file, lines }) => lines > (BUDGETS[file]?.lines ?? DEFAULT_BUDGET));
for (const name of Object.keys(BUDGETS)) {
  if (!sizes.some((s) => s.file === name)) over.push({ file: name, lines: Number.NaN });
}

if (process.argv.includes("--list")) {
  for (const { file, lines } of sizes.sort((a, b) => b.lines - a.lines).slice(0, 10)) console.log(`${lines}\t${file}`);
  console.log(`${sizes.reduce((n, s) => n + s.lines, 0)}\tworker/src in all`);
}
if (over.length > 0) {
  for (const { file, lines } of over) {
    const budget = BUDGETS[file]?.lines ?? DEFAULT_BUDGET;
    console.error(
      Number.isNaN(lines)
        ? `check-sizes: worker/src/${file} has a budget but no longer exists: move its entry to where its code went`
        : `check-sizes: worker/src/${file} has ${lines} lines, over its budget of ${budget}: split it by concern`,
    );
  }
  process.exit(1);
}
