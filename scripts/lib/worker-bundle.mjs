// The gateway Worker bundled for plain workerd: `wrangler deploy --dry-run --outdir` builds exactly
// what Cloudflare would run (esbuild, the core's .wasm as a compiled module) into dist/worker/.
// Rebuilt only when its inputs changed (a hash of them is kept beside it), into a fresh directory
// renamed into place, so several servers starting at once never see half a bundle.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * @param {string} root the repository
 * @returns {{ dir: string, modules: { name: string, type: "esModule" | "wasm" }[] }}
 */
export function workerBundle(root) {
  const dir = join(root, "dist/worker");
  const hash = inputsHash(root);
  const stamp = join(dir, ".inputs.sha256");
  if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== hash) {
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    execFileSync(process.execPath, [join(root, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", tmp], {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
    });
    writeFileSync(join(tmp, ".inputs.sha256"), hash);
    rmSync(dir, { recursive: true, force: true });
    try {
      renameSync(tmp, dir);
    } catch (e) {
      // Another server built the same inputs at the same moment: use its bundle.
      rmSync(tmp, { recursive: true, force: true });
      if (!existsSync(stamp) || readFileSync(stamp, "utf8") !== hash) throw e;
    }
  }
  const modules = readdirSync(dir)
    .filter((name) => name.endsWith(".js") || name.endsWith(".wasm"))
    .sort((a, b) => (a === "index.js" ? -1 : b === "index.js" ? 1 : a.localeCompare(b))) // the main module first
    .map((name) => ({ name, type: name.endsWith(".wasm") ? "wasm" : "esModule" }));
  return { dir, modules };
}

/** Everything the bundle is made of: the Worker's sources, the core, wrangler.toml and the lock. */
function inputsHash(root) {
  const h = createHash("sha256");
  const files = [
    ...walk(join(root, "worker")),
    ...walk(join(root, "core/pkg")),
    join(root, "wrangler.toml"),
    join(root, "package-lock.json"),
    join(root, "package.json"),
  ];
  for (const f of files.sort()) h.update(f).update("\0").update(readFileSync(f)).update("\0");
  return h.digest("hex");
}

function* walk(dir) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    if (name === "node_modules") continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* walk(path);
    else yield path;
  }
}
