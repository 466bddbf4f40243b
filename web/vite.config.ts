// The console's build: `vite build` (scripts/setup.sh runs it) writes web/dist/_console/, the
// directory wrangler.toml's [assets] serves, so the Worker answers /_console/* from it unchanged.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  base: "/_console/",
  build: {
    outDir: `${here}dist/_console`,
    emptyOutDir: true,
    target: "es2022",
    // The WASM core is fetched as its own file (never inlined as base64).
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  worker: { format: "es" },
});
