// The node overlay, kept in the registry's SQLite (one per gateway, meta/registry.ts): the nodes
// added while the gateway runs (their spec as the service hands it over, the secret sealed) and
// the runtime state of every node, configured or added (active | draining), with what drain walks
// found. Metadata only: this module stores and checks, it never speaks to a node.

/** A node's runtime state: draining nodes take no new shard files. */
export type NodeState = "active" | "draining";

export interface OverlayNode {
  id: string;
  /** The added node's spec as JSON (secret sealed; services/node-overlay.ts owns it); null for a configured node. */
  spec: string | null;
  state: NodeState;
  /** When the node was last marked draining (null: never, or active now). */
  drainingSince: number | null;
  /** When a drain walk that began after the node had been draining for `settleMs` ended with no failure (null: none since). */
  drainedAt: number | null;
}

/** An added S3 node's spec as stored (JSON in `spec`): its secret sealed under the master key, bound to the node's id. */
export interface StoredS3Spec {
  kind: "s3";
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  sealedSecret: string;
  clientUrls: boolean;
  added: number;
}

/** Every row, and a version that moves with every change (a cache compares it). */
export interface NodeOverlay {
  version: number;
  nodes: OverlayNode[];
}

/** What the writable-node check needs: the configured nodes and which the vars mark draining, and k + m. */
export interface WritableRule {
  configured: readonly string[];
  varsDraining: readonly string[];
  minimum: number;
}

export type StateChange = { ok: true; overlay: NodeOverlay } | { ok: false; writable: number };

export const NODE_OVERLAY_SCHEMA: readonly string[] = [
  `CREATE TABLE nodes (id TEXT PRIMARY KEY, spec TEXT, state TEXT NOT NULL, draining_since INTEGER, drain_started INTEGER,
     drain_failed INTEGER NOT NULL DEFAULT 0, drained_at INTEGER, changed INTEGER NOT NULL) WITHOUT ROWID`,
  "CREATE TABLE node_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
  "INSERT INTO node_version (id, version) VALUES (1, 0)",
];

type Row = {
  id: string;
  spec: string | null;
  state: string;
  draining_since: number | null;
  drain_started: number | null;
  drain_failed: number;
  drained_at: number | null;
};

export function readOverlay(sql: SqlStorage): NodeOverlay {
  const version = sql.exec<{ version: number }>("SELECT version FROM node_version WHERE id = 1").one().version;
  const rows = sql.exec<Omit<OverlayNode, "state"> & { state: string }>(
    "SELECT id, spec, state, draining_since AS drainingSince, drained_at AS drainedAt FROM nodes ORDER BY id",
  );
  return { version, nodes: rows.toArray().map((r) => ({ ...r, state: r.state === "draining" ? "draining" : "active" })) };
}

function row(sql: SqlStorage, id: string): Row | null {
  return sql.exec<Row>("SELECT * FROM nodes WHERE id = ?", id).toArray()[0] ?? null;
}

function bump(sql: SqlStorage): void {
  sql.exec("UPDATE node_version SET version = version + 1 WHERE id = 1");
}

/** Adds a node (active); false when a node of that id was added already. */
export function addNode(sql: SqlStorage, id: string, spec: string, now: number): boolean {
  const known = row(sql, id);
  if (known?.spec) return false;
  sql.exec("DELETE FROM nodes WHERE id = ?", id);
  sql.exec("INSERT INTO nodes (id, spec, state, changed) VALUES (?, ?, 'active', ?)", id, spec, now);
  bump(sql);
  return true;
}

/** The nodes that would take new shard files. */
function writableCount(sql: SqlStorage, rule: WritableRule): number {
  const overlay = new Map(readOverlay(sql).nodes.map((n) => [n.id, n]));
  const configured = rule.configured.filter((id) => !rule.varsDraining.includes(id) && overlay.get(id)?.state !== "draining").length;
  const added = [...overlay.values()].filter((n) => n.spec !== null && !rule.configured.includes(n.id) && n.state === "active").length;
  return configured + added;
}

/** Marks a node draining or active; refused (nothing changed) when fewer than `rule.minimum` nodes would stay writable. */
export function setNodeState(sql: SqlStorage, id: string, state: NodeState, rule: WritableRule, now: number): StateChange {
  const known = row(sql, id);
  if ((known?.state ?? "active") === state) return { ok: true, overlay: readOverlay(sql) };
  const since = state === "draining" ? now : null;
  const update = "UPDATE nodes SET state = ?, draining_since = ?, drain_started = NULL, drain_failed = 0, drained_at = NULL, changed = ? WHERE id = ?";
  if (known) sql.exec(update, state, since, now, id);
  else sql.exec("INSERT INTO nodes (id, spec, state, draining_since, changed) VALUES (?, NULL, ?, ?, ?)", id, state, since, now);
  const writable = writableCount(sql, rule);
  if (state === "draining" && writable < rule.minimum) throw new TooFewWritable(writable);
  bump(sql);
  return { ok: true, overlay: readOverlay(sql) };
}

/** Thrown inside the transaction so that it rolls back. */
export class TooFewWritable extends Error {
  constructor(readonly writable: number) {
    super(`too few writable nodes: ${writable}`);
  }
}

/**
 * Records one batch of a drain walk of node `id`: `first` (the walk began at the start), `failed`
 * (objects it could not move), `last` (the walk is over). A walk counts as clean when it began
 * `settleMs` or more after the node was marked draining (by then every isolate has seen it) and
 * no batch failed; its end then records the node drained (empty). Answers drainedAt.
 */
export function recordDrainBatch(
  sql: SqlStorage,
  id: string,
  batch: { first: boolean; failed: boolean; last: boolean },
  settleMs: number,
  now: number,
): number | null {
  if (!row(sql, id)) sql.exec("INSERT INTO nodes (id, spec, state, changed) VALUES (?, NULL, 'active', ?)", id, now);
  if (batch.first) sql.exec("UPDATE nodes SET drain_started = ?, drain_failed = 0, drained_at = NULL WHERE id = ?", now, id);
  if (batch.failed) sql.exec("UPDATE nodes SET drain_failed = 1 WHERE id = ?", id);
  const r = row(sql, id) as Row;
  const settled = r.drain_started !== null && r.drain_started >= (r.draining_since ?? 0) + settleMs;
  if (batch.last && settled && r.drain_failed === 0) {
    sql.exec("UPDATE nodes SET drained_at = ?, drain_started = NULL WHERE id = ?", now, id);
    bump(sql);
    return now;
  }
  return r.drained_at;
}

/** Removes an added node that is draining and drained clean: "removed", or why not. */
export function removeNode(sql: SqlStorage, id: string): "removed" | "unknown" | "not-draining" | "not-drained" {
  const r = row(sql, id);
  if (!r?.spec) return "unknown";
  if (r.state !== "draining") return "not-draining";
  if (r.drained_at === null) return "not-drained";
  sql.exec("DELETE FROM nodes WHERE id = ?", id);
  bump(sql);
  return "removed";
}
