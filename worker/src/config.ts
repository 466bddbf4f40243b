// The gateway's configuration, read once per isolate from the Worker's vars and secrets
// (wrangler.toml [vars]; secrets in production). Invalid configuration fails loudly at the first
// request rather than storing data with a geometry nobody meant.
/// <reference path="./env.d.ts" />
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

/**
 * What each Worker variable holds: the schema every SHARDGATE_* variable is checked against
 * (checkVars). A variable of this prefix that is not named here is an error naming the nearest
 * one. scripts/lib/shardgate-config.mjs checks shardgate.json's "vars" against the same table
 * (VAR_KINDS there; tests/worker/config-vars.test.ts keeps the two equal).
 */
export const VAR_KINDS = {
  SHARDGATE_NODES: "ids",
  SHARDGATE_S3_NODES: "json",
  SHARDGATE_DISK_NODES: "ids",
  SHARDGATE_DRAINING_NODES: "ids",
  SHARDGATE_NODE_DELAY_MS: "json",
  SHARDGATE_DATA_SHARDS: "count",
  SHARDGATE_PARITY_SHARDS: "count",
  SHARDGATE_BLOCK_BYTES: "count",
  SHARDGATE_CHUNK_BYTES: "count",
  SHARDGATE_INLINE_BYTES: "count",
  SHARDGATE_WRITE_QUORUM: "count",
  SHARDGATE_REGION: "region",
  SHARDGATE_NODE_STALL_MS: "ms",
  SHARDGATE_READ_STALL_MS: "ms",
  SHARDGATE_JOB_INTERVAL_MS: "ms",
  SHARDGATE_ORPHAN_SWEEP_MS: "ms",
  SHARDGATE_ORPHAN_GRACE_MS: "ms0",
  SHARDGATE_ACCESS_KEY_ID: "text",
  SHARDGATE_SECRET_ACCESS_KEY: "text",
  SHARDGATE_MASTER_KEY: "text",
  SHARDGATE_METRICS_TOKEN: "text",
  SHARDGATE_SIGV2: "switch",
  SHARDGATE_CLIENT_IP_HEADER: "header",
  SHARDGATE_CONSOLE_ORIGIN: "text",
  SHARDGATE_GATEWAY_URL: "url",
  SHARDGATE_VIRTUAL_HOST_SUFFIX: "host",
  SHARDGATE_DIRECT_PART_BYTES: "count",
  SHARDGATE_DIRECT_SESSION_MS: "ms",
  SHARDGATE_DIRECT_VERIFY_BLOCKS: "count",
  SHARDGATE_SCRUB_MODE: "scrubMode",
  SHARDGATE_SCRUB_OBJECTS_PER_RUN: "count",
  SHARDGATE_SCRUB_MS_PER_RUN: "ms",
  SHARDGATE_SCRUB_MOVE_MIB_PER_RUN: "count",
  SHARDGATE_META: "binding",
} as const;

/** Variables without a default: the gateway cannot serve without them. */
const REQUIRED_VARS = ["SHARDGATE_NODES", "SHARDGATE_DATA_SHARDS", "SHARDGATE_PARITY_SHARDS", "SHARDGATE_BLOCK_BYTES", "SHARDGATE_CHUNK_BYTES"];

/** What a value of each kind must be, for the messages; and the check. */
const KINDS: Record<string, { expected: string; ok: (v: string) => boolean }> = {
  count: { expected: "a positive integer", ok: (v) => /^[0-9]{1,15}$/.test(v) && Number(v) > 0 },
  ms: { expected: "a positive integer of milliseconds", ok: (v) => /^[0-9]{1,15}$/.test(v) && Number(v) > 0 },
  ms0: { expected: "an integer of milliseconds, 0 or more", ok: (v) => /^[0-9]{1,15}$/.test(v) },
  ids: { expected: "comma-separated node ids", ok: (v) => v.split(",").every((id) => /^\s*[A-Za-z0-9_-]{1,64}\s*$/.test(id) || id.trim() === "") },
  json: { expected: "a JSON object", ok: (v) => isJsonObject(v) },
  text: { expected: "a non-empty string", ok: (v) => v.length > 0 },
  region: { expected: 'a region name such as "us-east-1"', ok: (v) => /^[a-z0-9][a-z0-9-]{0,62}$/.test(v) },
  switch: { expected: '"on" or "off"', ok: (v) => v === "on" || v === "off" },
  header: { expected: "an HTTP header name", ok: (v) => /^[A-Za-z0-9-]{1,64}$/.test(v) },
  url: { expected: "an http:// or https:// URL", ok: (v) => /^https?:\/\/[^/\s]+/.test(v) },
  host: { expected: "a host name", ok: (v) => /^[A-Za-z0-9.-]{1,253}$/.test(v) },
  scrubMode: { expected: '"deep" or "shallow"', ok: (v) => v === "deep" || v === "shallow" },
};

function isJsonObject(v: string): boolean {
  try {
    const parsed: unknown = JSON.parse(v);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

/** An S3 node's credentials as secrets of their own: SHARDGATE_S3_NODE_<ID>_ACCESS_KEY_ID / _SECRET_ACCESS_KEY. */
function isS3NodeSecret(name: string): boolean {
  return name.startsWith("SHARDGATE_S3_NODE_") && (name.endsWith("_ACCESS_KEY_ID") || name.endsWith("_SECRET_ACCESS_KEY"));
}

/** A value as a message shows it: quoted, cut short, control characters escaped. */
/** Variables whose values may hold a secret: a message names their length, never their text. */
export const SECRET_VARS: readonly string[] = ["SHARDGATE_S3_NODES", "SHARDGATE_SECRET_ACCESS_KEY", "SHARDGATE_MASTER_KEY", "SHARDGATE_METRICS_TOKEN"];

/** Variable `name`'s value as a message shows it: shown(), or only its length for one that may hold a secret. */
export function shownVar(name: string, v: string): string {
  return SECRET_VARS.includes(name) ? `a value of ${v.length} characters (not shown: it may hold a secret)` : shown(v);
}

export function shown(v: unknown): string {
  const s = typeof v === "string" ? JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}…` : v) : String(v);
  return s.length > 90 ? `${s.slice(0, 90)}…` : s;
}

/**
 * Every problem with the SHARDGATE_* variables of `vars` against VAR_KINDS: unknown names (with the
 * nearest known one), values of the wrong kind, required ones missing (unless `partial`).
 */
export function checkVars(vars: Record<string, unknown>, partial = false): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined || !name.startsWith("SHARDGATE_") || isS3NodeSecret(name)) continue;
    const kind = (VAR_KINDS as Record<string, string>)[name];
    if (kind === undefined) {
      const near = nearest(name, Object.keys(VAR_KINDS));
      problems.push(`${name}: unknown variable${near ? ` (did you mean ${near}?)` : ""}`);
    } else if (kind !== "binding") {
      const spec = KINDS[kind];
      if (typeof value !== "string") problems.push(`${name}: expected a string, got ${typeof value}`);
      else if (spec && !spec.ok(value) && !(value === "" && !REQUIRED_VARS.includes(name)))
        problems.push(`${name}: expected ${spec.expected}, got ${shownVar(name, value)}`);
    }
  }
  if (!partial) for (const name of REQUIRED_VARS) if (vars[name] === undefined || vars[name] === "") problems.push(`${name}: required, not set`);
  return problems;
}

/**
 * The candidate nearest to `word` by edit distance (case-insensitive), if near enough to be a typo:
 * a third of the word's length, at least 2 and at most 3 edits (a swap of two neighbours is one).
 */
export function nearest(word: string, candidates: readonly string[]): string | null {
  const w = word.slice(0, 100).toLowerCase();
  let best: string | null = null;
  let bestDistance = Math.min(3, Math.max(2, Math.floor(w.length / 3))) + 1;
  for (const c of candidates) {
    const d = editDistance(w, c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  // A word cut short ("data" for "data-dir"): the candidate it begins.
  if (best === null && w.length >= 3) best = candidates.find((c) => c.toLowerCase().startsWith(w)) ?? null;
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions, swaps of neighbours. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      let d = Math.min((prev[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, (before[j - 2] ?? 0) + 1);
      row[j] = d;
    }
    before = prev;
    prev = row;
  }
  return prev[b.length] ?? 0;
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
