// Listing a bucket's current objects (ListObjects, ListObjectsV2), the index half that reads
// `objects` in S3's key order (BucketIndex.list calls it once it knows the bucket exists). Its cost
// is one indexed range query per common prefix on the page plus one (a delimited listing: one
// recursive statement), never a scan of the keys a common prefix rolls up.
import { commonPrefixOf, compareKeys, prefixEnd } from "./key-order";
import type { ListPage, ListQuery, ObjectSummary } from "./types";

/** The most keys a page holds (S3's own limit). */
export const MAX_LIST_KEYS = 1000;

type SummaryRow = { key: string; size: number; etag: string; last_modified: number };

/** Where a scan starts: at `key` itself (inclusive) or just after it. */
interface Lower {
  key: string;
  inclusive: boolean;
}

type Entry = { kind: "object"; summary: ObjectSummary } | { kind: "prefix"; prefix: string };

/** One page of an S3 listing of an existing bucket (see ListQuery). */
export function listPage(sql: SqlStorage, q: ListQuery): ListPage {
  const maxKeys = Math.min(Math.max(Math.trunc(q.maxKeys) || 0, 0), MAX_LIST_KEYS);
  if (maxKeys === 0) return { objects: [], commonPrefixes: [], isTruncated: false, last: null };
  // One entry more than the page holds tells whether the listing goes on.
  const entries = collect(sql, q, maxKeys + 1);
  const page = entries.slice(0, maxKeys);
  const isTruncated = entries.length > maxKeys;
  const lastEntry = page[page.length - 1];
  return {
    objects: page.flatMap((e) => (e.kind === "object" ? [e.summary] : [])),
    commonPrefixes: page.flatMap((e) => (e.kind === "prefix" ? [e.prefix] : [])),
    isTruncated,
    last: isTruncated && lastEntry ? entryName(lastEntry) : null,
  };
}

/**
 * Up to `limit` listing entries in key order. Rows are read lazily from an ordered range
 * query; the first row that rolls up into a common prefix ends that query, and the next one
 * seeks past every key starting with that common prefix.
 */
function collect(sql: SqlStorage, q: ListQuery, limit: number): Entry[] {
  const end = q.prefix === "" ? null : prefixEnd(q.prefix);
  const delimiterEnd = q.delimiter ? prefixEnd(q.delimiter) : null;
  if (q.delimiter && delimiterEnd !== null && delimiterEnd.length === q.delimiter.length) return collectDelimited(sql, q, limit, end, delimiterEnd);
  const entries: Entry[] = [];
  let lower: Lower | null = startOf(q.prefix, q.after);
  while (lower !== null && entries.length < limit) {
    let next: Lower | null = null;
    for (const row of scan(sql, lower, end, limit - entries.length)) {
      const common = commonPrefixOf(row.key, q.prefix, q.delimiter);
      if (common === null) {
        entries.push({ kind: "object", summary: toSummary(row) });
        continue;
      }
      // A common prefix at or before `after` was returned already (or skipped on purpose).
      if (q.after === null || compareKeys(common, q.after) > 0) entries.push({ kind: "prefix", prefix: common });
      const past = prefixEnd(common);
      next = past === null ? null : { key: past, inclusive: true };
      break;
    }
    lower = next;
  }
  return entries;
}

/**
 * collect() for a delimited listing in one SQL statement: a recursive walk whose every step is
 * one index seek, to the next key after the current one, or past the whole common prefix the
 * current key rolls up into (the key up to its delimiter, then the delimiter's successor:
 * `delimiterEnd`). A query per common prefix cost ~50 µs each in workerd, 50 ms for a page of
 * 1,000; one statement walks the same seeks inside SQLite. Keys compare as UTF-8 bytes there,
 * S3's order, and SQLite counts characters as commonPrefixOf does.
 */
function collectDelimited(sql: SqlStorage, q: ListQuery, limit: number, end: string | null, delimiterEnd: string): Entry[] {
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
  const entries: Entry[] = [];
  for (const row of rows) {
    if (entries.length >= limit) break;
    const common = commonPrefixOf(row.key, q.prefix, q.delimiter);
    if (common === null) entries.push({ kind: "object", summary: toSummary(row) });
    else if (q.after === null || compareKeys(common, q.after) > 0) entries.push({ kind: "prefix", prefix: common });
  }
  return entries;
}

/** Summaries from `lower` up to `end` (exclusive; null: no bound) in key order, read lazily. */
function scan(sql: SqlStorage, lower: Lower, end: string | null, limit: number): Iterable<SummaryRow> {
  const from = lower.inclusive ? "key >= ?" : "key > ?";
  const bindings: (string | number)[] = [lower.key];
  let where = from;
  if (end !== null) {
    where += " AND key < ?";
    bindings.push(end);
  }
  bindings.push(limit);
  return sql.exec<SummaryRow>(`SELECT key, size, etag, last_modified FROM objects WHERE ${where} ORDER BY key LIMIT ?`, ...bindings);
}

/** The first position a listing reads: just after `after` if that is within or past the prefix's keys. */
function startOf(prefix: string, after: string | null): Lower {
  if (after !== null && compareKeys(after, prefix) >= 0) return { key: after, inclusive: false };
  return { key: prefix, inclusive: true };
}

function entryName(entry: Entry): string {
  return entry.kind === "object" ? entry.summary.key : entry.prefix;
}

function toSummary(row: SummaryRow): ObjectSummary {
  return { key: row.key, size: row.size, etag: row.etag, lastModified: row.last_modified };
}
