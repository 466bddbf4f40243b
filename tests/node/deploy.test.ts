// `wrangler deploy --dry-run`: the Worker bundles for Cloudflare exactly as a real deploy would
// (wrangler.toml, the .wasm module, every binding), without an account or network.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

describe("wrangler deploy --dry-run", () => {
  it("bundles the Worker with its wasm core and every binding", () => {
    const outdir = mkdtempSync(join(tmpdir(), "shardgate-deploy-"));
    try {
      const run = spawnSync(process.execPath, [join(root, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", outdir], {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
      });
      const output = `${run.stdout}${run.stderr}`;
      expect(run.status, output).toBe(0);
      for (const binding of ["BUCKET_INDEX", "BUCKET_REGISTRY", "METRICS_STORE", ...[0, 1, 2, 3, 4, 5].map((i) => `NODE_${i}`)]) {
        expect(output).toContain(`env.${binding} `);
      }
      const files = readdirSync(outdir);
      expect(files).toContain("index.js");
      const wasm = files.find((f) => f.endsWith(".wasm"));
      expect(wasm).toBeDefined();
      expect(statSync(join(outdir, wasm as string)).size).toBeGreaterThan(100_000);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });
});
