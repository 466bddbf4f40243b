// `npm start`: serves the gateway on plain workerd, the production runtime for self-hosting
// (docs/self-hosting.md), from the repository: wrangler bundles the Worker (scripts/lib/worker-bundle.mjs),
// the console is web/dist (built by scripts/setup.sh), workerd is the one in node_modules. How it
// serves (the flags, shardgate.json, the data directory, --processes) is scripts/lib/serve-gateway.mjs,
// which the one-file binary (`npm run build:binary`, scripts/binary/) runs too.
//
//   node scripts/serve.mjs [--config shardgate.json] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--processes N] [--quiet]
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { serveGateway } from "./lib/serve-gateway.mjs";
import { workerBundle } from "./lib/worker-bundle.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
/** @type {object | undefined} */
let wrangler;

await serveGateway(process.argv.slice(2), {
  command: "npm start --",
  cli: "npx shardgate",
  base: root,
  runtime: "plain workerd",
  wrangler: async () => {
    const { unstable_readConfig } = await import("wrangler");
    wrangler = unstable_readConfig({ config: join(root, "wrangler.toml") }, { hideWarnings: true });
    return wrangler;
  },
  parts: () => ({
    bundle: workerBundle(root),
    assetsDir: wrangler?.assets?.directory ? resolve(root, wrangler.assets.directory) : null,
    assetsWorker: join(root, "scripts/workerd/console-assets.js"),
    cacheWorker: join(root, "scripts/workerd/block-cache.js"),
    workerdBin: join(root, "node_modules/workerd/bin/workerd"),
  }),
});
