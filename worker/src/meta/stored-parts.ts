// What a bucket's index holds on nodes, beyond its current manifests: the shard files it gave up
// (the `garbage` table: parts of uploads and direct-path sessions that expired or went with their
// bucket, recorded in the transaction that gave them up, drained by services/garbage.ts, since the
// Durable Object never touches a node itself), and the pages of references the orphan sweep
// compares with what the nodes hold (services/orphans.ts). BucketIndex calls these inside its events.
import type { ManifestPart } from "../shared/core-api";
import * as direct from "./direct-sessions";
import type { GarbageEntry, PartRecord } from "./types";
import * as uploads from "./uploads";
import * as versions from "./versions";

export function addGarbage(sql: SqlStorage, parts: readonly ManifestPart[], now: number): void {
  for (const part of parts) sql.exec("INSERT INTO garbage (part, since) VALUES (?, ?)", JSON.stringify(part), now);
}

/** Gives up what expired, a bounded batch of each (the alarm): stale uploads and direct-path sessions expired uncommitted. */
export function giveUpExpired(sql: SqlStorage, now: number): void {
  addGarbage(sql, uploads.abortStale(sql, now), now);
  direct.expire(sql, now);
}

/** Gives up every upload and direct-path session in progress (their bucket goes). */
export function giveUpAll(sql: SqlStorage, now: number): void {
  addGarbage(sql, uploads.abortAll(sql), now);
  direct.endAll(sql, now);
}

/** When something in progress expires next (giveUpExpired then has work), at least a second from `now`; null: nothing is in progress. */
export function nextExpiry(sql: SqlStorage, now: number): number | null {
  const due = [uploads.staleCheckDue(sql, now), direct.expiryDue(sql, now)].filter((d) => d !== null);
  return due.length === 0 ? null : Math.min(...due);
}

/** Up to `limit` entries to delete, those tried least first, and how many there are in all. */
export function garbagePage(sql: SqlStorage, limit: number): { pending: number; entries: GarbageEntry[] } {
  const pending = sql.exec<{ n: number }>("SELECT count(*) AS n FROM garbage").one().n;
  const rows = sql.exec<{ id: number; part: string }>("SELECT id, part FROM garbage ORDER BY attempts, id LIMIT ?", limit).toArray();
  return { pending, entries: rows.map((r) => ({ id: r.id, part: JSON.parse(r.part) as ManifestPart })) };
}

/** Forgets the entries whose files are gone; counts an attempt, with its error, on the others
 *  (the caller runs it in a transaction). */
export function garbageDone(sql: SqlStorage, removed: number[], failed: { id: number; error: string }[]): void {
  for (const id of removed) sql.exec("DELETE FROM garbage WHERE id = ?", id);
  for (const f of failed) sql.exec("UPDATE garbage SET attempts = attempts + 1, last_error = ? WHERE id = ?", f.error, f.id);
}

/**
 * What the bucket keeps on nodes, a page at a time, for the orphan sweep: the manifests of up to
 * `limit` versions, current objects first, then the other versions, from the opaque cursor `after`
 * (null: from the start); with the first page the parts of uploads in progress and of garbage not
 * yet deleted. `next` continues (null: done).
 */
export function storageRefs(sql: SqlStorage, after: string | null, limit: number): { manifests: Uint8Array[]; parts: ManifestPart[]; next: string | null } {
  const parts: ManifestPart[] = [];
  if (after === null) {
    for (const r of sql.exec<{ record: string }>("SELECT record FROM parts")) parts.push((JSON.parse(r.record) as PartRecord).part);
    for (const r of sql.exec<{ part: string }>("SELECT part FROM garbage")) parts.push(JSON.parse(r.part) as ManifestPart);
  }
  type Cursor = { table: "objects"; key: string } | { table: "versions"; key: string; seq: number };
  const cursor: Cursor = after === null ? { table: "objects", key: "" } : (JSON.parse(after) as Cursor);
  if (cursor.table === "objects") {
    const rows = sql
      .exec<{ key: string; manifest: ArrayBuffer }>("SELECT key, manifest FROM objects WHERE key > ? ORDER BY key LIMIT ?", cursor.key, limit)
      .toArray();
    const last = rows[rows.length - 1];
    const next = rows.length === limit && last ? { table: "objects", key: last.key } : { table: "versions", key: "", seq: Number.MAX_SAFE_INTEGER };
    return { manifests: rows.map((r) => new Uint8Array(r.manifest)), parts, next: JSON.stringify(next) };
  }
  const page = versions.versionManifests(sql, cursor.key === "" ? null : cursor, limit);
  return { manifests: page.manifests, parts, next: page.next && JSON.stringify({ table: "versions", ...page.next }) };
}
