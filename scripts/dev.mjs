// `npm run dev`: the gateway under `wrangler dev` (workerd with R2 nodes and Durable Objects
// simulated by miniflare and persisted on disk). For development: wrangler dev adds a few ms to
// every request; `npm start` (scripts/serve.mjs) is the production runtime.
//
//   node scripts/dev.mjs [--ip 127.0.0.1] [--port 8787] [--console-port PORT] [--data-dir DIR] [--quiet] [-- wrangler dev args]
//
// --data-dir is where wrangler dev persists (its --persist-to; default .wrangler/state); the old
// spelling --persist-to is still taken, with a one-line notice. An unknown flag is one line naming
// the nearest valid one (scripts/lib/shardgate-config.mjs parseFlags).
//
// The web console is served on an origin of its own (docs/console.md): wrangler dev listens on one
// port, so a second workerd serves the console (the same Worker as `npm start`,
// scripts/workerd/console-assets.js) on the console port (default port + 1, or the next free one).
//
// Credentials: SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY from the environment, or the
// root key made at the first start and kept in the data directory (scripts/lib/serving.mjs rootKey;
// never built into the Worker: a deployment without secrets refuses all).
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort, portAvailable } from "./lib/free-port.mjs";
import { consoleOriginsFor, masterKey, ownDataDir, printBanner, LOOPBACK_HOSTS, publicKeyRefusal, rootKey, waitHealthy } from "./lib/serving.mjs";
import { untrustedPath } from "./lib/private-path.mjs";
import { isLoopback } from "../bin/lib/local-key.mjs";
import { parseFlags } from "./lib/shardgate-config.mjs";
import { consoleOnlyConfig } from "./lib/workerd-config.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

let parsed;
try {
  parsed = parseFlags(
    process.argv.slice(2),
    {
      ip: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "8787" },
      "console-port": { type: "string" },
      "data-dir": { type: "string" },
      quiet: { type: "boolean", default: false },
    },
    { allowPositionals: true, deprecated: { "persist-to": "data-dir" } },
  );
  for (const flag of ["port", "console-port"]) {
    const v = parsed.values[flag];
    if (v !== undefined && !(/^[0-9]{1,5}$/.test(v) && Number(v) >= 1 && Number(v) <= 65535))
      throw new Error(`--${flag}: expected an integer from 1 to 65535, got ${JSON.stringify(v.slice(0, 40))}`);
  }
} catch (e) {
  console.error(`shardgate: ${e.message}`);
  process.exit(1);
}
const { values: opts, positionals: wranglerArgs } = parsed;
const dataDir = opts["data-dir"];

// Where wrangler dev persists (metadata, R2 nodes, the master key): another user's to change if they can write it.
const stateDir = resolve(dataDir ?? join(root, ".wrangler/state"));
const stateRefusal = untrustedPath(stateDir, "data directory");
if (stateRefusal) {
  console.error(`shardgate: ${stateRefusal}`);
  process.exit(1);
}
if (Boolean(process.env.SHARDGATE_ACCESS_KEY_ID) !== Boolean(process.env.SHARDGATE_SECRET_ACCESS_KEY)) {
  console.error("shardgate: SHARDGATE_ACCESS_KEY_ID and SHARDGATE_SECRET_ACCESS_KEY must be set together (one of them is empty or unset)");
  process.exit(1);
}
const configured = process.env.SHARDGATE_ACCESS_KEY_ID
  ? { accessKeyId: process.env.SHARDGATE_ACCESS_KEY_ID, secretAccessKey: String(process.env.SHARDGATE_SECRET_ACCESS_KEY) }
  : null;
// What wrangler dev persists (metadata, R2 nodes, the master key, the root key) is the owner's alone.
process.umask(0o077);
// The root key made at the first start when none is configured; the public secret of old stays on loopback.
let credentials;
try {
  ownDataDir(stateDir); // made owner-only and checked again now that it exists: nobody else's to make first
  credentials = configured ?? rootKey(stateDir);
} catch (e) {
  console.error(`shardgate: ${e.message}`);
  process.exit(1);
}
const refusal = publicKeyRefusal([opts.ip], credentials);
if (refusal) {
  console.error(`shardgate: ${refusal}`);
  process.exit(1);
}

const inspectorPort = await freePort();
let stopping = false;

let consolePort = opts["console-port"] === undefined ? Number(opts.port) + 1 : Number(opts["console-port"]);
if (opts["console-port"] === undefined && !(await portAvailable(opts.ip, consolePort))) consolePort = await freePort(opts.ip);
const consoleOrigins = consoleOriginsFor(opts.ip, consolePort).join(",");

const wrangler = spawn(
  process.execPath,
  [
    `${root}node_modules/wrangler/bin/wrangler.js`,
    "dev",
    ...["--ip", opts.ip, "--port", opts.port, "--inspector-port", String(inspectorPort)],
    "--show-interactive-dev-session=false",
    ...["--var", `SHARDGATE_ACCESS_KEY_ID:${credentials.accessKeyId}`, "--var", `SHARDGATE_SECRET_ACCESS_KEY:${credentials.secretAccessKey}`],
    ...["--var", `SHARDGATE_MASTER_KEY:${masterKey(stateDir)}`],
    ...["--var", `SHARDGATE_CONSOLE_ORIGIN:${consoleOrigins}`],
    // The block cache off, as `npm start` has it over local nodes (wrangler.toml's "on" is for
    // Cloudflare, where nodes are R2 or S3 endpoints); a --var after `--` turns it on.
    ...["--var", "SHARDGATE_BLOCK_CACHE:off"],
    // On loopback, only loopback names (DNS rebinding: worker/src/config.ts hostAllowed).
    ...(isLoopback(opts.ip) ? ["--var", `SHARDGATE_ALLOWED_HOSTS:${LOOPBACK_HOSTS}`] : []),
    ...(dataDir ? ["--persist-to", dataDir] : []),
    ...wranglerArgs,
  ],
  { cwd: root, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" } },
);
// No restart loop: a wrangler dev that exits is a bug to see, not to hide (the aborted-upload
// crash of wrangler 4.124, workers-sdk #15451, is fixed in the pinned version).
wrangler.on("exit", (code, signal) => {
  if (!stopping) console.error(`shardgate: wrangler dev exited (${signal ?? code}); stopping`);
  process.exit(stopping ? 0 : (code ?? 1));
});

// The console's own origin: a second workerd serving web/dist and /config.json on the console port.
mkdirSync(stateDir, { recursive: true });
const { unstable_readConfig } = await import("wrangler");
const wranglerConfig = unstable_readConfig({ config: join(root, "wrangler.toml") }, { hideWarnings: true });
// The region wrangler.toml's [vars] set (SHARDGATE_REGION): the console signs with it, the banner says it.
const region = wranglerConfig.vars?.SHARDGATE_REGION || "us-east-1";
const consoleCapnp = join(stateDir, "console.capnp");
const consoleHost = opts.ip.includes(":") ? `[${opts.ip}]` : opts.ip;
writeFileSync(
  consoleCapnp,
  consoleOnlyConfig({
    wrangler: wranglerConfig,
    configDir: stateDir,
    assetsDir: resolve(root, wranglerConfig.assets?.directory ?? "web/dist"),
    assetsWorker: join(root, "scripts/workerd/console-assets.js"),
    address: `${consoleHost}:${consolePort}`,
    consoleConfig: { gatewayPort: Number(opts.port), region },
  }),
);
const consoleServer = spawn(join(root, "node_modules/workerd/bin/workerd"), ["serve", consoleCapnp], {
  cwd: stateDir,
  stdio: ["ignore", "inherit", "inherit"],
});
consoleServer.on("exit", (code, signal) => {
  if (!stopping) console.error(`shardgate: the console's workerd exited (${signal ?? code})`);
});

const shutdown = () => {
  stopping = true;
  consoleServer.kill("SIGTERM");
  wrangler.kill("SIGTERM");
  setTimeout(() => process.exit(0), 3000).unref();
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);

const base = `http://${opts.ip}:${opts.port}`;
if (!(await waitHealthy(`${base}/_shardgate/health`, { timeoutMs: 120_000, gone: () => wrangler.exitCode !== null }))) {
  console.error("shardgate: wrangler dev did not come up within 2 minutes");
  shutdown();
} else if (!opts.quiet) {
  printBanner({
    base,
    port: opts.port,
    credentials,
    credentialsFrom: configured ? undefined : "generated",
    region,
    runtime: "wrangler dev, for development",
    dataDir: stateDir,
    consoleBase: `http://${consoleHost}:${consolePort}`,
  });
}
