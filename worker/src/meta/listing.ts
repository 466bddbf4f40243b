// Listing a bucket's current objects (ListObjects, ListObjectsV2), the index half that reads
// `objects` in S3's key order (BucketIndex.list calls it once it knows the bucket exists). Its cost
// is one indexed range query per common prefix on the page plus one (a delimited listing: one
// recursive statement), never a scan of the keys a common prefix rolls up.
import { commonPrefixOf, compareKeys, type Entry, keyRange, pageOf, prefixEnd, rollUp, startOf } from "./key-order";
import type { ListPage, ListQuery, ObjectSummary } from "./types";

/** The most keys a page holds (S3's own limit). */
export const MAX_LIST_KEYS = 1000;

type SummaryRow = { key: string; size: number; etag: string; last_modified: number };

/** One page of an S3 listing of an existing bucket (see ListQuery). */
export function listPage(sql: SqlStorage, q: ListQuery): ListPage {
  const maxKeys = Math.min(Math.max(Math.trunc(q.maxKeys) || 0, 0), MAX_LIST_KEYS);
  if (maxKeys === 0) return { objects: [], commonPrefixes: [], isTruncated: false, last: null };
  // One entry more than the page holds tells whether the listing goes on.
  const page = pageOf(collect(sql, q, maxKeys + 1), maxKeys);
  return { objects: page.items.map(toSummary), commonPrefixes: page.commonPrefixes, isTruncated: page.isTruncated, last: page.nextMarker };
}

/**
 * Up to `limit` listing entries in key order (key-order.ts rollUp): rows are read lazily from an
 * ordered range query; the first row that rolls up into a common prefix ends that query, and the
 * next one seeks past every key starting with that common prefix.
 */
function collect(sql: SqlStorage, q: ListQuery, limit: number): Entry<SummaryRow>[] {
  const end = q.prefix === "" ? null : prefixEnd(q.prefix);
  const delimiterEnd = q.delimiter ? prefixEnd(q.delimiter) : null;
  if (q.delimiter && delimiterEnd !== null && delimiterEnd.length === q.delimiter.length) return collectDelimited(sql, q, limit, end, delimiterEnd);
  return rollUp(q, q.after, startOf(q.prefix, q.after), limit, (lower, want) => {
    const { where, bindings } = keyRange(lower, end);
    return sql.exec<SummaryRow>(`SELECT key, size, etag, last_modified FROM objects WHERE ${where} ORDER BY key LIMIT ?`, ...bindings, want);
  });
}

/**
 * collect() for a delimited listing in one SQL statement: a recursive walk whose every step is
 * one index seek, to the next key after the current one, or past the whole common prefix the
 * current key rolls up into (the key up to its delimiter, then the delimiter's successor:
 * `delimiterEnd`). A query per common prefix cost ~50 µs each in workerd, 50 ms for a page of
 * 1,000; one statement walks the same seeks inside SQLite. Keys compare as UTF-8 bytes there,
 * S3's order, and SQLite counts characters as commonPrefixOf does.
 */
function collectDelimited(sql: SqlStorage, q: ListQuery, limit: number, end: string | null, delimiterEnd: string): Entry<SummaryRow>[] {
  const lower = startOf(q.prefix, q.after);
  const first = lower.inclusive ? "key >= ?1" : "key > ?1";
  // The upper bound only when there is one: `?2 IS NULL OR key < ?2` would keep SQLite from
  // bounding the index range, and a seek past the last key would then scan to the table's end.
  const below = end === null ? "" : "AND key < ?2";
  // One row more than the page: the first may be a common prefix `after` already returned.
  const rows = sql.exec<SummaryRow>(
    `WITH RECURSIVE walk(key, size, etag, last_modified, n) AS (
       SELECT * FROM (SELECT key, size, etag, last_modified, 1 FROM objects WHERE ${first} ${below} ORDER BY key LIMIT 1)
       UNION ALL
       SELECT o.key, o.size, o.etag, o.last_modified, walk.n + 1 FROM walk JOIN objects o ON o.key = (
         SELECT key FROM objects
         WHERE key >= (CASE WHEN instr(substr(walk.key, length(?3) + 1), ?4) > 0
                            THEN substr(walk.key, 1, length(?3) + instr(substr(walk.key, length(?3) + 1), ?4) - 1) || ?5
                            ELSE walk.key END)
           AND key != walk.key ${below}
         ORDER BY key LIMIT 1)
       WHERE walk.n < ?6
     )
     SELECT key, size, etag, last_modified FROM walk`,
    lower.key,
    end ?? "",
    q.prefix,
    q.delimiter as string,
    delimiterEnd,
    limit + 1,
  );
  const entries: Entry<SummaryRow>[] = [];
  for (const row of rows) {
    if (entries.length >= limit) break;
    const common = commonPrefixOf(row.key, q.prefix, q.delimiter);
    if (common === null) entries.push({ kind: "item", item: row });
    else if (q.after === null || compareKeys(common, q.after) > 0) entries.push({ kind: "prefix", prefix: common });
  }
  return entries;
}

function toSummary(row: SummaryRow): ObjectSummary {
  return { key: row.key, size: row.size, etag: row.etag, lastModified: row.last_modified };
}
