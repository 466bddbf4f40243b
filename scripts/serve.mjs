// `npm start`: serves the gateway on plain workerd, the production runtime for self-hosting
// (docs/self-hosting.md). It bundles the Worker (scripts/lib/worker-bundle.mjs), writes a workerd
// config into the data directory (scripts/lib/workerd-config.mjs: Durable Objects in SQLite on
// local disk, one disk service per disk node, S3 nodes over the network, the console on a listener
// of its own) and runs `workerd serve` on the configured address. Nothing stands between clients
// and workerd. The console has its own origin (the console port, default port + 1): no stored
// object is ever served there (docs/console.md).
//
//   node scripts/serve.mjs [--config shardgate.json] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--quiet]
import { spawn } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort, portAvailable } from "./lib/free-port.mjs";
import { consoleOriginsFor, printBanner, restrictDirectories, waitHealthy } from "./lib/serving.mjs";
import { loadShardgateConfig } from "./lib/shardgate-config.mjs";
import { workerBundle } from "./lib/worker-bundle.mjs";
import { workerdConfig } from "./lib/workerd-config.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));

const { values: opts } = parseArgs({
  options: {
    config: { type: "string" },
    ip: { type: "string" },
    port: { type: "string" },
    "console-port": { type: "string" },
    "data-dir": { type: "string" },
    quiet: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
});
if (opts.help) {
  console.log("usage: node scripts/serve.mjs [--config shardgate.json] [--ip IP] [--port PORT] [--console-port PORT] [--data-dir DIR] [--quiet]");
  process.exit(0);
}

// Everything the gateway writes (metadata, shard files on disk nodes, its config, the master key)
// is its owner's alone: files 0600, directories 0700, workerd's included (it inherits the umask).
process.umask(0o077);

let config;
try {
  config = loadShardgateConfig({
    root,
    file: opts.config,
    overrides: {
      dataDir: opts["data-dir"],
      listen: opts.ip || opts.port ? `${opts.ip ?? "127.0.0.1"}:${opts.port ?? 8787}` : undefined,
      consolePort: opts["console-port"],
    },
  });
} catch (e) {
  console.error(`shardgate: ${e.message}`);
  process.exit(1);
}
// Port + 1 by default; when that one is taken (and none was asked for), the next free port.
let consolePort = config.consolePort;
if (!config.consolePortSet && !(await portAvailable(config.ip, consolePort))) {
  consolePort = await freePort(config.ip);
  if (!opts.quiet) console.error(`shardgate: port ${config.consolePort} is taken: the console is served on port ${consolePort}`);
}
// The gateway answers CORS for the console's origins (never "*"), unless shardgate.json's vars name them.
const consoleVars = { SHARDGATE_CONSOLE_ORIGIN: consoleOriginsFor(config.ip, consolePort, config.tls ? "https" : "http").join(","), ...config.vars };
const { unstable_readConfig } = await import("wrangler");
const wrangler = unstable_readConfig({ config: join(root, "wrangler.toml") }, { hideWarnings: true });

const diskPaths = config.nodes.filter((n) => n.type === "disk").map((n) => n.path);
for (const dir of [join(config.dataDir, "meta"), ...diskPaths]) mkdirSync(dir, { recursive: true });
// What an earlier version made before the umask above: the metadata whole, the node directories.
restrictDirectories([config.dataDir, join(config.dataDir, "nodes"), ...diskPaths], [join(config.dataDir, "meta")]);
const host = config.ip.includes(":") ? `[${config.ip}]` : config.ip;
const address = `${host}:${config.port}`;
const capnp = join(config.dataDir, "workerd.capnp");
writeFileSync(
  capnp,
  workerdConfig({
    wrangler,
    config: { ...config, vars: consoleVars },
    bundle: workerBundle(root),
    configDir: config.dataDir,
    assetsDir: wrangler.assets?.directory ? resolve(root, wrangler.assets.directory) : null,
    assetsWorker: join(root, "scripts/workerd/console-assets.js"),
    address,
    consoleAddress: `${host}:${consolePort}`,
    consoleConfig: { gatewayPort: config.port, gateway: config.vars.SHARDGATE_GATEWAY_URL },
  }),
  { mode: 0o600 }, // it holds the credentials
);
chmodSync(capnp, 0o600);

let stopping = false;
const workerd = spawn(join(root, "node_modules/workerd/bin/workerd"), ["serve", capnp, "--experimental"], {
  cwd: config.dataDir,
  stdio: ["ignore", "inherit", "inherit"],
});
workerd.on("exit", (code, signal) => {
  if (!stopping) console.error(`shardgate: workerd exited (${signal ?? code})`);
  process.exit(stopping ? 0 : (code ?? 1));
});
const shutdown = () => {
  stopping = true;
  workerd.kill("SIGTERM");
  setTimeout(() => process.exit(0), 3000).unref();
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);

// A wildcard address is reached on loopback.
const local = `${config.tls ? "https" : "http"}://${config.ip === "0.0.0.0" ? "127.0.0.1" : config.ip === "::" ? "[::1]" : host}:${config.port}`;
if (!(await waitHealthy(`${local}/_shardgate/health`, { timeoutMs: 60_000, gone: () => workerd.exitCode !== null }))) {
  console.error("shardgate: workerd did not come up within 60 s");
  shutdown();
} else if (!opts.quiet) {
  const consoleBase = `${local.slice(0, local.lastIndexOf(":"))}:${consolePort}`;
  printBanner({ base: local, port: config.port, credentials: config.credentials, runtime: "plain workerd", dataDir: config.dataDir, consoleBase });
}
