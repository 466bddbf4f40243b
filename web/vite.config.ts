// The console's build: `vite build` (scripts/setup.sh runs it) writes web/dist/, served at the root
// of the console's own origin: by scripts/workerd/console-assets.js under `npm start` and
// `npm run dev`, and from wrangler.toml's [assets] on the console's host on Cloudflare
// (worker/src/console.ts).
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  base: "/",
  build: {
    outDir: `${here}dist`,
    emptyOutDir: true,
    target: "es2022",
    // The WASM core is fetched as its own file (never inlined as base64).
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  worker: { format: "es" },
});
