// The heal queue of a bucket's index: objects to heal (written while a node was down, or read
// around a missing, failed or rotten shard file), kept with the object so that a write or delete
// changes its entry in the same transaction. BucketIndex calls these inside its events; the heal
// itself is services/heal.ts.
import type { HealQueueEntry } from "./types";

/** Queues `key` (the caller checked it is still the version to heal), merging the shard files
 *  known bad ({ storageId: [shard, …] }) with what earlier reads of it found. */
export function enqueue(sql: SqlStorage, key: string, reason: string, shards: Record<string, number[]> | null, now: number): void {
  const known = sql.exec<{ shards: string | null }>("SELECT shards FROM heal_queue WHERE key = ?", key).toArray()[0];
  if (known?.shards && shards) {
    const merged = JSON.parse(known.shards) as Record<string, number[]>;
    for (const [id, list] of Object.entries(shards)) merged[id] = [...new Set([...(merged[id] ?? []), ...list])];
    shards = merged;
  }
  const upsert = `INSERT INTO heal_queue (key, reason, since, shards) VALUES (?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET reason = excluded.reason, shards = excluded.shards`;
  sql.exec(upsert, key, reason, now, shards === null ? null : JSON.stringify(shards));
}

/** Counts an attempt at healing `key`, before the work. */
export function started(sql: SqlStorage, key: string): void {
  sql.exec("UPDATE heal_queue SET attempts = attempts + 1 WHERE key = ?", key);
}

/** The oldest entries (fewest attempts first), at most `limit`, and how many there are. */
export function page(sql: SqlStorage, limit: number): { pending: number; entries: HealQueueEntry[] } {
  const pending = sql.exec<{ n: number }>("SELECT count(*) AS n FROM heal_queue").one().n;
  const rows = sql.exec<Omit<HealQueueEntry, "shards"> & { shards: string | null }>(
    "SELECT key, reason, since, attempts, last_error AS lastError, shards FROM heal_queue ORDER BY attempts, since LIMIT ?",
    Math.max(0, Math.trunc(limit)),
  );
  return { pending, entries: rows.toArray().map((r) => ({ ...r, shards: r.shards === null ? null : (JSON.parse(r.shards) as Record<string, number[]>) })) };
}

/** Ends a heal: the entry goes when it succeeded (error null), else keeps the error. With `since`,
 *  only the entry the heal started from (a newer version's entry has a newer `since`). */
export function ended(sql: SqlStorage, key: string, error: string | null, since?: number): void {
  const which = since === undefined ? "key = ?" : "key = ? AND since = ?";
  const bindings = since === undefined ? [key] : [key, since];
  if (error === null) sql.exec(`DELETE FROM heal_queue WHERE ${which}`, ...bindings);
  else sql.exec(`UPDATE heal_queue SET last_error = ? WHERE ${which}`, error, ...bindings);
}

/** A new version of the object: its entry is replaced (`reason`) or removed (null). */
export function replace(sql: SqlStorage, key: string, reason: string | null, now: number): void {
  sql.exec("DELETE FROM heal_queue WHERE key = ?", key);
  if (reason !== null) sql.exec("INSERT INTO heal_queue (key, reason, since) VALUES (?, ?, ?)", key, reason, now);
}
