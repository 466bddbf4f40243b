// The self-hosted gateway's own configuration (docs/self-hosting.md): a small JSON file, every field
// optional. What it does not set comes from wrangler.toml's [vars] (geometry, chunk size, …).
//
//   {
//     "listen": "127.0.0.1:8787",            // where clients connect
//     "consolePort": 8788,                   // the web console's own origin, on the listen address (default: port + 1)
//     "dataDir": ".shardgate",               // metadata (Durable Objects) and disk nodes live here
//     "dataShards": 4, "parityShards": 2,    // k + m
//     "processes": 1,                        // workerd processes on the listen address (docs/self-hosting.md)
//     "nodes": [                             // default: six disk nodes NODE_0 … NODE_5 under dataDir/nodes
//       { "id": "NODE_0", "type": "disk" },                      // path defaults to dataDir/nodes/<id>
//       { "id": "far", "type": "disk", "path": "/mnt/disk2/shardgate" },
//       { "id": "s3a", "type": "s3", "endpoint": "http://10.0.0.5:9000", "bucket": "shards",
//         "region": "us-east-1", "accessKeyId": "…", "secretAccessKey": "…",
//         "clientUrls": true }                 // clients reach it too: browser-path shard files go straight to it
//     ],
//     "credentials": { "accessKeyId": "…", "secretAccessKey": "…" },   // the S3 API's root key
//     "masterKey": "…",                      // seals other access keys' secrets (default: dataDir/master.key, made once)
//     "tls": { "cert": "cert.pem", "key": "key.pem" },                  // serve HTTPS (PEM files, relative to this file)
//     "vars": { "SHARDGATE_INLINE_BYTES": "4096" }                      // any other Worker var
//   }
//
// Credentials from the environment (SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY) win over
// the file; without either, the local defaults are used and said so, on loopback only: on any other
// address they are refused (defaultKeysRefusal).
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { defaultKeysRefusal, LOCAL_DEFAULTS, masterKey } from "./serving.mjs";

const DEFAULT_NODES = 6;
const MAX_PROCESSES = 64;

/**
 * @param {{ root: string, file?: string, overrides: { listen?: string, dataDir?: string, consolePort?: string, processes?: string } }} opts
 * @returns the resolved configuration (absolute paths, validated)
 */
export function loadShardgateConfig({ root, file, overrides }) {
  const path = file ? resolve(file) : resolve(root, "shardgate.json");
  if (file && !existsSync(path)) throw new Error(`config file ${path} does not exist`);
  const raw = existsSync(path) ? parseJson(path) : {};
  const dataDir = resolve(root, overrides.dataDir ?? raw.dataDir ?? ".shardgate");
  const listen = overrides.listen ?? raw.listen ?? "127.0.0.1:8787";
  const [ip, port] = splitListen(listen);
  // The console's listener: its own origin (docs/console.md). Unset, port + 1, or the next free port.
  const consolePortSet = overrides.consolePort !== undefined || raw.consolePort !== undefined;
  const consolePort = consolePortSet ? positive(Number(overrides.consolePort ?? raw.consolePort), "consolePort") : port + 1;
  if (consolePort === port || consolePort > 65535) throw new Error(`config: consolePort must be a port other than the gateway's (${port})`);
  const dataShards = positive(raw.dataShards ?? 4, "dataShards");
  const parityShards = positive(raw.parityShards ?? 2, "parityShards");
  const processes = positive(Number(overrides.processes ?? raw.processes ?? 1), "processes");
  if (processes > MAX_PROCESSES) throw new Error(`config: processes must be at most ${MAX_PROCESSES}`);
  const nodes = (raw.nodes ?? Array.from({ length: DEFAULT_NODES }, (_, i) => ({ id: `NODE_${i}`, type: "disk" }))).map((n) => node(n, dataDir));
  const ids = new Set(nodes.map((n) => n.id));
  if (ids.size !== nodes.length) throw new Error("config: node ids must be unique");
  if (nodes.length < dataShards + parityShards)
    throw new Error(`config: ${dataShards}+${parityShards} needs at least ${dataShards + parityShards} nodes, have ${nodes.length}`);
  const env = process.env;
  const credentials =
    env.SHARDGATE_ACCESS_KEY_ID && env.SHARDGATE_SECRET_ACCESS_KEY
      ? { accessKeyId: env.SHARDGATE_ACCESS_KEY_ID, secretAccessKey: env.SHARDGATE_SECRET_ACCESS_KEY }
      : (raw.credentials ?? LOCAL_DEFAULTS);
  if (!credentials.accessKeyId || !credentials.secretAccessKey) throw new Error("config: credentials need accessKeyId and secretAccessKey");
  const refusal = defaultKeysRefusal([ip], credentials);
  if (refusal) throw new Error(refusal);
  const master = env.SHARDGATE_MASTER_KEY || raw.masterKey || masterKey(dataDir);
  return {
    file: existsSync(path) ? path : null,
    ip,
    port,
    consolePort,
    consolePortSet,
    dataDir,
    dataShards,
    parityShards,
    processes,
    nodes,
    credentials,
    masterKey: master,
    tls: tlsFiles(raw.tls, dirname(path)),
    vars: stringVars(raw.vars ?? {}),
  };
}

/** The certificate chain and private key files HTTPS is served with (PEM), or null for plain HTTP. */
function tlsFiles(tls, base) {
  if (tls === undefined || tls === null) return null;
  if (typeof tls?.cert !== "string" || typeof tls?.key !== "string" || !tls.cert || !tls.key)
    throw new Error('config: tls needs "cert" and "key", the paths of PEM files');
  const files = { cert: resolve(base, tls.cert), key: resolve(base, tls.key) };
  for (const [name, file] of Object.entries(files)) if (!existsSync(file)) throw new Error(`config: tls ${name} file ${file} does not exist`);
  return files;
}

function parseJson(path) {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new Error(`config file ${path}: ${e.message}`);
  }
}

function splitListen(listen) {
  const m = /^(.*):(\d+)$/.exec(listen);
  if (!m) throw new Error(`config: listen must be HOST:PORT, got ${listen}`);
  return [m[1].replace(/^\[|\]$/g, ""), Number(m[2])];
}

function positive(n, name) {
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`config: ${name} must be a positive integer`);
  return n;
}

function node(n, dataDir) {
  if (typeof n?.id !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(n.id))
    throw new Error(`config: node id ${JSON.stringify(n?.id)} must be 1-64 letters, digits, _ or -`);
  if (n.type === "disk") {
    const path = n.path ? (isAbsolute(n.path) ? n.path : resolve(dataDir, n.path)) : resolve(dataDir, "nodes", n.id);
    return { id: n.id, type: "disk", path };
  }
  if (n.type === "s3") {
    for (const f of ["endpoint", "bucket", "accessKeyId", "secretAccessKey"])
      if (typeof n[f] !== "string" || !n[f]) throw new Error(`config: S3 node ${n.id} needs ${f}`);
    return {
      id: n.id,
      type: "s3",
      endpoint: n.endpoint,
      bucket: n.bucket,
      region: n.region ?? "us-east-1",
      accessKeyId: n.accessKeyId,
      secretAccessKey: n.secretAccessKey,
      clientUrls: n.clientUrls === true,
    };
  }
  throw new Error(`config: node ${n.id} has type ${JSON.stringify(n.type)}; expected "disk" or "s3"`);
}

function stringVars(vars) {
  return Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, String(v)]));
}
