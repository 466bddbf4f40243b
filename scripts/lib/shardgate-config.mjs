// The self-hosted gateway's own configuration (docs/self-hosting.md): a small JSON file, every field
// optional. What it does not set comes from wrangler.toml's [vars] (geometry, chunk size, …).
//
//   {
//     "listen": "127.0.0.1:8787",            // where clients connect
//     "region": "us-east-1",                 // the region clients sign for (SHARDGATE_REGION), the console too
//     "consolePort": 8788,                   // the web console's own origin, on the listen address (default: port + 1)
//     "dataDir": ".shardgate",               // metadata (Durable Objects) and disk nodes live here
//     "dataShards": 4, "parityShards": 2,    // k + m
//     "processes": 1,                        // workerd processes on the listen address (docs/self-hosting.md)
//     "nodes": [                             // default: six disk nodes NODE_0 … NODE_5 under dataDir/nodes
//       { "id": "NODE_0", "type": "disk" },                      // path defaults to dataDir/nodes/<id>
//       { "id": "far", "type": "disk", "path": "/mnt/disk2/shardgate" },
//       { "id": "s3a", "type": "s3", "endpoint": "http://10.0.0.5:9000", "bucket": "shards",
//         "region": "us-east-1", "accessKeyId": "…", "secretAccessKey": "…",
//         "clientUrls": true }                 // clients reach it too: direct-path shard files go straight to it
//     ],
//     "credentials": { "accessKeyId": "…", "secretAccessKey": "…" },   // the S3 API's root key
//     "masterKey": "…",                      // seals other access keys' secrets (default: dataDir/master.key, made once)
//     "tls": { "cert": "cert.pem", "key": "key.pem" },                  // serve HTTPS (PEM files, relative to this file)
//     "cacheMiB": 1024,                      // the block cache on disk under dataDir/cache (0: off; default 1024 with an S3 node, else 0)
//     "vars": { "SHARDGATE_INLINE_BYTES": "4096" }                      // any other Worker var
//   }
//
// Every key is checked against SCHEMA below: an unknown key is an error naming its path and the
// nearest valid key, a value of the wrong type names its path, what was expected and what it got;
// all problems of a file are reported together, on one line (ConfigError).
//
// Credentials from the environment (SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY) win over
// the file; without either, the gateway makes a root key at its first start and keeps it in the data
// directory (scripts/lib/serving.mjs rootKey). The public secret of old, set by hand, is refused on
// any address but loopback (publicKeyRefusal).
import { existsSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, resolve } from "node:path";
import { parseArgs } from "node:util";
import { untrustedPath } from "./private-path.mjs";
import { publicKeyRefusal } from "./serving.mjs";
import { checkVars, isS3NodeSecret, KINDS, nearest, SECRET_VARS, shown, VAR_KINDS } from "./worker-vars.mjs";

const DEFAULT_NODES = 6;
const MAX_PROCESSES = 64;
const MIN_MASTER_KEY_LENGTH = 32; // worker/src/auth/secret-box.ts

/** A configuration that cannot be served: its message is the one line `npm start` prints. */
export class ConfigError extends Error {}

// The schema of shardgate.json. A field is [type, extra check?]; objects list their keys.
const str = { type: "string" };
const bool = { type: "boolean" };
const port = { type: "integer", min: 1, max: 65535, expected: "a port number (1-65535)" };
const count = { type: "integer", min: 1, expected: "a positive integer" };
const DISK_NODE = { id: str, type: str, path: str };
const S3_NODE = { id: str, type: str, endpoint: str, bucket: str, region: str, accessKeyId: str, secretAccessKey: str, clientUrls: bool };
export const SCHEMA = {
  listen: str,
  region: str,
  consolePort: port,
  dataDir: str,
  dataShards: count,
  parityShards: count,
  processes: { type: "integer", min: 1, max: MAX_PROCESSES, expected: `an integer from 1 to ${MAX_PROCESSES}` },
  nodes: { type: "array" },
  credentials: { type: "object", keys: { accessKeyId: str, secretAccessKey: str }, required: ["accessKeyId", "secretAccessKey"] },
  masterKey: str,
  tls: { type: "object", keys: { cert: str, key: str }, required: ["cert", "key"] },
  cacheMiB: { type: "integer", min: 0, max: 1 << 24, expected: "a size in MiB (0: no block cache)" },
  vars: { type: "object" },
};

/** The block cache's size when shardgate.json does not say (docs/operations.md "The block cache"). */
const DEFAULT_CACHE_MIB = 1024;

/** Vars that a key of the file sets (they would be overwritten): the key to use instead. */
const VARS_OF_KEYS = {
  SHARDGATE_NODES: "nodes",
  SHARDGATE_DISK_NODES: "nodes",
  SHARDGATE_S3_NODES: "nodes",
  SHARDGATE_DATA_SHARDS: "dataShards",
  SHARDGATE_PARITY_SHARDS: "parityShards",
  SHARDGATE_ACCESS_KEY_ID: "credentials",
  SHARDGATE_SECRET_ACCESS_KEY: "credentials",
  SHARDGATE_MASTER_KEY: "masterKey",
  SHARDGATE_REGION: "region",
};

/** A path as messages show it: `nodes[2].endpoint`, odd keys quoted. */
const child = (path, key) =>
  typeof key === "number"
    ? `${path}[${key}]`
    : /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)
      ? path
        ? `${path}.${key}`
        : key
      : `${path}[${JSON.stringify(key.slice(0, 60))}]`;

const typeName = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);

/** A field's value as a message shows it: never the text of a credential or key. */
const shownAt = (path, value) => (/(secretAccessKey|accessKeyId|masterKey)$/.test(path) ? `a ${typeName(value)} (not shown)` : shown(value));

/** Problems of `value` against `field` at `path`, pushed to `problems`; true when it may be used. */
function checkField(value, field, path, problems) {
  if (field.type === "integer") {
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < (field.min ?? -Infinity) || value > (field.max ?? Infinity)) {
      problems.push(`${path}: expected ${field.expected ?? "an integer"}, got ${shownAt(path, value)}`);
      return false;
    }
    return true;
  }
  if (typeName(value) !== field.type) {
    const article = field.type === "array" || field.type === "object" || field.type === "integer" ? "an" : "a";
    problems.push(`${path}: expected ${article} ${field.type}, got ${shownAt(path, value)}`);
    return false;
  }
  if (field.type === "string" && value === "") {
    problems.push(`${path}: expected a non-empty string, got ""`);
    return false;
  }
  if (field.keys) return checkObject(value, field.keys, path, problems, field.required);
  return true;
}

/** An object's keys against `keys` (unknown ones named with the nearest known), then each value. */
function checkObject(obj, keys, path, problems, required = []) {
  const before = problems.length;
  for (const [key, value] of Object.entries(obj)) {
    const at = child(path, key);
    if (!Object.hasOwn(keys, key)) {
      const near = nearest(key, Object.keys(keys));
      problems.push(`${at}: unknown key${near ? ` (did you mean "${near}"?)` : ""}`);
    } else checkField(value, keys[key], at, problems);
  }
  for (const key of required) if (!Object.hasOwn(obj, key)) problems.push(`${child(path, key)}: required, missing`);
  return problems.length === before;
}

/** The file's problems against SCHEMA (empty when it is well-formed). */
export function checkSchema(raw) {
  const problems = [];
  if (typeName(raw) !== "object") return [`expected a JSON object, got ${shown(raw)}`];
  checkObject(raw, SCHEMA, "", problems);
  if (typeof raw.region === "string" && !KINDS.region.ok(raw.region)) problems.push(`region: expected ${KINDS.region.expected}, got ${shown(raw.region)}`);
  if (Array.isArray(raw.nodes)) {
    if (raw.nodes.length === 0) problems.push("nodes: expected at least one node, got none (leave it out for the six default disk nodes)");
    raw.nodes.slice(0, 1000).forEach((n, i) => {
      const at = `nodes[${i}]`;
      if (typeName(n) !== "object") return problems.push(`${at}: expected an object, got ${shown(n)}`);
      if (n.type !== "disk" && n.type !== "s3") return problems.push(`${at}.type: expected "disk" or "s3", got ${shown(n.type)}`);
      const keys = n.type === "disk" ? DISK_NODE : S3_NODE;
      const required = n.type === "disk" ? ["id"] : ["id", "endpoint", "bucket", "accessKeyId", "secretAccessKey"];
      if (!checkObject(n, keys, at, problems, required)) return;
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(n.id)) problems.push(`${at}.id: expected 1-64 letters, digits, _ or -, got ${shown(n.id)}`);
      if (n.type === "s3" && !/^https?:\/\/[^/\s]+/.test(n.endpoint))
        problems.push(`${at}.endpoint: expected an http:// or https:// URL, got ${shown(n.endpoint)}`);
    });
    if (raw.nodes.length > 1000) problems.push(`nodes: expected at most 1000 nodes, got ${raw.nodes.length}`);
  }
  if (typeName(raw.vars) === "object") {
    for (const [name, value] of Object.entries(raw.vars)) {
      const at = child("vars", name);
      if (Object.hasOwn(VARS_OF_KEYS, name)) problems.push(`${at}: set by the key "${VARS_OF_KEYS[name]}" of this file: use that`);
      else if (!name.startsWith("SHARDGATE_") || (!Object.hasOwn(VAR_KINDS, name) && !isS3NodeSecret(name))) {
        const near = nearest(name, Object.keys(VAR_KINDS));
        problems.push(`${at}: unknown variable${near ? ` (did you mean ${near}?)` : ""}`);
      } else if (VAR_KINDS[name] === "binding") problems.push(`${at}: a binding, not a variable`);
      else if (typeof value !== "string" && !(typeof value === "number" && Number.isSafeInteger(value)))
        problems.push(`${at}: expected a string, got ${SECRET_VARS.includes(name) ? `a ${typeName(value)} (not shown)` : shown(value)}`);
      else problems.push(...checkVars({ [name]: String(value) }, { partial: true, prefix: "vars." }));
    }
  }
  if (typeof raw.masterKey === "string" && raw.masterKey.length < MIN_MASTER_KEY_LENGTH)
    problems.push(`masterKey: expected ${MIN_MASTER_KEY_LENGTH} characters or more, got ${raw.masterKey.length}`);
  return problems;
}

/**
 * @param {{ root: string, file?: string, overrides: { ip?: string, port?: string, dataDir?: string, consolePort?: string, processes?: string } }} opts
 * @returns the resolved configuration (absolute paths, validated); throws a ConfigError (one line) when it cannot be served
 */
export function loadShardgateConfig({ root, file, overrides }) {
  const path = file ? resolve(file) : resolve(root, "shardgate.json");
  if (file && !existsSync(path)) throw new ConfigError(`config file ${path} does not exist`);
  // A file or data directory another user can write is theirs to change: refused before it is read.
  const fileRefusal = untrustedPath(path, "config file");
  if (fileRefusal) throw new ConfigError(fileRefusal);
  const raw = existsSync(path) ? parseJson(path) : {};
  const problems = checkSchema(raw);
  if (problems.length) throw new ConfigError(`config ${path}: ${problems.join("; ")}`);
  const config = resolveConfig(raw, path, root, overrides);
  const dataRefusal = untrustedPath(config.dataDir, "data directory");
  if (dataRefusal) throw new ConfigError(dataRefusal);
  return config;
}

function resolveConfig(raw, path, root, overrides) {
  const fail = (message) => {
    throw new ConfigError(`config: ${message}`);
  };
  const dataDir = resolve(root, overrides.dataDir ?? raw.dataDir ?? ".shardgate");
  // The flags override the file's address part by part: --port alone keeps the file's host.
  const [fileIp, filePort] = raw.listen !== undefined ? splitListen(raw.listen) : ["127.0.0.1", 8787];
  const ip = overrides.ip ?? fileIp;
  const port = overrides.port !== undefined ? flagInt(overrides.port, "--port", 1, 65535) : filePort;
  // The console's listener: its own origin (docs/console.md). Unset, port + 1, or the next free port.
  const consolePortSet = overrides.consolePort !== undefined || raw.consolePort !== undefined;
  const consolePort = overrides.consolePort !== undefined ? flagInt(overrides.consolePort, "--console-port", 1, 65535) : (raw.consolePort ?? port + 1);
  if (consolePort === port || consolePort > 65535) fail(`consolePort must be a port other than the gateway's (${port})`);
  const dataShards = raw.dataShards ?? 4;
  const parityShards = raw.parityShards ?? 2;
  const processes = overrides.processes !== undefined ? flagInt(overrides.processes, "--processes", 1, MAX_PROCESSES) : (raw.processes ?? 1);
  const nodes = (raw.nodes ?? Array.from({ length: DEFAULT_NODES }, (_, i) => ({ id: `NODE_${i}`, type: "disk" }))).map((n) => node(n, dataDir));
  const ids = new Set(nodes.map((n) => n.id));
  if (ids.size !== nodes.length) fail("node ids must be unique");
  if (nodes.length < dataShards + parityShards) fail(`${dataShards}+${parityShards} needs at least ${dataShards + parityShards} nodes, have ${nodes.length}`);
  const env = process.env;
  const fromEnv = [env.SHARDGATE_ACCESS_KEY_ID, env.SHARDGATE_SECRET_ACCESS_KEY].filter(Boolean).length;
  if (fromEnv === 1) fail("SHARDGATE_ACCESS_KEY_ID and SHARDGATE_SECRET_ACCESS_KEY must be set together (one of them is empty or unset)");
  const [credentials, credentialsFrom] =
    fromEnv === 2
      ? [{ accessKeyId: env.SHARDGATE_ACCESS_KEY_ID, secretAccessKey: env.SHARDGATE_SECRET_ACCESS_KEY }, "the environment (SHARDGATE_SECRET_ACCESS_KEY)"]
      : raw.credentials
        ? [raw.credentials, `"credentials" in ${path}`]
        : [null, "generated"];
  const refusal = publicKeyRefusal([ip], credentials);
  if (refusal) throw new ConfigError(refusal);
  if (env.SHARDGATE_MASTER_KEY !== undefined && env.SHARDGATE_MASTER_KEY.length < MIN_MASTER_KEY_LENGTH)
    fail(`SHARDGATE_MASTER_KEY (environment) must be ${MIN_MASTER_KEY_LENGTH} characters or more, got ${env.SHARDGATE_MASTER_KEY.length}`);
  return {
    file: existsSync(path) ? path : null,
    ip,
    port,
    consolePort,
    consolePortSet,
    dataDir,
    region: raw.region ?? "us-east-1",
    dataShards,
    parityShards,
    processes,
    nodes,
    /** null: DATA/credentials, made at the first start (scripts/lib/serving.mjs rootKey) once the configuration passed. */
    credentials,
    /** Where the secret came from: "generated" (DATA/credentials), else a phrase naming the place. */
    credentialsFrom,
    /** null: DATA/master.key, made at the first start (scripts/lib/serving.mjs masterKey) once the configuration passed. */
    masterKey: env.SHARDGATE_MASTER_KEY || raw.masterKey || null,
    tls: tlsFiles(raw.tls, dirname(path)),
    /** MiB of verified blocks kept under dataDir/cache; by default only where a node is remote. */
    cacheMiB: raw.cacheMiB ?? (nodes.some((n) => n.type === "s3") ? DEFAULT_CACHE_MIB : 0),
    vars: Object.fromEntries(Object.entries(raw.vars ?? {}).map(([k, v]) => [k, String(v)])),
  };
}

/** A flag's integer value in [min, max], else a ConfigError naming the flag. */
function flagInt(value, flag, min, max) {
  const n = /^[0-9]{1,6}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw new ConfigError(`${flag}: expected an integer from ${min} to ${max}, got ${shown(value)}`);
  return n;
}

/** The certificate chain and private key files HTTPS is served with (PEM), or null for plain HTTP. */
function tlsFiles(tls, base) {
  if (tls === undefined) return null;
  const files = { cert: resolve(base, tls.cert), key: resolve(base, tls.key) };
  for (const [name, file] of Object.entries(files)) if (!existsSync(file)) throw new ConfigError(`config: tls.${name}: file ${file} does not exist`);
  return files;
}

function parseJson(path) {
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`config file ${path}: ${e.message.split("\n")[0]}`);
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    // Where, not what: the parser's message quotes the file, which may hold a secret.
    const at = /position (\d+)/.exec(e.message);
    const before = at ? text.slice(0, Number(at[1])).split("\n") : null;
    throw new ConfigError(`config file ${path}: not valid JSON${before ? ` (line ${before.length}, column ${before[before.length - 1].length + 1})` : ""}`);
  }
}

function splitListen(listen) {
  const m = /^(.+):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[2]) : 0;
  if (!m || port < 1 || port > 65535) throw new ConfigError(`config: listen: expected HOST:PORT (port 1-65535), got ${shown(listen)}`);
  return [m[1].replace(/^\[|\]$/g, ""), port];
}

function node(n, dataDir) {
  if (n.type === "disk") {
    const path = n.path ? (isAbsolute(n.path) ? n.path : resolve(dataDir, n.path)) : resolve(dataDir, "nodes", n.id);
    return { id: n.id, type: "disk", path };
  }
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

/**
 * The command line of a script, parsed by node:util's parseArgs; a flag it does not know, or one
 * without its value, is a ConfigError of one line naming the nearest valid flag. `deprecated` maps
 * old spellings to their flag: still taken, with a one-line notice on stderr.
 * @param {string[]} argv
 * @param {Record<string, { type: "string" | "boolean", multiple?: boolean, default?: unknown }>} options
 * @param {{ allowPositionals?: boolean, deprecated?: Record<string, string> }} [extra]
 */
export function parseFlags(argv, options, { allowPositionals = false, deprecated = {} } = {}) {
  const all = { ...options };
  for (const [old, flag] of Object.entries(deprecated)) all[old] = { ...options[flag], default: undefined };
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: all, allowPositionals, strict: true });
  } catch (e) {
    const message = String(e.message).split("\n")[0];
    const flag = /'(-{1,2}[^' ]*)/.exec(message)?.[1] ?? "";
    const known = Object.keys(options);
    if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
      const near = nearest(flag.replace(/^-+/, "").split("=")[0], [...known, ...Object.keys(deprecated)]);
      throw new ConfigError(
        `unknown flag ${shown(flag).slice(1, -1)}${near ? ` (did you mean --${deprecated[near] ?? near}?)` : ""}; flags: ${known.map((k) => `--${k}`).join(" ")}`,
      );
    }
    if (e.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE")
      throw new ConfigError(message.includes("argument missing") ? `${flag}: expects a value` : `${flag}: takes no value`);
    if (e.code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL")
      throw new ConfigError(`unexpected argument ${shown(/argument '([^']*)'/.exec(message)?.[1] ?? "")}: every option is a --flag`);
    throw new ConfigError(message);
  }
  const { values, positionals } = parsed;
  for (const [old, flag] of Object.entries(deprecated)) {
    if (values[old] === undefined) continue;
    console.error(`shardgate: --${old} is deprecated: use --${flag}`);
    if (values[flag] === undefined || values[flag] === options[flag]?.default) values[flag] = values[old];
    delete values[old];
  }
  return { values, positionals };
}
