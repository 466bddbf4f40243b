// The multipart half of a bucket's index: uploads in progress and their parts, in the bucket's
// own SQLite (BucketIndex calls these inside its transactions). An upload's parts are rows of
// their own, so uploading part 7 of 10,000 rewrites one small row, not a growing list.
import type { ManifestPart } from "../shared/core-api";
import { keyRange, type Lower, pageOf, prefixEnd, rollUp, startOf } from "./key-order";
import type { ListUploadsPage, ListUploadsQuery, PartRecord, UploadInfo } from "./types";

/** Schema version 2 of the bucket index (see BUCKET_INDEX_SCHEMA). */
export const UPLOADS_SCHEMA: readonly string[] = [
  // `info` holds the rest of UploadInfo as JSON. Upload ids sort by creation time, so
  // (key, upload_id) is S3's order for ListMultipartUploads.
  `CREATE TABLE uploads (
     upload_id TEXT PRIMARY KEY,
     key TEXT NOT NULL,
     initiated INTEGER NOT NULL,
     info TEXT NOT NULL
   ) WITHOUT ROWID`,
  "CREATE INDEX uploads_by_key ON uploads (key, upload_id)",
  "CREATE INDEX uploads_by_age ON uploads (initiated)",
  // `record` is the PartRecord as JSON.
  `CREATE TABLE parts (
     upload_id TEXT NOT NULL,
     part_number INTEGER NOT NULL,
     record TEXT NOT NULL,
     PRIMARY KEY (upload_id, part_number)
   ) WITHOUT ROWID`,
];

/** Where a scan of uploads starts: after (key, afterId), or at / after `key` when afterId is null or absent. */
type Cursor = Lower & { afterId?: string | null };
type UploadRow = { upload_id: string; key: string; initiated: number; info: string };
type StoredInfo = Omit<UploadInfo, "uploadId" | "key" | "initiated">;

/** A new upload id: a time prefix (so ids sort by creation) and 96 random bits. */
export function newUploadId(now: number): string {
  const random = crypto.getRandomValues(new Uint8Array(12));
  return now.toString(36).padStart(10, "0") + Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function insertUpload(sql: SqlStorage, upload: UploadInfo): void {
  const { uploadId, key, initiated, ...info } = upload;
  sql.exec("INSERT INTO uploads (upload_id, key, initiated, info) VALUES (?, ?, ?, ?)", uploadId, key, initiated, JSON.stringify(info satisfies StoredInfo));
}

export function getUpload(sql: SqlStorage, uploadId: string): UploadInfo | null {
  const row = sql.exec<UploadRow>("SELECT upload_id, key, initiated, info FROM uploads WHERE upload_id = ?", uploadId).toArray()[0];
  return row ? toUpload(row) : null;
}

/** Removes an upload and returns all its parts (whose data the caller then deletes). */
export function deleteUpload(sql: SqlStorage, uploadId: string): PartRecord[] {
  const parts = listPartRecords(sql, uploadId, 0, Number.MAX_SAFE_INTEGER);
  sql.exec("DELETE FROM parts WHERE upload_id = ?", uploadId);
  sql.exec("DELETE FROM uploads WHERE upload_id = ?", uploadId);
  return parts;
}

/** Stores a part, replacing one with the same number; returns the replaced one. */
export function upsertPart(sql: SqlStorage, uploadId: string, part: PartRecord): PartRecord | null {
  const previous = sql.exec<{ record: string }>("SELECT record FROM parts WHERE upload_id = ? AND part_number = ?", uploadId, part.partNumber).toArray()[0];
  const upsert =
    "INSERT INTO parts (upload_id, part_number, record) VALUES (?, ?, ?) ON CONFLICT (upload_id, part_number) DO UPDATE SET record = excluded.record";
  sql.exec(upsert, uploadId, part.partNumber, JSON.stringify(part));
  return previous ? (JSON.parse(previous.record) as PartRecord) : null;
}

/** Parts numbered above `after`, in order, at most `limit`. */
export function listPartRecords(sql: SqlStorage, uploadId: string, after: number, limit: number): PartRecord[] {
  return sql
    .exec<{ record: string }>("SELECT record FROM parts WHERE upload_id = ? AND part_number > ? ORDER BY part_number LIMIT ?", uploadId, after, limit)
    .toArray()
    .map((r) => JSON.parse(r.record) as PartRecord);
}

/** A part a completion uses: its number, and the version of it the caller built the object from. */
export type UsedPart = { partNumber: number; version: string };

/** Multipart uploads not completed within this long are aborted and their parts removed. */
export const STALE_UPLOAD_MS = 7 * 24 * 3600 * 1000;
/** Stale uploads removed per alarm run: keeps one run's work bounded. */
const STALE_UPLOADS_PER_ALARM = 100;

/** Aborts uploads older than STALE_UPLOAD_MS, oldest first, a bounded batch: their parts (whose shard files the caller deletes). */
export function abortStale(sql: SqlStorage, now: number): ManifestPart[] {
  const stale = sql.exec<{ id: string }>(
    "SELECT upload_id AS id FROM uploads WHERE initiated < ? ORDER BY initiated LIMIT ?",
    now - STALE_UPLOAD_MS,
    STALE_UPLOADS_PER_ALARM,
  );
  return stale.toArray().flatMap((r) => deleteUpload(sql, r.id).map((p) => p.part));
}

/** Aborts every upload (its bucket goes): their parts (whose shard files the caller deletes). */
export function abortAll(sql: SqlStorage): ManifestPart[] {
  return sql
    .exec<{ id: string }>("SELECT upload_id AS id FROM uploads")
    .toArray()
    .flatMap((r) => deleteUpload(sql, r.id).map((p) => p.part));
}

/** When the oldest upload turns stale (at least a second from `now`); null when there is none. */
export function staleCheckDue(sql: SqlStorage, now: number): number | null {
  const oldest = sql.exec<{ initiated: number }>("SELECT initiated FROM uploads ORDER BY initiated LIMIT 1").toArray()[0];
  return oldest === undefined ? null : Math.max(oldest.initiated + STALE_UPLOAD_MS, now + 1000);
}

/**
 * The parts of upload `uploadId` a completion of `key` leaves out, when each part it uses is
 * still the version the caller read; otherwise why it cannot complete.
 */
export function unusedParts(sql: SqlStorage, uploadId: string, key: string, used: readonly UsedPart[]): PartRecord[] | "NoSuchUpload" | "InvalidPart" {
  const upload = getUpload(sql, uploadId);
  if (!upload || upload.key !== key) return "NoSuchUpload";
  const parts = new Map(listPartRecords(sql, uploadId, 0, Number.MAX_SAFE_INTEGER).map((p) => [p.partNumber, p]));
  if (used.some((u) => parts.get(u.partNumber)?.version !== u.version)) return "InvalidPart";
  for (const u of used) parts.delete(u.partNumber);
  return [...parts.values()];
}

/** Uploads of keys that start with `prefix` initiated at or before `cutoff`, at most `limit`. */
export function uploadsInitiatedBy(sql: SqlStorage, prefix: string, cutoff: number, limit: number): string[] {
  const { where, bindings } = keyRange({ key: prefix, inclusive: true }, prefixEnd(prefix));
  const query = `SELECT upload_id FROM uploads WHERE ${where} AND initiated <= ? ORDER BY initiated LIMIT ?`;
  return sql
    .exec<{ upload_id: string }>(query, ...bindings, cutoff, limit)
    .toArray()
    .map((r) => r.upload_id);
}

/** One page of ListMultipartUploads: uploads in (key, upload id) order, keys rolled up by delimiter (key-order.ts rollUp). */
export function listUploads(sql: SqlStorage, q: ListUploadsQuery, maxPage: number): ListUploadsPage {
  const limit = Math.min(Math.max(Math.trunc(q.maxUploads) || 0, 0), maxPage);
  if (limit === 0) return { uploads: [], commonPrefixes: [], isTruncated: false, nextKeyMarker: null, nextUploadIdMarker: null };
  const end = q.prefix === "" ? null : prefixEnd(q.prefix);
  // Read from just after the markers: the rest of key-marker's uploads after upload-id-marker, then later keys.
  const lower = startOf(q.prefix, q.keyMarker);
  const start = { ...lower, afterId: lower.inclusive ? null : q.uploadIdMarker };
  const rolled = rollUp(q, q.keyMarker, start, limit + 1, (from, want) => scanUploads(sql, from, end, want));
  const { items, commonPrefixes, isTruncated, nextMarker: nextKeyMarker, lastItem } = pageOf(rolled, limit);
  return { uploads: items.map((r) => summary(toUpload(r))), commonPrefixes, isTruncated, nextKeyMarker, nextUploadIdMarker: lastItem?.upload_id ?? null };
}

/** Uploads from `lower` on, in (key, upload id) order, below `end`. */
function scanUploads(sql: SqlStorage, lower: Cursor, end: string | null, limit: number): UploadRow[] {
  const afterId = lower.afterId ?? null;
  const from = afterId !== null ? "(key > ? OR (key = ? AND upload_id > ?))" : lower.inclusive ? "key >= ?" : "key > ?";
  const bindings = [...(afterId !== null ? [lower.key, lower.key, afterId] : [lower.key]), ...(end === null ? [] : [end])];
  const below = end === null ? "" : " AND key < ?";
  return sql
    .exec<UploadRow>(`SELECT upload_id, key, initiated, info FROM uploads WHERE ${from}${below} ORDER BY key, upload_id LIMIT ?`, ...bindings, limit)
    .toArray();
}

function toUpload(row: UploadRow): UploadInfo {
  const info = JSON.parse(row.info) as StoredInfo;
  return { uploadId: row.upload_id, key: row.key, initiated: row.initiated, ...info };
}

function summary(u: UploadInfo): ListUploadsPage["uploads"][number] {
  return { uploadId: u.uploadId, key: u.key, initiated: u.initiated, checksumAlgorithm: u.checksumAlgorithm, checksumType: u.checksumType };
}
