// A bucket's quota (hard limits on its stored bytes and its objects, set through the admin API)
// and its usage. The usage is kept exact by SQLite triggers on `objects`, `versions` and `parts`:
// whatever adds, replaces or removes a version (a put, a copy, a completion, a delete, a lifecycle
// expiration) or a part of an upload in progress moves the totals in its own transaction, so no
// code path can forget to. Every version that is not a delete marker counts, current or not (a
// versioned bucket's old versions take space); so do the parts of uploads in progress (`pending`
// bytes, which a completion turns into its object's): the byte limit holds for what the bucket
// keeps on the nodes, uploads included.
//
// A write that would take the bucket over its quota is rolled back: the write runs within
// withinQuota(), which then throws QuotaExceeded inside the transaction, and BucketIndex answers it
// as the write's refusal. A write that does not grow the usage (an overwrite with fewer bytes, a
// delete, a completion) always passes, also over a quota lowered below the usage.

/** Schema version of the bucket index that adds quotas (see BUCKET_INDEX_SCHEMA). */
export const QUOTA_SCHEMA: readonly string[] = [
  // {"maxBytes": N | null, "maxObjects": N | null}, or NULL: no quota.
  "ALTER TABLE bucket ADD COLUMN quota TEXT",
  "CREATE TABLE usage (id INTEGER PRIMARY KEY CHECK (id = 1), bytes INTEGER NOT NULL, objects INTEGER NOT NULL)",
  `INSERT INTO usage (id, bytes, objects) VALUES (1,
     (SELECT COALESCE(SUM(size), 0) FROM objects) + (SELECT COALESCE(SUM(size), 0) FROM versions WHERE marker = 0),
     (SELECT COUNT(*) FROM objects) + (SELECT COUNT(*) FROM versions WHERE marker = 0))`,
  "CREATE TRIGGER usage_objects_insert AFTER INSERT ON objects BEGIN UPDATE usage SET bytes = bytes + NEW.size, objects = objects + 1; END",
  "CREATE TRIGGER usage_objects_delete AFTER DELETE ON objects BEGIN UPDATE usage SET bytes = bytes - OLD.size, objects = objects - 1; END",
  "CREATE TRIGGER usage_objects_update AFTER UPDATE OF size ON objects BEGIN UPDATE usage SET bytes = bytes - OLD.size + NEW.size; END",
  `CREATE TRIGGER usage_versions_insert AFTER INSERT ON versions WHEN NEW.marker = 0
     BEGIN UPDATE usage SET bytes = bytes + NEW.size, objects = objects + 1; END`,
  `CREATE TRIGGER usage_versions_delete AFTER DELETE ON versions WHEN OLD.marker = 0
     BEGIN UPDATE usage SET bytes = bytes - OLD.size, objects = objects - 1; END`,
  `CREATE TRIGGER usage_versions_update AFTER UPDATE OF size, marker ON versions BEGIN
     UPDATE usage SET
       bytes = bytes - (CASE WHEN OLD.marker = 0 THEN OLD.size ELSE 0 END) + (CASE WHEN NEW.marker = 0 THEN NEW.size ELSE 0 END),
       objects = objects - (OLD.marker = 0) + (NEW.marker = 0);
   END`,
];

/** A bucket's limits: null for no limit of that kind. */
export interface Quota {
  maxBytes: number | null;
  maxObjects: number | null;
}

/** What a bucket stores: the bytes and the count of its versions that are not delete markers, and the bytes of its uploads' parts. */
export interface Usage {
  bytes: number;
  objects: number;
  pending: number;
}

/** Schema version that counts the parts of uploads in progress (after QUOTA_SCHEMA). */
export const PENDING_SCHEMA: readonly string[] = [
  "ALTER TABLE usage ADD COLUMN pending INTEGER NOT NULL DEFAULT 0",
  "UPDATE usage SET pending = (SELECT COALESCE(SUM(json_extract(record, '$.size')), 0) FROM parts)",
  "CREATE TRIGGER usage_parts_insert AFTER INSERT ON parts BEGIN UPDATE usage SET pending = pending + json_extract(NEW.record, '$.size'); END",
  "CREATE TRIGGER usage_parts_delete AFTER DELETE ON parts BEGIN UPDATE usage SET pending = pending - json_extract(OLD.record, '$.size'); END",
  `CREATE TRIGGER usage_parts_update AFTER UPDATE OF record ON parts
     BEGIN UPDATE usage SET pending = pending - json_extract(OLD.record, '$.size') + json_extract(NEW.record, '$.size'); END`,
];

/** Thrown inside a write's transaction (rolling it back) when the write would exceed the quota. */
export class QuotaExceeded extends Error {
  constructor(readonly what: "bytes" | "objects") {
    super(`the bucket's quota of ${what} would be exceeded`);
  }
}

export function usageOf(sql: SqlStorage): Usage {
  const row = sql.exec<{ bytes: number; objects: number; pending: number }>("SELECT bytes, objects, pending FROM usage WHERE id = 1").toArray()[0];
  return { bytes: row?.bytes ?? 0, objects: row?.objects ?? 0, pending: row?.pending ?? 0 };
}

/** The bucket's quota, or null when it has none. */
export function quotaOf(sql: SqlStorage): Quota | null {
  const text = sql.exec<{ quota: string | null }>("SELECT quota FROM bucket WHERE id = 1").toArray()[0]?.quota ?? null;
  return text === null ? null : (JSON.parse(text) as Quota);
}

export function setQuota(sql: SqlStorage, quota: Quota | null): void {
  const empty = quota === null || (quota.maxBytes === null && quota.maxObjects === null);
  sql.exec("UPDATE bucket SET quota = ? WHERE id = 1", empty ? null : JSON.stringify(quota));
}

/**
 * Runs `write` (inside the caller's transaction) and throws QuotaExceeded when it took the usage
 * over the bucket's quota and grew it. Without a quota: one column read, and the write.
 */
export function withinQuota<T>(sql: SqlStorage, write: () => T): T {
  const quota = quotaOf(sql);
  if (!quota) return write();
  const before = usageOf(sql);
  const result = write();
  const after = usageOf(sql);
  const [was, is] = [before.bytes + before.pending, after.bytes + after.pending];
  if (quota.maxBytes !== null && is > quota.maxBytes && is > was) throw new QuotaExceeded("bytes");
  if (quota.maxObjects !== null && after.objects > quota.maxObjects && after.objects > before.objects) throw new QuotaExceeded("objects");
  return result;
}
