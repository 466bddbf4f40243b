// The gateway's configuration, read once per isolate from the Worker's vars and secrets
// (wrangler.toml [vars]; secrets in production). Invalid configuration fails loudly at the first
// request rather than storing data with a geometry nobody meant.
/// <reference path="./env.d.ts" />
import { checkVars, KINDS, shown } from "./config-vars";
import { metrics } from "./observability/metrics";
import { nodeHealth, GuardedNode } from "./shared/node-health";
import { DiskNode } from "./storage/disk-node";
import { CountedNode } from "./storage/counted-node";
import type { StorageNode } from "./shared/nodes";
import { R2Node } from "./storage/r2-node";
import { DelayedNode } from "./storage/delayed-node";
import { S3Node, type S3NodeSpec } from "./storage/s3-node";

/** The Worker's bindings, vars and secrets (declared in env.d.ts). */
export type Env = Cloudflare.Env;

export interface GatewayConfig {
  /** Every configured node, in placement order: reads find shard files on any of them. */
  nodes: StorageNode[];
  /** The nodes new shard files go to: all but those being drained. */
  writableNodes: StorageNode[];
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
  /** The browser path: uploads and downloads that clients code themselves (docs/browser-path.md). */
  direct: { partBytes: number; sessionMs: number; verifyBlocks: number };
}

const cache = new WeakMap<Env, GatewayConfig>();

export function loadConfig(env: Env): GatewayConfig {
  let config = cache.get(env);
  if (!config) {
    config = parseConfig(env);
    cache.set(env, config);
  }
  return config;
}

function int(env: Env, name: keyof Env, fallback?: number): number {
  const raw = env[name];
  if ((raw === undefined || raw === "") && fallback !== undefined) return fallback;
  const n = Number(raw);
  if (typeof raw !== "string" || !Number.isSafeInteger(n) || n <= 0) {
    throw new Error(`configuration: ${String(name)} must be a positive integer, got ${shown(raw)}`);
  }
  return n;
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
      problems.push((e instanceof Error ? e.message : String(e)).replace(/^configuration: /, ""));
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
  const ids = (env.SHARDGATE_NODES ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const s3Nodes = attempt(() => parseS3Nodes(env)) ?? new Map<string, S3NodeSpec>();
  const nodeStallMs = int(env, "SHARDGATE_NODE_STALL_MS", 30_000);
  const diskNodes = idList(env.SHARDGATE_DISK_NODES);
  const delays = attempt(() => parseDelays(env.SHARDGATE_NODE_DELAY_MS, ids)) ?? new Map<string, number>();
  const nodes = ids.flatMap((id) => {
    const origin = attempt(() => originNode(env, id, s3Nodes, diskNodes, nodeStallMs));
    if (!origin) return [];
    const delay = delays.get(id);
    return [new GuardedNode(new CountedNode(delay ? new DelayedNode(origin, delay) : origin, metrics), nodeHealth(id))];
  });
  if (new Set(ids).size !== ids.length) attempt(() => fail("SHARDGATE_NODES names a node twice"));
  const draining = idList(env.SHARDGATE_DRAINING_NODES);
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
  attempt(() => orphanSweepMs(env));
  const blockBytes = int(env, "SHARDGATE_BLOCK_BYTES");
  return {
    nodes,
    writableNodes: writable,
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
        : undefined, // local defaults are passed in by scripts/serve.mjs, never built in
    virtualHostSuffix: env.SHARDGATE_VIRTUAL_HOST_SUFFIX || "localhost",
    sigV2: parseSwitch(env.SHARDGATE_SIGV2, "SHARDGATE_SIGV2", true),
    direct: {
      // Whole blocks: every part but the last codes the same way.
      partBytes: Math.ceil(int(env, "SHARDGATE_DIRECT_PART_BYTES", 16 * 1024 * 1024) / blockBytes) * blockBytes,
      // Shorter than the orphan sweep's grace: a session's files are never swept while it can commit.
      sessionMs: Math.min(int(env, "SHARDGATE_DIRECT_SESSION_MS", 6 * 3600 * 1000), Math.floor(orphanGraceMs(env) / 2)),
      verifyBlocks: int(env, "SHARDGATE_DIRECT_VERIFY_BLOCKS", 4),
    },
  };
}

function fail(message: string): never {
  throw new Error(`configuration: ${message}`);
}

/** The region the gateway signs and answers in (SHARDGATE_REGION, default us-east-1): also what the console signs with. */
export function regionOf(env: Pick<Env, "SHARDGATE_REGION">): string {
  const region = env.SHARDGATE_REGION || "us-east-1";
  if (!KINDS.region?.ok(region)) fail(`SHARDGATE_REGION: expected ${KINDS.region?.expected}, got ${shown(region)}`);
  return region;
}

function parseSwitch(raw: string | undefined, name: string, fallback: boolean): boolean {
  if (raw === undefined || raw === "") return fallback;
  if (raw === "on") return true;
  if (raw === "off") return false;
  throw new Error(`configuration: ${name} must be on or off, got ${raw}`);
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
  if (!env.SHARDGATE_S3_NODES) return new Map();
  let raw: unknown;
  try {
    raw = JSON.parse(env.SHARDGATE_S3_NODES);
  } catch {
    throw new Error("configuration: SHARDGATE_S3_NODES is not valid JSON");
  }
  if (typeof raw !== "object" || raw === null) throw new Error("configuration: SHARDGATE_S3_NODES must be a JSON object");
  const vars = env as unknown as Record<string, unknown>;
  const nodes = new Map<string, S3NodeSpec>();
  for (const [id, value] of Object.entries(raw as Record<string, Record<string, unknown>>)) {
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
  if (!raw) return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error("configuration: SHARDGATE_NODE_DELAY_MS is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null) throw new Error('configuration: SHARDGATE_NODE_DELAY_MS must be a JSON object {"node": ms}');
  const delays = new Map<string, number>();
  for (const [id, ms] of Object.entries(parsed)) {
    if (!ids.includes(id)) throw new Error(`configuration: SHARDGATE_NODE_DELAY_MS names ${id}, which is not in SHARDGATE_NODES`);
    if (typeof ms !== "number" || !Number.isSafeInteger(ms) || ms < 0)
      throw new Error(`configuration: SHARDGATE_NODE_DELAY_MS for ${id} must be whole milliseconds`);
    delays.set(id, ms);
  }
  return delays;
}

function idList(csv: string | undefined): Set<string> {
  return new Set(
    (csv ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  );
}

function isR2Bucket(v: unknown): v is R2Bucket {
  return typeof v === "object" && v !== null && "put" in v && "get" in v && "head" in v;
}

function isFetcher(v: unknown): v is Fetcher {
  return typeof v === "object" && v !== null && "fetch" in v && typeof v.fetch === "function";
}

const DAY_MS = 24 * 3600 * 1000;

/** Default time between background job runs (SHARDGATE_JOB_INTERVAL_MS overrides it). */
const DEFAULT_JOB_INTERVAL_MS = 15 * 60_000;

/** SHARDGATE_JOB_INTERVAL_MS: time between background job runs (default 15 minutes); a bad value throws. */
export function jobIntervalMs(env: Env): number {
  return positiveMs(env.SHARDGATE_JOB_INTERVAL_MS, "SHARDGATE_JOB_INTERVAL_MS", DEFAULT_JOB_INTERVAL_MS, false);
}

/** SHARDGATE_ORPHAN_GRACE_MS: files younger than this are never swept (default a day). */
export function orphanGraceMs(env: Env): number {
  return positiveMs(env.SHARDGATE_ORPHAN_GRACE_MS, "SHARDGATE_ORPHAN_GRACE_MS", DAY_MS, true);
}

/** SHARDGATE_ORPHAN_SWEEP_MS: time between the background jobs' orphan sweeps (default a day). */
export function orphanSweepMs(env: Env): number {
  return positiveMs(env.SHARDGATE_ORPHAN_SWEEP_MS, "SHARDGATE_ORPHAN_SWEEP_MS", DAY_MS, false);
}

/** Milliseconds from a variable: its default when unset or empty, an error when not a whole number (never the default in silence). */
function positiveMs(raw: string | undefined, name: string, fallback: number, zeroOk: boolean): number {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!/^[0-9]{1,15}$/.test(raw) || !Number.isSafeInteger(n) || (zeroOk ? n < 0 : n <= 0))
    fail(`${name}: expected ${zeroOk ? "an integer of milliseconds, 0 or more" : "a positive integer of milliseconds"}, got ${shown(raw)}`);
  return n;
}
