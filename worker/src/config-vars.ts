// The Worker's variables: what each SHARDGATE_* variable holds, and the check of a set of them.
// One schema for both sides: the Worker checks its environment with it (config.ts loadConfig), and
// `npm start` checks the variables it is about to pass before workerd starts
// (scripts/lib/shardgate-config.mjs, scripts/serve.mjs), importing this file as it is (Node strips
// its types). So: no imports, and only TypeScript that Node can strip.

/**
 * What each Worker variable holds: the schema every SHARDGATE_* variable is checked against
 * (checkVars). A variable of this prefix that is not named here is an error naming the nearest one.
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
  SHARDGATE_BLOCK_CACHE: "switch",
  SHARDGATE_CACHE_HEADER: "switch",
  SHARDGATE_CLIENT_IP_HEADER: "header",
  SHARDGATE_CONSOLE_ORIGIN: "text",
  SHARDGATE_GATEWAY_URL: "url",
  SHARDGATE_VIRTUAL_HOST_SUFFIX: "host",
  SHARDGATE_WEBSITE_HOSTS: "json",
  SHARDGATE_ALLOWED_HOSTS: "hosts",
  SHARDGATE_DIRECT_PART_BYTES: "count",
  SHARDGATE_DIRECT_SESSION_MS: "ms",
  SHARDGATE_DIRECT_VERIFY_BLOCKS: "count",
  SHARDGATE_SCRUB_MODE: "scrubMode",
  SHARDGATE_SCRUB_OBJECTS_PER_RUN: "count",
  SHARDGATE_SCRUB_MS_PER_RUN: "ms",
  SHARDGATE_SCRUB_MOVE_MIB_PER_RUN: "count",
  SHARDGATE_META: "binding",
  SHARDGATE_WEBHOOKS: "webhooks",
  SHARDGATE_QUEUES: "bindingNames",
  SHARDGATE_REPLICATION_TARGETS: "replicationTargets",
  SHARDGATE_NOTIFY_RETRY_MS: "ms",
  SHARDGATE_NOTIFY_RETRY_MAX_MS: "ms",
  SHARDGATE_NOTIFY_ATTEMPTS: "count",
  SHARDGATE_NOTIFY_MAX_PENDING: "count",
  SHARDGATE_NOTIFY_TIMEOUT_MS: "ms",
} as const;

/** Variables without a default: the gateway cannot serve without them. */
export const REQUIRED_VARS: readonly string[] = [
  "SHARDGATE_NODES",
  "SHARDGATE_DATA_SHARDS",
  "SHARDGATE_PARITY_SHARDS",
  "SHARDGATE_BLOCK_BYTES",
  "SHARDGATE_CHUNK_BYTES",
];

const digits = (v: string) => /^[0-9]{1,15}$/.test(v);
/** A comma-separated list whose items (trimmed) each match `item` or are empty. */
const listOf = (item: RegExp) => (v: string) => v.split(",").every((x) => item.test(x.trim()) || x.trim() === "");

/** What a value of each kind must be (for the messages), and the check. */
export const KINDS: Record<string, { expected: string; ok: (v: string) => boolean }> = {
  count: { expected: "a positive integer", ok: (v) => digits(v) && Number(v) > 0 },
  ms: { expected: "a positive integer of milliseconds", ok: (v) => digits(v) && Number(v) > 0 },
  ms0: { expected: "an integer of milliseconds, 0 or more", ok: digits },
  ids: { expected: "comma-separated node ids", ok: listOf(/^[A-Za-z0-9_-]{1,64}$/) },
  bindingNames: { expected: "comma-separated binding names", ok: listOf(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/) },
  json: { expected: "a JSON object", ok: (v) => isJsonObject(v) },
  text: { expected: "a non-empty string", ok: (v) => v.length > 0 },
  region: { expected: 'a region name such as "us-east-1"', ok: (v) => /^[a-z0-9][a-z0-9-]{0,62}$/.test(v) },
  switch: { expected: '"on" or "off"', ok: (v) => v === "on" || v === "off" },
  header: { expected: "an HTTP header name", ok: (v) => /^[A-Za-z0-9-]{1,64}$/.test(v) },
  url: { expected: "an http:// or https:// URL", ok: (v) => /^https?:\/\/[^/\s]+/.test(v) },
  host: { expected: "a host name", ok: (v) => /^[A-Za-z0-9.-]{1,253}$/.test(v) },
  hosts: {
    expected: "comma-separated host names (*.example.com for every name under one)",
    ok: listOf(/^(\*\.)?(\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9.-]{1,253})$/),
  },
  scrubMode: { expected: '"deep" or "shallow"', ok: (v) => v === "deep" || v === "shallow" },
  webhooks: { expected: 'a JSON object {"<name>": {"url": "http(s)://…", "secret": "…"}}', ok: (v) => parseWebhooks(v) !== null },
  replicationTargets: {
    expected: 'a JSON object {"<name>": {"endpoint": "http(s)://…", "region": "…", "accessKeyId": "…", "secretAccessKey": "…"}}',
    ok: (v) => parseReplicationTargets(v) !== null,
  },
};

/** A webhook target of event notifications: where events are POSTed, and the secret that signs them. */
export interface WebhookTarget {
  url: string;
  secret: string;
}

/**
 * A JSON object of targets by name (1-64 of A-Z a-z 0-9 _ -), each an object that `one` reads (null:
 * not such a target); unset or empty: none. Null when the value is not such an object (checkVars
 * reports it).
 */
function parseNamedTargets<T>(raw: string | undefined, one: (fields: Record<string, unknown>) => T | null): Record<string, T> | null {
  if (raw === undefined || raw === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null;
  const targets: Record<string, T> = Object.create(null);
  for (const [name, fields] of Object.entries(parsed)) {
    const target = /^[A-Za-z0-9_-]{1,64}$/.test(name) && typeof fields === "object" && fields !== null ? one(fields as Record<string, unknown>) : null;
    if (target === null) return null;
    targets[name] = target;
  }
  return targets;
}

/** SHARDGATE_WEBHOOKS: the event notification targets the operator configured, each an http(s) URL and a non-empty secret. */
export function parseWebhooks(raw: string | undefined): Record<string, WebhookTarget> | null {
  return parseNamedTargets(raw, ({ url, secret }) =>
    typeof url === "string" && /^https?:\/\/[^/\s]+/.test(url) && typeof secret === "string" && secret.length > 0 ? { url, secret } : null,
  );
}

/** A remote S3 endpoint that buckets may replicate to: where, and the credentials the gateway signs with. */
export interface ReplicationTarget {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
}

/**
 * SHARDGATE_REPLICATION_TARGETS: the remote S3 endpoints the operator lets buckets replicate to,
 * each an http(s) endpoint (path-style requests), an optional region (default us-east-1) and an
 * access key. A rule names a target, never its credentials.
 */
export function parseReplicationTargets(raw: string | undefined): Record<string, ReplicationTarget> | null {
  return parseNamedTargets(raw, ({ endpoint, region = "us-east-1", accessKeyId, secretAccessKey }) => {
    if (typeof endpoint !== "string" || !/^https?:\/\/[^/\s]+/.test(endpoint) || typeof region !== "string" || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(region))
      return null;
    if (typeof accessKeyId !== "string" || accessKeyId === "" || typeof secretAccessKey !== "string" || secretAccessKey === "") return null;
    return { endpoint: endpoint.replace(/\/+$/, ""), region, accessKeyId, secretAccessKey };
  });
}

function isJsonObject(v: string): boolean {
  try {
    const parsed: unknown = JSON.parse(v);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed);
  } catch {
    return false;
  }
}

/** An S3 node's credentials as secrets of their own: SHARDGATE_S3_NODE_<ID>_ACCESS_KEY_ID / _SECRET_ACCESS_KEY. */
export function isS3NodeSecret(name: string): boolean {
  return name.startsWith("SHARDGATE_S3_NODE_") && (name.endsWith("_ACCESS_KEY_ID") || name.endsWith("_SECRET_ACCESS_KEY"));
}

/** Variables whose values may hold a secret: a message names their length, never their text. */
export const SECRET_VARS: readonly string[] = [
  "SHARDGATE_S3_NODES",
  "SHARDGATE_SECRET_ACCESS_KEY",
  "SHARDGATE_MASTER_KEY",
  "SHARDGATE_METRICS_TOKEN",
  "SHARDGATE_WEBHOOKS",
  "SHARDGATE_REPLICATION_TARGETS",
];

/** Variable `name`'s value as a message shows it: shown(), or only its length for one that may hold a secret. */
export function shownVar(name: string, v: unknown): string {
  return SECRET_VARS.includes(name) && typeof v === "string" ? `a value of ${v.length} characters (not shown: it may hold a secret)` : shown(v);
}

/** A value as a message shows it: quoted, cut short, control characters escaped. */
export function shown(v: unknown): string {
  if (Array.isArray(v)) return "an array";
  if (v !== null && typeof v === "object") return "an object";
  const s = typeof v === "string" ? JSON.stringify(v.length > 80 ? `${v.slice(0, 80)}…` : v) : String(v);
  return s.length > 90 ? `${s.slice(0, 90)}…` : s;
}

/**
 * Every problem with the SHARDGATE_* variables of `vars` against VAR_KINDS: unknown names (with the
 * nearest known one), values of the wrong kind, and unless `partial`, required ones missing. Each
 * message starts with `prefix` and the variable's name.
 */
export function checkVars(vars: Record<string, unknown>, { partial = false, prefix = "" }: { partial?: boolean; prefix?: string } = {}): string[] {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(vars)) {
    if (value === undefined || !name.startsWith("SHARDGATE_") || isS3NodeSecret(name)) continue;
    const kind: string | undefined = Object.hasOwn(VAR_KINDS, name) ? VAR_KINDS[name as keyof typeof VAR_KINDS] : undefined;
    if (kind === undefined) {
      const near = nearest(name, Object.keys(VAR_KINDS));
      problems.push(`${prefix}${name}: unknown variable${near ? ` (did you mean ${near}?)` : ""}`);
    } else if (kind !== "binding") {
      const spec = KINDS[kind];
      if (typeof value !== "string") problems.push(`${prefix}${name}: expected a string, got ${shownVar(name, value)}`);
      else if (spec && !spec.ok(value) && !(value === "" && !REQUIRED_VARS.includes(name)))
        problems.push(`${prefix}${name}: expected ${spec.expected}, got ${shownVar(name, value)}`);
    }
  }
  if (!partial) for (const name of REQUIRED_VARS) if (vars[name] === undefined || vars[name] === "") problems.push(`${prefix}${name}: required, not set`);
  return problems;
}

/**
 * The candidate nearest to `word` by edit distance (case-insensitive), if near enough to be a typo:
 * a third of the word's length, at least 2 and at most 3 edits (a swap of two neighbours is one).
 * Only the first 100 characters of `word` count.
 */
export function nearest(word: string, candidates: readonly string[]): string | null {
  const w = String(word).slice(0, 100).toLowerCase();
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
