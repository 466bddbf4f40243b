// The gateway's configuration, read once per isolate from the Worker's vars and secrets
// (wrangler.toml [vars]; secrets in production). Invalid configuration fails loudly at the first
// request rather than storing data with a geometry nobody meant.
/// <reference path="./env.d.ts" />
import { errorText } from "./errors";
import { MIN_MASTER_KEY_LENGTH } from "./auth/secret-box";
import { checkVars, KINDS, parseReplicationTargets, parseWebhooks, type ReplicationTarget, shown, VAR_KINDS, type WebhookTarget } from "./config-vars";
import { metrics } from "./observability/metrics";
import { configureBlockCache } from "./storage/block-cache";
import { nodeHealth, GuardedNode } from "./shared/node-health";
import { DiskNode } from "./storage/disk-node";
import { CountedNode } from "./storage/counted-node";
import type { StorageNode } from "./shared/nodes";
import { R2Node } from "./storage/r2-node";
import { DelayedNode } from "./storage/delayed-node";
import { S3Node, type S3NodeSpec } from "./storage/s3-node";
import type { NodeOverlay, StoredS3Spec } from "./meta/node-overlay";
import type { RetryPolicy } from "./meta/outbox";

/** The Worker's bindings, vars and secrets (declared in env.d.ts). */
export type Env = Cloudflare.Env;

export interface GatewayConfig {
  /** Every configured node, in placement order: reads find shard files on any of them. */
  nodes: StorageNode[];
  /** The nodes new shard files go to: all but those being drained. */
  writableNodes: StorageNode[];
  /** The nodes of the Worker's vars (the others were added at runtime), and those the vars mark draining. */
  configuredNodes: { ids: readonly string[]; draining: readonly string[] };
  dataShards: number;
  parityShards: number;
  blockBytes: number;
  chunkBytes: number;
  inlineBytes: number;
  /** Shard files that must be written for a PUT to succeed (default k + 1). */
  writeQuorum: number;
  /** A node without progress for this long (ms) counts as failed for that request. */
  nodeStallMs: number;
  /** A read's shard stream silent for this long (ms) is dropped and read around. */
  readStallMs: number;
  region: string;
  /** Absent when no credentials are configured: every S3 request is then refused. */
  credentials: { accessKeyId: string; secretAccessKey: string } | undefined;
  virtualHostSuffix: string;
  /** Whether Signature Version 2 (header and presigned URLs) is accepted (SHARDGATE_SIGV2, default on). */
  sigV2: boolean;
  /** Whether GETs say `x-shardgate-cache: hit|miss` (SHARDGATE_CACHE_HEADER, default off; the cache itself: SHARDGATE_BLOCK_CACHE). */
  cacheHeader: boolean;
  /** The direct path: uploads and downloads that clients code themselves (docs/direct-path.md). */
  direct: { partBytes: number; sessionMs: number; verifyBlocks: number };
  /** SHARDGATE_MASTER_KEY when it is long enough (auth/secret-box.ts), else null: only the root key works. */
  masterKey: string | null;
  /** The bearer token GET /_shardgate/metrics also accepts (SHARDGATE_METRICS_TOKEN). */
  metricsToken: string | undefined;
  /** The header a reverse proxy sets to the client's address (SHARDGATE_CLIENT_IP_HEADER); unset: none is trusted. */
  clientIpHeader: string | undefined;
  /** Event notifications: the webhooks (SHARDGATE_WEBHOOKS), the Queue bindings' names (SHARDGATE_QUEUES), delivery's retries and cap (SHARDGATE_NOTIFY_*). */
  webhooks: Record<string, WebhookTarget>;
  queues: string[];
  notify: RetryPolicy;
  /** The remote S3 endpoints buckets may replicate to (SHARDGATE_REPLICATION_TARGETS). */
  replicationTargets: Record<string, ReplicationTarget>;
  /** What a scheduled scrub step does (SHARDGATE_SCRUB_*; an admin's run may ask for other values). */
  scrub: ScrubSettings;
}

/** What a scrub step does (services/scrub.ts): SHARDGATE_SCRUB_*, or what an admin asks for. */
export interface ScrubSettings {
  mode: "deep" | "shallow";
  maxObjects: number;
  maxMs: number;
  /** Rebalancing's rate limit: once a run has written this many MiB of shard files, it moves no
   *  more misplaced ones (bad ones are still rebuilt); the next run goes on. */
  moveMiB: number;
  /** Rebuild what is found bad (false: only report it; `POST /_shardgate/admin/scrub?heal=false`). */
  heal: boolean;
}

export const SCRUB_DEFAULTS: ScrubSettings = { mode: "deep", maxObjects: 1000, maxMs: 20_000, moveMiB: 1024, heal: true };

/** The configuration, parsed once per Worker env (one object per isolate). */
export const loadConfig = perEnv(parseConfig);

/** `parse(env)` once per Worker env; a parse that throws is not kept (it throws again next time). */
function perEnv<T>(parse: (env: Env) => T): (env: Env) => T {
  const kept = new WeakMap<Env, T>();
  return (env) => {
    if (!kept.has(env)) kept.set(env, parse(env));
    return kept.get(env) as T;
  };
}

/** A count or milliseconds, checked by its kind (checkedVar); `fallback` when unset or empty (a required one is set). */
function int<N extends keyof typeof VAR_KINDS>(env: { [K in N]?: string }, name: N, fallback = 0): number {
  return Number(checkedVar(env, name, String(fallback)));
}

/**
 * The configuration, or one Error whose message lists every problem found ("configuration: …";
 * several joined with "; "): the variables' schema first, then what the values must agree on.
 */
function parseConfig(env: Env): GatewayConfig {
  const vars = env as unknown as Record<string, unknown>;
  const schema = checkVars(vars);
  if (schema.length) throw configError(schema);
  const problems: string[] = [];
  /** Runs a check that throws its problem; the problem is kept and the result left undefined. */
  const attempt = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch (e) {
      problems.push(errorText(e).replace(/^configuration: /, ""));
      return undefined;
    }
  };
  const config = attempt(() => buildConfig(env, attempt));
  if (problems.length || !config) throw configError(problems);
  return config;
}

function configError(problems: string[]): Error {
  return new Error(problems.length === 1 ? `configuration: ${problems[0]}` : `configuration: ${problems.length} problems: ${problems.join("; ")}`);
}

function buildConfig(env: Env, attempt: <T>(f: () => T) => T | undefined): GatewayConfig {
  const ids = listOf(env.SHARDGATE_NODES);
  const s3Nodes = attempt(() => parseS3Nodes(env)) ?? new Map<string, S3NodeSpec>();
  const nodeStallMs = int(env, "SHARDGATE_NODE_STALL_MS", 30_000);
  const diskNodes = new Set(listOf(env.SHARDGATE_DISK_NODES));
  const delays = attempt(() => parseDelays(env.SHARDGATE_NODE_DELAY_MS, ids)) ?? new Map<string, number>();
  const nodes = ids.flatMap((id) => {
    const origin = attempt(() => originNode(env, id, s3Nodes, diskNodes, nodeStallMs));
    if (!origin) return [];
    const delay = delays.get(id);
    return [new GuardedNode(new CountedNode(delay ? new DelayedNode(origin, delay) : origin, metrics), nodeHealth(id))];
  });
  if (new Set(ids).size !== ids.length) attempt(() => fail("SHARDGATE_NODES names a node twice"));
  const draining = new Set(listOf(env.SHARDGATE_DRAINING_NODES));
  for (const id of draining) if (!ids.includes(id)) attempt(() => fail(`draining node ${id} is not in SHARDGATE_NODES`));
  const dataShards = int(env, "SHARDGATE_DATA_SHARDS");
  const parityShards = int(env, "SHARDGATE_PARITY_SHARDS");
  const writable = nodes.filter((n) => !draining.has(n.id));
  if (nodes.length === ids.length && writable.length < dataShards + parityShards) {
    attempt(() => fail(`${dataShards}+${parityShards} needs at least ${dataShards + parityShards} nodes that are not draining, have ${writable.length}`));
  }
  const writeQuorum = int(env, "SHARDGATE_WRITE_QUORUM", Math.min(dataShards + 1, dataShards + parityShards));
  if (writeQuorum < dataShards || writeQuorum > dataShards + parityShards) {
    attempt(() => fail(`SHARDGATE_WRITE_QUORUM must be between k and k + m (${dataShards} and ${dataShards + parityShards}), got ${writeQuorum}`));
  }
  attempt(() => jobIntervalMs(env));
  attempt(() => configureBlockCache(onOff(env.SHARDGATE_BLOCK_CACHE, false)));
  attempt(() => orphanSweepMs(env));
  const blockBytes = int(env, "SHARDGATE_BLOCK_BYTES");
  return {
    nodes,
    writableNodes: writable,
    configuredNodes: { ids, draining: [...draining] },
    dataShards,
    parityShards,
    blockBytes,
    chunkBytes: int(env, "SHARDGATE_CHUNK_BYTES"),
    inlineBytes: int(env, "SHARDGATE_INLINE_BYTES", 4096),
    writeQuorum,
    nodeStallMs,
    readStallMs: int(env, "SHARDGATE_READ_STALL_MS", 5_000),
    region: regionOf(env),
    credentials:
      env.SHARDGATE_ACCESS_KEY_ID && env.SHARDGATE_SECRET_ACCESS_KEY
        ? { accessKeyId: env.SHARDGATE_ACCESS_KEY_ID, secretAccessKey: env.SHARDGATE_SECRET_ACCESS_KEY }
        : undefined, // passed in by scripts/serve.mjs (configured, or made at its first start), never built in
    virtualHostSuffix: virtualHostSuffixOf(env),
    sigV2: onOff(env.SHARDGATE_SIGV2, true),
    cacheHeader: onOff(env.SHARDGATE_CACHE_HEADER, false),
    direct: {
      // Whole blocks: every part but the last codes the same way.
      partBytes: Math.ceil(int(env, "SHARDGATE_DIRECT_PART_BYTES", 16 * 1024 * 1024) / blockBytes) * blockBytes,
      // Shorter than the orphan sweep's grace: a session's files are never swept while it can commit.
      sessionMs: Math.min(int(env, "SHARDGATE_DIRECT_SESSION_MS", 6 * 3600 * 1000), Math.floor(orphanGraceMs(env) / 2)),
      verifyBlocks: int(env, "SHARDGATE_DIRECT_VERIFY_BLOCKS", 4),
    },
    masterKey: (env.SHARDGATE_MASTER_KEY ?? "").length >= MIN_MASTER_KEY_LENGTH ? (env.SHARDGATE_MASTER_KEY as string) : null,
    metricsToken: env.SHARDGATE_METRICS_TOKEN,
    clientIpHeader: env.SHARDGATE_CLIENT_IP_HEADER,
    // The schema (checkVars) has refused a value these parse to null.
    webhooks: parseWebhooks(env.SHARDGATE_WEBHOOKS) ?? {},
    queues: listOf(env.SHARDGATE_QUEUES),
    notify: {
      firstMs: int(env, "SHARDGATE_NOTIFY_RETRY_MS", 1000),
      maxMs: int(env, "SHARDGATE_NOTIFY_RETRY_MAX_MS", 3_600_000),
      attempts: int(env, "SHARDGATE_NOTIFY_ATTEMPTS", 30),
      cap: int(env, "SHARDGATE_NOTIFY_MAX_PENDING", 100_000),
      timeoutMs: int(env, "SHARDGATE_NOTIFY_TIMEOUT_MS", 5000),
    },
    replicationTargets: parseReplicationTargets(env.SHARDGATE_REPLICATION_TARGETS) ?? {},
    scrub: {
      mode: env.SHARDGATE_SCRUB_MODE === "shallow" ? "shallow" : SCRUB_DEFAULTS.mode, // the schema has refused any other value
      maxObjects: int(env, "SHARDGATE_SCRUB_OBJECTS_PER_RUN", SCRUB_DEFAULTS.maxObjects),
      maxMs: int(env, "SHARDGATE_SCRUB_MS_PER_RUN", SCRUB_DEFAULTS.maxMs),
      moveMiB: int(env, "SHARDGATE_SCRUB_MOVE_MIB_PER_RUN", SCRUB_DEFAULTS.moveMiB),
      heal: true,
    },
  };
}

// --- the node overlay ------------------------------------------------------------------------------
// The effective node set: the configured nodes and the overlay kept in the registry
// (meta/node-overlay.ts; changed by services/node-overlay.ts): S3 nodes added while the gateway
// runs, and every node's runtime state (active | draining). Every isolate keeps the overlay as a
// value (never a promise shared across requests):
//   - fresh for OVERLAY_FRESH_MS: requests use it with no metadata call;
//   - then, up to OVERLAY_MAX_AGE_MS, still used while one refresh runs off the request's path
//     (waitUntil); older than that (or never read), a request waits for one read;
//   - the isolate that makes a change installs the overlay the change answered at once.
// So a change reaches every isolate (every process of `--processes N`) within OVERLAY_MAX_AGE_MS.

export const OVERLAY_FRESH_MS = 2_000;
export const OVERLAY_MAX_AGE_MS = 5_000;

interface OverlayEntry {
  at: number;
  version: number;
  config: GatewayConfig;
  /** When the last off-path refresh began (0: none). */
  refreshing: number;
}

const overlays = new WeakMap<Env, OverlayEntry>();
/** Drivers of added nodes by id and stored spec: the same objects across refreshes. */
const addedDrivers = new Map<string, StorageNode>();
let overlayReadCount = 0;

/** How many times this isolate has read the node overlay from the registry (tests count round trips). */
export function overlayReads(): number {
  return overlayReadCount;
}

/** Where the overlay comes from: the registry, and the master key that opens added nodes' secrets (services/node-overlay.ts overlaySource). */
export interface OverlaySource {
  read(): Promise<NodeOverlay>;
  openSecret(id: string, sealed: string, master: string | null): Promise<string>;
}

/** The configuration with the node overlay applied, as of at most OVERLAY_MAX_AGE_MS ago. */
export async function gatewayConfig(env: Env, source: OverlaySource, waitUntil?: (p: Promise<unknown>) => void, now = Date.now()): Promise<GatewayConfig> {
  const base = loadConfig(env);
  const entry = overlays.get(env);
  if (entry && now - entry.at < OVERLAY_FRESH_MS) return entry.config;
  if (entry && waitUntil && now - entry.at < OVERLAY_MAX_AGE_MS) {
    if (now - entry.refreshing >= OVERLAY_FRESH_MS) {
      entry.refreshing = now;
      waitUntil(refreshOverlay(env, source, base).catch((e) => console.error(JSON.stringify({ nodeOverlay: { error: String(e) } }))));
    }
    return entry.config;
  }
  return refreshOverlay(env, source, base);
}

/** The configuration with the overlay as the registry holds it now (admin changes, walks, jobs). */
export function freshGatewayConfig(env: Env, source: OverlaySource): Promise<GatewayConfig> {
  return refreshOverlay(env, source, loadConfig(env));
}

async function refreshOverlay(env: Env, source: OverlaySource, base: GatewayConfig): Promise<GatewayConfig> {
  overlayReadCount++;
  return installOverlay(env, source, await source.read(), base);
}

/** Keeps `overlay` (as a change answered it, or as read) as this isolate's value unless a newer one is kept; the configuration with it. */
export async function installOverlay(env: Env, source: OverlaySource, overlay: NodeOverlay, base = loadConfig(env)): Promise<GatewayConfig> {
  const kept = overlays.get(env);
  if (kept && kept.version >= overlay.version) {
    if (kept.version === overlay.version) kept.at = Date.now();
    return kept.config;
  }
  const configured = new Set(base.nodes.map((n) => n.id));
  const added: StorageNode[] = [];
  for (const node of overlay.nodes) {
    if (node.spec === null || configured.has(node.id)) continue; // a configured node of the same id wins (docs/operations.md)
    const driver = await addedDriver(source, base, node.id, node.spec);
    if (driver) added.push(driver);
  }
  const draining = new Set(overlay.nodes.filter((n) => n.state === "draining").map((n) => n.id));
  const config = withNodes(base, added, draining);
  const latest = overlays.get(env);
  if (latest && latest.version > overlay.version) return latest.config;
  overlays.set(env, { at: Date.now(), version: overlay.version, config, refreshing: 0 });
  return config;
}

async function addedDriver(source: OverlaySource, base: GatewayConfig, id: string, specJson: string): Promise<StorageNode | null> {
  const key = `${id}\n${specJson}`;
  const known = addedDrivers.get(key);
  if (known) return known;
  try {
    const { endpoint, bucket, region, accessKeyId, clientUrls, sealedSecret } = JSON.parse(specJson) as StoredS3Spec;
    const secretAccessKey = await source.openSecret(id, sealedSecret, base.masterKey);
    const driver = s3NodeDriver(id, { endpoint, bucket, region, accessKeyId, secretAccessKey, clientUrls }, base.nodeStallMs);
    addedDrivers.set(key, driver);
    return driver;
  } catch (e) {
    // Left out (its shard files read as missing) rather than failing every request: logged.
    console.error(JSON.stringify({ nodeOverlay: { node: id, error: `added node not usable: ${errorText(e)}` } }));
    return null;
  }
}

/** An S3 node's driver as the configuration wraps every node: counted for metrics, behind its breaker. */
function s3NodeDriver(id: string, spec: S3NodeSpec, stallMs: number): StorageNode {
  return new GuardedNode(new CountedNode(new S3Node(id, spec, stallMs), metrics), nodeHealth(id));
}

/**
 * The configuration with the node overlay applied (services/node-overlay.ts): nodes added at
 * runtime after the configured ones, and `draining` (runtime states) on top of the vars' draining nodes.
 */
function withNodes(base: GatewayConfig, added: readonly StorageNode[], draining: ReadonlySet<string>): GatewayConfig {
  const nodes = [...base.nodes, ...added.filter((n) => !base.nodes.some((c) => c.id === n.id))];
  const fromVars = new Set(base.configuredNodes.draining);
  return { ...base, nodes, writableNodes: nodes.filter((n) => !draining.has(n.id) && !fromVars.has(n.id)) };
}

function fail(message: string): never {
  throw new Error(`configuration: ${message}`);
}

/** Variable `name` checked by its kind in the schema (config-vars.ts), also where loadConfig has not run (the scheduler); `fallback` when unset or empty. */
function checkedVar<N extends keyof typeof VAR_KINDS>(env: { [K in N]?: string }, name: N, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const kind = KINDS[VAR_KINDS[name]];
  if (kind && !kind.ok(raw)) fail(`${name}: expected ${kind.expected}, got ${shown(raw)}`);
  return raw;
}

/** The region the gateway signs and answers in (SHARDGATE_REGION, default us-east-1): also what the console signs with. */
export function regionOf(env: Pick<Env, "SHARDGATE_REGION">): string {
  return checkedVar(env, "SHARDGATE_REGION", "us-east-1");
}

/** The host suffix of virtual-hosted style requests (SHARDGATE_VIRTUAL_HOST_SUFFIX, default localhost): read before the configuration by website hosts. */
export function virtualHostSuffixOf(env: Pick<Env, "SHARDGATE_VIRTUAL_HOST_SUFFIX">): string {
  return env.SHARDGATE_VIRTUAL_HOST_SUFFIX || "localhost";
}

/** What the console's /config.json says (console.ts): the gateway's URL as the console reaches it (SHARDGATE_GATEWAY_URL) and the region. */
export function consoleSettings(env: Env): { gateway: string | null; region: string } {
  return { gateway: env.SHARDGATE_GATEWAY_URL ?? null, region: regionOf(env) };
}

/** Hosts mapped to buckets by SHARDGATE_WEBSITE_HOSTS (a JSON object, `{"www.example.com": "site"}`), lower case (api/website.ts). */
export const websiteHosts = perEnv((env): ReadonlyMap<string, string> => {
  const hosts = new Map<string, string>();
  try {
    const parsed: unknown = JSON.parse(env.SHARDGATE_WEBSITE_HOSTS || "{}");
    if (parsed !== null && typeof parsed === "object") {
      for (const [host, bucket] of Object.entries(parsed)) if (typeof bucket === "string") hosts.set(host.toLowerCase(), bucket);
    }
  } catch {
    // config-vars.ts refuses a value that is no JSON object before the Worker serves
  }
  return hosts;
});

/**
 * The origins of SHARDGATE_CONSOLE_ORIGIN (comma-separated, each exactly `scheme://host[:port]`;
 * api/http/console-origin.ts). `*` or anything that is not one origin fails loudly: a wildcard
 * would let any page use the console's CORS answers.
 */
export const consoleOrigins = perEnv((env): readonly string[] =>
  listOf(env.SHARDGATE_CONSOLE_ORIGIN).map((o) => {
    let url: URL | null = null;
    try {
      url = new URL(o);
    } catch {
      // answered below
    }
    if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== o.replace(/\/$/, "").toLowerCase())
      fail(`SHARDGATE_CONSOLE_ORIGIN must list origins (scheme://host[:port]), got ${JSON.stringify(o)}`);
    return url.origin;
  }),
);

/** "on" or "off" (the schema has refused anything else); `fallback` when unset or empty. */
function onOff(raw: string | undefined, fallback: boolean): boolean {
  return raw ? raw === "on" : fallback;
}

function originNode(env: Env, id: string, s3Nodes: Map<string, S3NodeSpec>, diskNodes: Set<string>, stallMs: number): StorageNode {
  const binding = (env as unknown as Record<string, unknown>)[id];
  // Named explicitly: a service binding is an RPC stub that seems to have every method an R2 binding has.
  if (diskNodes.has(id)) {
    if (!isFetcher(binding)) throw new Error(`configuration: disk node ${id} has no service binding of that name`);
    return new DiskNode(id, binding);
  }
  if (isR2Bucket(binding)) return new R2Node(id, binding);
  const spec = s3Nodes.get(id);
  if (spec) return new S3Node(id, spec, stallMs);
  throw new Error(`configuration: node ${id} is neither an R2 bucket binding, a disk service binding nor in SHARDGATE_S3_NODES`);
}

function parseS3Nodes(env: Env): Map<string, S3NodeSpec> {
  // The schema (checkVars) has refused a value that is no JSON object.
  const raw = JSON.parse(env.SHARDGATE_S3_NODES || "{}") as Record<string, Record<string, unknown>>;
  const vars = env as unknown as Record<string, unknown>;
  const nodes = new Map<string, S3NodeSpec>();
  for (const [id, value] of Object.entries(raw)) {
    const secret = (name: string) => vars[`SHARDGATE_S3_NODE_${id.toUpperCase().replace(/-/g, "_")}_${name}`];
    const field = (name: string, fallback?: unknown) => {
      const v = value?.[name] ?? fallback;
      if (typeof v !== "string" || v === "") throw new Error(`configuration: S3 node ${id} needs ${name}`);
      return v;
    };
    nodes.set(id, {
      endpoint: field("endpoint"),
      bucket: field("bucket"),
      region: field("region", "us-east-1"),
      accessKeyId: field("accessKeyId", secret("ACCESS_KEY_ID")),
      secretAccessKey: field("secretAccessKey", secret("SECRET_ACCESS_KEY")),
      clientUrls: value?.clientUrls === true,
    });
  }
  return nodes;
}

function parseDelays(raw: string | undefined, ids: readonly string[]): Map<string, number> {
  const delays = new Map<string, number>();
  // The schema (checkVars) has refused a value that is no JSON object.
  for (const [id, ms] of Object.entries(JSON.parse(raw || "{}") as Record<string, unknown>)) {
    if (!ids.includes(id)) fail(`SHARDGATE_NODE_DELAY_MS names ${id}, which is not in SHARDGATE_NODES`);
    if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms < 0) fail(`SHARDGATE_NODE_DELAY_MS for ${id} must be whole milliseconds`);
    delays.set(id, ms);
  }
  return delays;
}

/** A comma-separated variable's items, trimmed (unset or empty: none). */
function listOf(csv: string | undefined): string[] {
  return (csv ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function isR2Bucket(v: unknown): v is R2Bucket {
  return typeof v === "object" && v !== null && "put" in v && "get" in v && "head" in v;
}

function isFetcher(v: unknown): v is Fetcher {
  return typeof v === "object" && v !== null && "fetch" in v && typeof v.fetch === "function";
}

/** SHARDGATE_JOB_INTERVAL_MS: time between background job runs (default 15 minutes); a bad value throws. */
export const jobIntervalMs = (env: Env): number => int(env, "SHARDGATE_JOB_INTERVAL_MS", 15 * 60_000);
/** SHARDGATE_ORPHAN_GRACE_MS: files younger than this are never swept (default a day). */
export const orphanGraceMs = (env: Env): number => int(env, "SHARDGATE_ORPHAN_GRACE_MS", 24 * 3600_000);
/** SHARDGATE_ORPHAN_SWEEP_MS: time between the background jobs' orphan sweeps (default a day). */
export const orphanSweepMs = (env: Env): number => int(env, "SHARDGATE_ORPHAN_SWEEP_MS", 24 * 3600_000);

// --- the host names the gateway answers to ------------------------------------------------------
// A gateway on loopback is reachable by every web page the machine's browser opens: a page of
// another site whose name the attacker re-points at 127.0.0.1 (DNS rebinding) would be on the
// gateway's own origin. So, when SHARDGATE_ALLOWED_HOSTS is set (`npm start` and `npm run dev` set
// it on a loopback address), a request is answered only when its host is one of:
//   - a loopback name: localhost, *.localhost, 127.0.0.0/8, [::1] (no attacker's site has one);
//   - a name the list holds (`*.example.com`: any name under example.com);
//   - a name the gateway is configured with: the virtual-host suffix and the names under it, the
//     website hosts, the console's origins and SHARDGATE_GATEWAY_URL.
// Unset (Cloudflare, where routes decide which hosts reach the Worker): every host is answered.

interface HostAllowlist {
  names: ReadonlySet<string>;
  /** ".example.com": any name ending so. */
  under: readonly string[];
}

/** A host name as a URL's hostname has it (lower case, an IP address in its one spelling), or null. */
function hostnameOf(host: string): string | null {
  try {
    return new URL(`http://${host}/`).hostname;
  } catch {
    return null;
  }
}

const hostAllowlist = perEnv((env): HostAllowlist | null => {
  if (!env.SHARDGATE_ALLOWED_HOSTS) return null;
  const names = new Set<string>();
  const under: string[] = [];
  const suffix = virtualHostSuffixOf(env);
  const listed = env.SHARDGATE_ALLOWED_HOSTS.split(",").map((h) => h.trim());
  for (const entry of [...listed, suffix, `*.${suffix}`, ...configuredHosts(env)]) {
    const wildcard = entry.startsWith("*.");
    const name = hostnameOf(wildcard ? entry.slice(2) : entry);
    if (name === null || name === "") continue; // config-vars.ts refuses such a value before the Worker serves
    if (wildcard) under.push(`.${name}`);
    else names.add(name);
  }
  return { names, under };
});

/** The hosts of the website hosts (JSON object keys), the console's origins and the gateway's URL. */
function configuredHosts(env: Env): string[] {
  const hosts = [...websiteHosts(env).keys()];
  for (const url of [...(env.SHARDGATE_CONSOLE_ORIGIN ?? "").split(","), env.SHARDGATE_GATEWAY_URL ?? ""]) {
    try {
      hosts.push(new URL(url.trim()).hostname);
    } catch {
      // empty or not a URL: nothing to add (consoleOrigins refuses a bad console origin)
    }
  }
  return hosts;
}

/** Whether `hostname` (a request URL's hostname) names this machine's loopback interface. */
function isLoopbackName(hostname: string): boolean {
  if (hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]") return true;
  // A URL's hostname has an IPv4 address as four decimal numbers, an IPv4-mapped one in hex.
  return /^127\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$/.test(hostname) || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(hostname);
}

/** Whether the gateway answers a request for `hostname` (a request URL's hostname): see above. */
export function hostAllowed(env: Env, hostname: string): boolean {
  const list = hostAllowlist(env);
  if (list === null || isLoopbackName(hostname) || list.names.has(hostname)) return true;
  return list.under.some((end) => hostname.endsWith(end));
}
