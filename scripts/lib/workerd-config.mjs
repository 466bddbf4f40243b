// Generates the workerd configuration (Cap'n Proto text) that serves the gateway on plain workerd,
// from wrangler.toml (compatibility date and flags, Durable Object bindings and which classes use
// SQLite, vars) and the shardgate config (scripts/lib/shardgate-config.mjs):
//   - the gateway Worker: the bundle wrangler builds (scripts/lib/worker-bundle.mjs);
//   - its Durable Objects stored on local disk (dataDir/meta), SQLite-backed;
//   - one writable `disk` service per disk node, bound under the node's id (worker/src/storage/disk-node.ts);
//   - S3 nodes through the network, loopback and private addresses allowed (self-hosted nodes live there);
//   - the block cache's store (cacheMiB > 0): a small Worker over a writable disk service
//     (dataDir/cache, scripts/workerd/block-cache.js), the gateway's cacheApiOutbound; with
//     `--processes N`, the home process serves it to the others on a Unix socket (one cache);
//   - the console on a listener of its own (its own origin: no stored object is ever served there):
//     web/dist through a read-only disk service and a small Worker that sets Content-Types and
//     answers /config.json (scripts/workerd/console-assets.js).
//   - HTTPS on its listeners when the config names a certificate and key (`tls`), plain HTTP otherwise;
//   - with `--processes N` (`split`), one config for the home process (all of the above, and its
//     Durable Objects served to the others through the MetaGate entrypoint on a Unix socket in the
//     data directory, worker/src/meta/remote.ts) and one for the others (the gateway Worker and its
//     nodes only, the Durable Objects reached through that socket, no console).
import { relative } from "node:path";
import { isLoopback } from "../../bin/lib/local-key.mjs";
import { LOOPBACK_HOSTS } from "./serving.mjs";

/** A Cap'n Proto text literal. */
const text = (s) => JSON.stringify(String(s));

/**
 * @param {object} p
 * @param {object} p.wrangler  wrangler's parsed config (unstable_readConfig)
 * @param {object} p.config    the resolved shardgate config
 * @param {{ dir: string, modules: { name: string, type: "esModule" | "wasm" }[] }} p.bundle
 * @param {string} p.configDir where the config file is written (embeds are relative to it)
 * @param {string} p.assetsDir web/dist, or null for no console
 * @param {string} p.assetsWorker path of scripts/workerd/console-assets.js
 * @param {string} p.cacheWorker  path of scripts/workerd/block-cache.js
 * @param {string} p.address   where workerd listens (HOST:PORT)
 * @param {string} [p.consoleAddress] where the console listens (HOST:PORT)
 * @param {object} [p.consoleConfig]  what the console's /config.json is made from ({ gatewayPort } or { gateway }, and { region })
 * @param {{ role: "home" | "front", metaSocket: string, cacheSocket: string }} [p.split] one of several processes (--processes N)
 */
export function workerdConfig({ wrangler, config, bundle, configDir, assetsDir, assetsWorker, cacheWorker, address, consoleAddress, consoleConfig, split }) {
  const front = split?.role === "front";
  const embed = (path) => `embed ${text(relative(configDir, path))}`;
  const protocol = socketProtocol(config.tls, embed);
  const sqlite = new Set(wrangler.migrations.flatMap((m) => m.new_sqlite_classes ?? []));
  const durableObjects = wrangler.durable_objects.bindings;
  const diskNodes = config.nodes.filter((n) => n.type === "disk");

  const vars = workerVars(wrangler, config);
  const cached = vars.SHARDGATE_BLOCK_CACHE === "on";

  const bindings = [
    ...Object.entries(vars).map(([name, value]) => `(name = ${text(name)}, text = ${text(value)})`),
    ...(front
      ? [`(name = "SHARDGATE_META", service = "meta-home")`]
      : durableObjects.map((b) => `(name = ${text(b.name)}, durableObjectNamespace = ${text(b.class_name)})`)),
    ...diskNodes.map((n) => `(name = ${text(n.id)}, service = ${text(`node-${n.id}`)})`),
    ...(cached ? [`(name = "BLOCK_CACHE", service = "block-cache")`] : []),
  ];
  const services = [
    `(name = "gateway", worker = .gateway)`,
    front
      ? `(name = "meta-home", external = (address = ${text(`unix:${split.metaSocket}`)}, http = ()))`
      : `(name = "meta", disk = (path = ${text(`${config.dataDir}/meta`)}, writable = true))`,
    ...diskNodes.map((n) => `(name = ${text(`node-${n.id}`)}, disk = (path = ${text(n.path)}, writable = true))`),
    `(name = "network", network = (allow = ["public", "private", "local"], tlsOptions = (trustBrowserCas = true)))`,
    ...(cached ? cacheServices({ wrangler, config, embed, cacheWorker, front, split }) : []),
    ...(assetsDir && consoleAddress && !front ? consoleServices({ wrangler, embed, assetsDir, assetsWorker, consoleConfig }) : []),
  ];
  const sockets = [`(name = "http", address = ${text(address)}, ${protocol}, service = "gateway")`];
  if (assetsDir && consoleAddress && !front) sockets.push(`(name = "console", address = ${text(consoleAddress)}, ${protocol}, service = "console")`);
  if (split?.role === "home")
    sockets.push(`(name = "meta", address = ${text(`unix:${split.metaSocket}`)}, http = (), service = (name = "gateway", entrypoint = "MetaGate"))`);
  if (split?.role === "home" && cached) sockets.push(`(name = "cache", address = ${text(`unix:${split.cacheSocket}`)}, http = (), service = "block-cache")`);
  const storage = front
    ? ""
    : `
  durableObjectNamespaces = [
${indent(
  durableObjects.map((b) => `(className = ${text(b.class_name)}, uniqueKey = ${text(`shardgate-${b.class_name}`)}, enableSql = ${sqlite.has(b.class_name)})`),
  4,
)}
  ],
  durableObjectStorage = (localDisk = "meta"),`;
  const modules = bundle.modules.map((m) => `(name = ${text(m.name)}, ${m.type} = ${embed(`${bundle.dir}/${m.name}`)})`);

  return `# Generated by scripts/serve.mjs from wrangler.toml and the shardgate config: do not edit.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
${indent(services, 4)}
  ],
  sockets = [
${indent(sockets, 4)}
  ],
);

const gateway :Workerd.Worker = (
  modules = [
${indent(modules, 4)}
  ],
  compatibilityDate = ${text(wrangler.compatibility_date)},
  compatibilityFlags = [${(wrangler.compatibility_flags ?? []).map(text).join(", ")}],
  bindings = [
${indent(bindings, 4)}
  ],${storage}
  globalOutbound = "network",${
    cached
      ? `
  cacheApiOutbound = "block-cache",`
      : ""
  }
);
`;
}

/** The block cache's store: its Worker over dataDir/cache, or (a front process) the home's, through its socket. */
function cacheServices({ wrangler, config, embed, cacheWorker, front, split }) {
  if (front) return [`(name = "block-cache", external = (address = ${text(`unix:${split.cacheSocket}`)}, http = ()))`];
  const bindings = [`(name = "STORE", service = "block-cache-files")`, `(name = "MAX_BYTES", text = ${text(config.cacheMiB * 1024 * 1024)})`];
  return [
    `(name = "block-cache", worker = (modules = [(name = "block-cache.js", esModule = ${embed(cacheWorker)})], compatibilityDate = ${text(wrangler.compatibility_date)}, bindings = [${bindings.join(", ")}]))`,
    `(name = "block-cache-files", disk = (path = ${text(`${config.dataDir}/cache`)}, writable = true))`,
  ];
}

/**
 * The Worker's variables: wrangler.toml's [vars], the config's "vars", then what the config's own
 * keys set (nodes, k + m, region, credentials, master key; on a loopback address, the host names
 * the gateway answers to unless "vars" names them). scripts/serve.mjs checks them
 * (scripts/lib/worker-vars.mjs) before it starts workerd.
 * @param {object} wrangler @param {object} config the resolved shardgate config
 * @returns {Record<string, string>}
 */
export function workerVars(wrangler, config) {
  const diskNodes = config.nodes.filter((n) => n.type === "disk");
  const s3Nodes = config.nodes.filter((n) => n.type === "s3");
  const vars = {
    ...wrangler.vars,
    ...config.vars,
    SHARDGATE_NODES: config.nodes.map((n) => n.id).join(","),
    SHARDGATE_DATA_SHARDS: String(config.dataShards),
    SHARDGATE_PARITY_SHARDS: String(config.parityShards),
    SHARDGATE_REGION: config.region ?? wrangler.vars?.SHARDGATE_REGION ?? "us-east-1",
    SHARDGATE_ACCESS_KEY_ID: config.credentials.accessKeyId,
    SHARDGATE_SECRET_ACCESS_KEY: config.credentials.secretAccessKey,
    SHARDGATE_MASTER_KEY: config.masterKey,
  };
  // The block cache: on with a store (cacheMiB > 0), unless "vars" says otherwise; never on with none.
  vars.SHARDGATE_BLOCK_CACHE = config.cacheMiB > 0 ? (config.vars?.SHARDGATE_BLOCK_CACHE ?? "on") : "off";
  if (isLoopback(config.ip) && !vars.SHARDGATE_ALLOWED_HOSTS) vars.SHARDGATE_ALLOWED_HOSTS = LOOPBACK_HOSTS;
  if (diskNodes.length) vars.SHARDGATE_DISK_NODES = diskNodes.map((n) => n.id).join(",");
  if (s3Nodes.length) vars.SHARDGATE_S3_NODES = JSON.stringify(Object.fromEntries(s3Nodes.map(({ id, type: _, ...spec }) => [id, spec])));
  return vars;
}

/** The console's Worker and its files (scripts/workerd/console-assets.js). */
function consoleServices({ wrangler, embed, assetsDir, assetsWorker, consoleConfig }) {
  const bindings = [`(name = "FILES", service = "console-files")`, `(name = "CONSOLE_CONFIG", text = ${text(JSON.stringify(consoleConfig ?? {}))})`];
  return [
    `(name = "console", worker = (modules = [(name = "console-assets.js", esModule = ${embed(assetsWorker)})], compatibilityDate = ${text(wrangler.compatibility_date)}, bindings = [${bindings.join(", ")}]))`,
    `(name = "console-files", disk = (path = ${text(assetsDir)}, writable = false))`,
  ];
}

/**
 * A workerd configuration that serves only the console, on `address`: what `npm run dev` runs
 * beside wrangler dev (one port per origin), with the same Worker as `npm start`.
 */
export function consoleOnlyConfig({ wrangler, configDir, assetsDir, assetsWorker, address, consoleConfig }) {
  const embed = (path) => `embed ${text(relative(configDir, path))}`;
  return `# Generated by scripts/dev.mjs: the web console on its own origin. Do not edit.
using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
${indent(consoleServices({ wrangler, embed, assetsDir, assetsWorker, consoleConfig }), 4)}
  ],
  sockets = [(name = "console", address = ${text(address)}, http = (), service = "console")],
);
`;
}

/**
 * How a socket speaks: HTTPS with the configured certificate chain and private key (PEM files,
 * embedded when workerd reads its config: the key is not copied), or plain HTTP.
 * @param {{ cert: string, key: string } | null | undefined} tls
 */
function socketProtocol(tls, embed) {
  if (!tls) return "http = ()";
  return `https = (options = (), tlsOptions = (keypair = (privateKey = ${embed(tls.key)}, certificateChain = ${embed(tls.cert)})))`;
}

function indent(lines, n) {
  return lines.map((l) => " ".repeat(n) + l).join(",\n");
}
