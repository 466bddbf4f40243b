// The versions half of a bucket's index (BucketIndex calls these inside its transactions).
//
// `objects` keeps one row per key: its current version when that is an object, which is all a
// GET, a HEAD and ListObjects read, as fast as in an unversioned bucket. Every other version (the
// noncurrent ones, and delete markers, current or not) is a row of `versions`. A version's `seq`
// orders it among its key's versions (higher: newer); the current object, when there is one, has
// the highest. The null version (version id NULL: written while the bucket was unversioned or
// suspended) is at most one per key.
import { equalBytes } from "../shared/bytes";
import { commonPrefixOf, compareKeys, type Entry, keyRange, type Lower, pageOf, prefixEnd, rollUp, startOf } from "./key-order";
import type { ObjectLock } from "./object-lock";
import type { ListVersionsPage, ListVersionsQuery, ObjectRecord, VersionSummary, VersioningStatus } from "./types";

/** Schema version 5 of the bucket index (see BUCKET_INDEX_SCHEMA). */
export const VERSIONS_SCHEMA: readonly string[] = [
  // NULL: versioning never configured (every write replaces the null version).
  "ALTER TABLE bucket ADD COLUMN versioning TEXT",
  "ALTER TABLE bucket ADD COLUMN version_seq INTEGER NOT NULL DEFAULT 0",
  "ALTER TABLE objects ADD COLUMN version_id TEXT",
  "ALTER TABLE objects ADD COLUMN seq INTEGER NOT NULL DEFAULT 0",
  // Newest first within a key: a listing reads (key, seq DESC) straight off the B-tree.
  `CREATE TABLE versions (
     key TEXT NOT NULL,
     seq INTEGER NOT NULL,
     version_id TEXT,
     marker INTEGER NOT NULL,
     size INTEGER NOT NULL,
     etag TEXT NOT NULL,
     last_modified INTEGER NOT NULL,
     manifest BLOB,
     PRIMARY KEY (key, seq DESC)
   ) WITHOUT ROWID`,
  "CREATE INDEX versions_by_id ON versions (key, version_id)",
];

/** A version id: 128 random bits in hex. "null" names the null version. */
export function newVersionId(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Whether `id` could name a version here ("null", or an id newVersionId made). */
export function isVersionId(id: string): boolean {
  return id === "null" || /^[0-9a-f]{32}$/.test(id);
}

/** A stored version: an object's record, or a delete marker (no manifest). */
export type StoredVersion =
  | (ObjectRecord & { marker: false; seq: number })
  | { key: string; versionId: string | null; marker: true; seq: number; lastModified: number };

/** A row read with OBJECT_COLUMNS (or VERSION_COLUMNS): named as the record names its fields. */
type ObjectRow = Omit<ObjectRecord, "manifest" | "lock"> & { manifest: ArrayBuffer; seq: number; lock: string | null };
type VersionRow = Omit<ObjectRow, "manifest"> & { marker: number; manifest: ArrayBuffer | null };

const OBJECT_COLUMNS = "key, version_id AS versionId, size, etag, last_modified AS lastModified, manifest, seq, lock";
const VERSION_COLUMNS = `${OBJECT_COLUMNS}, marker`;

export function versioning(sql: SqlStorage): VersioningStatus {
  return sql.exec<{ versioning: VersioningStatus }>("SELECT versioning FROM bucket WHERE id = 1").toArray()[0]?.versioning ?? null;
}

export function setVersioning(sql: SqlStorage, status: "Enabled" | "Suspended"): void {
  sql.exec("UPDATE bucket SET versioning = ? WHERE id = 1", status);
}

/** The next version's place in its key's order (one counter per bucket). */
function nextSeq(sql: SqlStorage): number {
  return sql.exec<{ version_seq: number }>("UPDATE bucket SET version_seq = version_seq + 1 WHERE id = 1 RETURNING version_seq").one().version_seq;
}

/** The key's current object (its row in `objects`), or null. */
export function currentObject(sql: SqlStorage, key: string): (ObjectRecord & { seq: number }) | null {
  const row = sql.exec<ObjectRow>(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE key = ?`, key).toArray()[0];
  return row ? { ...objectOf(row), seq: row.seq } : null;
}

/** The key's newest version in `versions` (a delete marker when it is the current version). */
function newestOther(sql: SqlStorage, key: string): StoredVersion | null {
  const row = sql.exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE key = ? ORDER BY seq DESC LIMIT 1`, key).toArray()[0];
  return row ? versionOf(row) : null;
}

/** The key's current version when that is a delete marker, else null. */
export function currentMarker(sql: SqlStorage, key: string): StoredVersion | null {
  if (currentObject(sql, key)) return null;
  const newest = newestOther(sql, key);
  return newest?.marker ? newest : null;
}

/** Version `versionId` (null: the null version) of `key`, wherever it is stored. */
export function findVersion(sql: SqlStorage, key: string, versionId: string | null): StoredVersion | null {
  const current = currentObject(sql, key);
  if (current && current.versionId === versionId) return { ...current, marker: false };
  const which = versionId === null ? "version_id IS NULL" : "version_id = ?";
  const row = sql
    .exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE key = ? AND ${which}`, key, ...(versionId === null ? [] : [versionId]))
    .toArray()[0];
  return row ? versionOf(row) : null;
}

/** What a write or delete did to the key's versions. */
export interface VersionChange {
  /** The new version's id for the response header ("null" for the null version); absent when the
   *  bucket was never versioned. */
  versionId?: string;
  /** Versions gone for good: the caller deletes their shard files once this has committed. */
  freed: ObjectRecord[];
}

/**
 * Makes `record` the key's current version, as the bucket's versioning says: unversioned, it
 * replaces the current object; enabled, the current object becomes noncurrent and the new one gets
 * a fresh id; suspended, it becomes the null version, replacing the old null version.
 */
export function putVersion(sql: SqlStorage, record: ObjectRecord): VersionChange {
  const status = versioning(sql);
  const current = currentObject(sql, record.key);
  if (status === null) {
    writeObject(sql, { ...record, versionId: null }, 0);
    return { freed: current ? [recordOf(current)] : [] };
  }
  const versionId = status === "Enabled" ? newVersionId() : null;
  const freed = makeRoom(sql, record.key, current, versionId === null);
  writeObject(sql, { ...record, versionId }, nextSeq(sql));
  return { versionId: versionId ?? "null", freed };
}

/**
 * Deletes the key's current version the way S3 does in a versioned bucket: a delete marker
 * becomes the current version (the null version when suspended); unversioned, the object goes.
 */
export function deleteCurrent(sql: SqlStorage, key: string, now: number): VersionChange & { marker: boolean } {
  const status = versioning(sql);
  const current = currentObject(sql, key);
  if (status === null) {
    if (current) sql.exec("DELETE FROM objects WHERE key = ?", key);
    return { freed: current ? [recordOf(current)] : [], marker: false };
  }
  const versionId = status === "Enabled" ? newVersionId() : null;
  const freed = makeRoom(sql, key, current, versionId === null);
  insertVersion(sql, { key, versionId, marker: true, seq: nextSeq(sql), lastModified: now });
  return { versionId: versionId ?? "null", freed, marker: true };
}

/**
 * Deletes one version for good. When it was the current version, the newest remaining one takes
 * its place. Null when the key has no such version.
 */
export function deleteVersion(sql: SqlStorage, key: string, versionId: string | null): (VersionChange & { marker: boolean }) | null {
  const found = findVersion(sql, key, versionId);
  if (!found) return null;
  const current = currentObject(sql, key);
  if (current && current.seq === found.seq) sql.exec("DELETE FROM objects WHERE key = ?", key);
  else sql.exec("DELETE FROM versions WHERE key = ? AND seq = ?", key, found.seq);
  promoteNewest(sql, key);
  return { versionId: versionId ?? "null", freed: found.marker ? [] : [recordOf(found)], marker: found.marker };
}

/**
 * Replaces the stored record of version `record.versionId` if its manifest is still `expected`
 * (tags or metadata changed in place, never undoing a concurrent change).
 */
export function replaceVersion(sql: SqlStorage, expected: Uint8Array, record: ObjectRecord): "replaced" | "changed" | "missing" {
  const found = findVersion(sql, record.key, record.versionId);
  if (!found || found.marker) return "missing";
  if (!equalBytes(found.manifest, expected)) return "changed";
  const table = currentObject(sql, record.key)?.seq === found.seq ? "objects" : "versions";
  const update = `UPDATE ${table} SET size = ?, etag = ?, last_modified = ?, manifest = ? WHERE key = ? AND seq = ?`;
  sql.exec(update, record.size, record.etag, record.lastModified, toArrayBuffer(record.manifest), record.key, found.seq);
  return "replaced";
}

/** No objects and no other versions (delete markers included): S3's condition to drop a bucket. */
export function bucketEmpty(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM objects LIMIT 1").toArray().length === 0 && sql.exec("SELECT 1 FROM versions LIMIT 1").toArray().length === 0;
}

/** Keys that have any version, after `after` (or from it, `inclusive`), in order, at most `limit`. */
export function keysAfter(sql: SqlStorage, after: string, inclusive: boolean, limit: number): string[] {
  const op = inclusive ? ">=" : ">";
  const query = `SELECT key FROM objects WHERE key ${op} ? UNION SELECT key FROM versions WHERE key ${op} ? ORDER BY key LIMIT ?`;
  return sql
    .exec<{ key: string }>(query, after, after, limit)
    .toArray()
    .map((r) => r.key);
}

/** Every version of `key`, newest first (the current one first). */
export function allVersions(sql: SqlStorage, key: string): StoredVersion[] {
  const current = currentObject(sql, key);
  const others = sql.exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE key = ? ORDER BY seq DESC`, key).toArray().map(versionOf);
  return current ? [{ ...current, marker: false }, ...others] : others;
}

/** Manifests of stored versions after (key, seq) (null: from the start), at most `limit`, for sweeps. */
export function versionManifests(
  sql: SqlStorage,
  after: { key: string; seq: number } | null,
  limit: number,
): { manifests: Uint8Array[]; next: { key: string; seq: number } | null } {
  const { key, seq } = after ?? { key: "", seq: Number.MAX_SAFE_INTEGER };
  const query = "SELECT key, seq, manifest FROM versions WHERE marker = 0 AND (key > ? OR (key = ? AND seq < ?)) ORDER BY key, seq DESC LIMIT ?";
  const rows = sql.exec<{ key: string; seq: number; manifest: ArrayBuffer }>(query, key, key, seq, limit).toArray();
  const last = rows[rows.length - 1];
  return { manifests: rows.map((r) => new Uint8Array(r.manifest)), next: rows.length === limit && last ? { key: last.key, seq: last.seq } : null };
}

/**
 * One page of ListObjectVersions, q.maxKeys entries (`maxPage` if it asks for more): every version
 * of every key in (key, newest first) order, the current object from `objects` merged with the rest
 * from `versions`, keys rolled up into common prefixes as in ListObjects (key-order.ts rollUp). One
 * entry more than the page is read to tell whether it goes on.
 */
export function listVersions(sql: SqlStorage, q: ListVersionsQuery, maxPage: number): ListVersionsPage {
  const maxKeys = Math.min(Math.max(Math.trunc(q.maxKeys) || 0, 0), maxPage);
  if (maxKeys === 0) return { versions: [], commonPrefixes: [], isTruncated: false, nextKeyMarker: null, nextVersionIdMarker: null };
  const entries: Entry<VersionSummary>[] = [];
  const limit = maxKeys + 1;
  const end = q.prefix === "" ? null : prefixEnd(q.prefix);
  // The rest of key-marker's versions first (those older than version-id-marker), then later keys.
  const start = startOf(q.prefix, q.keyMarker);
  if (!start.inclusive && q.versionIdMarker !== undefined) {
    const marker = findVersion(sql, start.key, q.versionIdMarker);
    if (marker && commonPrefixOf(start.key, q.prefix, q.delimiter) === null) {
      for (const item of keyVersions(sql, start.key, marker.seq, limit)) entries.push({ kind: "item", item });
    }
  }
  const rolled = rollUp(q, q.keyMarker, start, limit, (from, want) => mergedVersions(sql, from, end, want), entries);
  const { items: versions, commonPrefixes, isTruncated, nextMarker: nextKeyMarker, lastItem: last } = pageOf(rolled, maxKeys);
  return { versions, commonPrefixes, isTruncated, nextKeyMarker, nextVersionIdMarker: last && (last.versionId ?? "null") };
}

/** `key`'s versions older than `belowSeq`, newest first. */
function keyVersions(sql: SqlStorage, key: string, belowSeq: number, limit: number): VersionSummary[] {
  const current = currentObject(sql, key);
  const out: VersionSummary[] = [];
  if (current && current.seq < belowSeq) out.push(summaryOf({ ...current, marker: false }, true));
  const rows = sql
    .exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE key = ? AND seq < ? ORDER BY seq DESC LIMIT ?`, key, belowSeq, limit)
    .toArray();
  const latestSeq = current?.seq ?? newestOther(sql, key)?.seq;
  for (const row of rows) out.push(summaryOf(versionOf(row), row.seq === latestSeq));
  return out;
}

/**
 * Versions of the keys from `from` up to `end` (exclusive; null: no bound), in (key, newest first)
 * order, at most `limit`: the two tables' ordered range queries merged. The first version of
 * each key is its latest.
 */
function* mergedVersions(sql: SqlStorage, from: Lower, end: string | null, limit: number): Generator<VersionSummary> {
  const { where, bindings } = keyRange(from, end);
  const current = sql.exec<ObjectRow>(`SELECT ${OBJECT_COLUMNS} FROM objects WHERE ${where} ORDER BY key LIMIT ?`, ...bindings, limit).toArray();
  const others = sql.exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE ${where} ORDER BY key, seq DESC LIMIT ?`, ...bindings, limit).toArray();
  let i = 0;
  let j = 0;
  let lastKey: string | null = null;
  for (let n = 0; n < limit && (i < current.length || j < others.length); n++) {
    const a = current[i];
    const b = others[j];
    // The current object sorts before its key's other versions (it is the newest).
    const takeCurrent = a !== undefined && (b === undefined || compareKeys(a.key, b.key) <= 0);
    const v: StoredVersion = takeCurrent ? { ...objectOf(a), seq: a.seq, marker: false } : versionOf(b as VersionRow);
    if (takeCurrent) i++;
    else j++;
    yield summaryOf(v, v.key !== lastKey);
    lastKey = v.key;
  }
}

/**
 * Before a new current version goes in: the current object becomes noncurrent, unless it is the
 * null version and the new one is too (then it is replaced); a new null version also replaces an
 * older null version stored among the others. Returns the versions replaced.
 */
function makeRoom(sql: SqlStorage, key: string, current: (ObjectRecord & { seq: number }) | null, nullVersion: boolean): ObjectRecord[] {
  const freed: ObjectRecord[] = [];
  if (current) {
    sql.exec("DELETE FROM objects WHERE key = ?", key);
    if (nullVersion && current.versionId === null) freed.push(recordOf(current));
    else insertVersion(sql, { ...current, marker: false });
  }
  if (nullVersion) {
    const old = sql.exec<VersionRow>(`SELECT ${VERSION_COLUMNS} FROM versions WHERE key = ? AND version_id IS NULL`, key).toArray()[0];
    if (old) {
      sql.exec("DELETE FROM versions WHERE key = ? AND seq = ?", key, old.seq);
      const version = versionOf(old);
      if (!version.marker) freed.push(recordOf(version));
    }
  }
  return freed;
}

/** After the current version went: the newest remaining one, if an object, becomes current. */
function promoteNewest(sql: SqlStorage, key: string): void {
  if (currentObject(sql, key)) return;
  const newest = newestOther(sql, key);
  if (!newest || newest.marker) return;
  sql.exec("DELETE FROM versions WHERE key = ? AND seq = ?", key, newest.seq);
  writeObject(sql, recordOf(newest), newest.seq);
}

function writeObject(sql: SqlStorage, { key, size, etag, lastModified, manifest, versionId, lock }: ObjectRecord, seq: number): void {
  const upsert = `INSERT INTO objects (key, size, etag, last_modified, manifest, version_id, seq, lock) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET size = excluded.size, etag = excluded.etag, last_modified = excluded.last_modified,
       manifest = excluded.manifest, version_id = excluded.version_id, seq = excluded.seq, lock = excluded.lock`;
  sql.exec(upsert, key, size, etag, lastModified, toArrayBuffer(manifest), versionId, seq, lockColumn(lock));
}

/** The `lock` column: JSON, or NULL for none. */
function lockColumn(lock: ObjectLock | undefined): string | null {
  return lock && (lock.mode !== undefined || lock.legalHold !== undefined) ? JSON.stringify(lock) : null;
}

/** Replaces the lock of version `versionId` of `key` (it exists: the caller found it). */
export function setLock(sql: SqlStorage, key: string, seq: number, lock: ObjectLock): void {
  const table = currentObject(sql, key)?.seq === seq ? "objects" : "versions";
  sql.exec(`UPDATE ${table} SET lock = ? WHERE key = ? AND seq = ?`, lockColumn(lock), key, seq);
}

/** Stores `v` among the key's other versions (a delete marker: no size, ETag, manifest or lock). */
function insertVersion(sql: SqlStorage, v: StoredVersion): void {
  const insert = "INSERT INTO versions (key, seq, version_id, marker, size, etag, last_modified, manifest, lock) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)";
  if (v.marker) sql.exec(insert, v.key, v.seq, v.versionId, 1, 0, "", v.lastModified, null, null);
  else sql.exec(insert, v.key, v.seq, v.versionId, 0, v.size, v.etag, v.lastModified, toArrayBuffer(v.manifest), lockColumn(v.lock));
}

function objectOf({ manifest, lock, seq: _, ...fields }: ObjectRow): ObjectRecord {
  const record: ObjectRecord = { ...fields, manifest: new Uint8Array(manifest) };
  if (lock !== null) record.lock = JSON.parse(lock) as ObjectLock;
  return record;
}

function versionOf({ marker, ...row }: VersionRow): StoredVersion {
  if (marker) return { key: row.key, versionId: row.versionId, marker: true, seq: row.seq, lastModified: row.lastModified };
  return { ...objectOf({ ...row, manifest: row.manifest as ArrayBuffer }), marker: false, seq: row.seq };
}

/** A stored object's record, without its place among its key's versions. */
export function recordOf({ marker: _, seq: __, ...record }: ObjectRecord & { seq: number; marker?: false }): ObjectRecord {
  return record;
}

function summaryOf(v: StoredVersion, isLatest: boolean): VersionSummary {
  const common = { key: v.key, versionId: v.versionId, isLatest, lastModified: v.lastModified };
  return v.marker ? { ...common, deleteMarker: true } : { ...common, deleteMarker: false, size: v.size, etag: v.etag };
}

/** SQLite binds BLOBs from ArrayBuffers only; copy out exactly the view's bytes. */
function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.slice().buffer;
}
