// One SQLite-backed Durable Object per bucket: whether the bucket exists, and its object index
// (key -> manifest, plus what listing needs). A Durable Object runs one event at a time and its
// synchronous SQL calls cannot interleave with another request, so every read-check-write below
// is done without an `await` in between and is atomic.
import { DurableObject } from "cloudflare:workers";
import { migrate } from "./schema";
import type {
  BucketInfo,
  ListPage,
  ListQuery,
  ObjectRecord,
  ObjectSummary,
  PutResult,
  WriteCondition,
} from "./types";

/** The most keys plus common prefixes one listing page returns, whatever is asked (as S3). */
export const MAX_LIST_KEYS = 1000;

// Schema versions in order; a migration's statements run once, in one transaction.
const BUCKET_INDEX_SCHEMA: readonly (readonly string[])[] = [
  [
    // A single row: the bucket's name, creation time and whether it currently exists.
    `CREATE TABLE bucket (
       id INTEGER PRIMARY KEY CHECK (id = 1),
       name TEXT NOT NULL,
       created INTEGER NOT NULL,
       present INTEGER NOT NULL
     )`,
    // WITHOUT ROWID clusters rows by key, so a listing page is a sequential read of the B-tree.
    // The default BINARY collation compares TEXT with memcmp over UTF-8: S3's key order.
    `CREATE TABLE objects (
       key TEXT PRIMARY KEY,
       size INTEGER NOT NULL,
       etag TEXT NOT NULL,
       last_modified INTEGER NOT NULL,
       manifest BLOB NOT NULL
     ) WITHOUT ROWID`,
  ],
];


/**
 * Compares keys the way S3 orders them: by their UTF-8 bytes, which is code point order. JS's `<`
 * compares UTF-16 code units and disagrees only where a surrogate (a code point above U+FFFF)
 * meets U+E000..U+FFFF, so only that case is remapped.
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codeUnitRank(x) - codeUnitRank(y);
  }
  return a.length - b.length;
}

function codeUnitRank(u: number): number {
  if (u < 0xd800) return u;
  return u < 0xe000 ? u + 0x2000 : u - 0x800; // surrogates above the rest of the BMP
}

/**
 * The smallest string greater than every string that starts with `prefix` (the exclusive upper
 * bound of `key >= prefix AND key < end`), or null when there is none (the prefix is all
 * U+10FFFF). Working on code points rather than on the last UTF-8 byte keeps the bound valid
 * UTF-8; in byte order it is the same bound, since no valid key sorts between the two.
 */
export function prefixEnd(prefix: string): string | null {
  const points = Array.from(prefix, (ch) => ch.codePointAt(0) ?? 0);
  while (points.length > 0) {
    const last = points.pop() ?? 0;
    if (last < 0x10ffff) {
      // Skip the surrogate range, which holds no code points of its own.
      points.push(last === 0xd7ff ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return null;
}

/**
 * The common prefix `key` rolls up into: the prefix plus the rest of the key up to and including
 * the first delimiter, or null when the rest holds no delimiter (the key is listed itself).
 */
export function commonPrefixOf(key: string, prefix: string, delimiter: string | null): string | null {
  if (delimiter === null || delimiter === "") return null;
  const at = key.indexOf(delimiter, prefix.length);
  return at < 0 ? null : key.slice(0, at + delimiter.length);
}

type Row = {
  key: string;
  size: number;
  etag: string;
  last_modified: number;
  manifest: ArrayBuffer;
};
type SummaryRow = Omit<Row, "manifest">;
type BucketRow = { name: string; created: number; present: number };

/** Where a scan starts: at `key` itself (inclusive) or just after it. */
interface Lower {
  key: string;
  inclusive: boolean;
}

type Entry = { kind: "object"; summary: ObjectSummary } | { kind: "prefix"; prefix: string };

export class BucketIndex extends DurableObject {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, BUCKET_INDEX_SCHEMA);
  }

  /** Marks the bucket as existing; "exists" (and no change) when it already does. */
  async init(name: string, created: number): Promise<"created" | "exists"> {
    if (this.exists()) return "exists";
    this.sql.exec(
      `INSERT INTO bucket (id, name, created, present) VALUES (1, ?, ?, 1)
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, created = excluded.created, present = 1`,
      name,
      created,
    );
    return "created";
  }

  async info(): Promise<BucketInfo | null> {
    const row = this.bucketRow();
    return row && row.present ? { name: row.name, created: row.created } : null;
  }

  /** Removes the bucket if it exists and holds no objects. */
  async drop(): Promise<"dropped" | "not-empty" | "missing"> {
    if (!this.exists()) return "missing";
    if (!this.empty()) return "not-empty";
    this.sql.exec("UPDATE bucket SET present = 0 WHERE id = 1");
    return "dropped";
  }

  /** Whether the bucket exists and, if so, the object under `key`: a GET's one metadata call. */
  async head(key: string): Promise<{ bucket: boolean; object: ObjectRecord | null }> {
    if (!this.exists()) return { bucket: false, object: null };
    return { bucket: true, object: this.record(key) };
  }

  /**
   * Replaces the object under `record.key` if `condition` holds, and returns the record it
   * superseded so the caller can delete that version's shard files once this has committed.
   */
  async put(record: ObjectRecord, condition: WriteCondition = {}): Promise<PutResult> {
    return this.ctx.storage.transactionSync((): PutResult => {
      if (!this.exists()) return { ok: false, reason: "NoSuchBucket" };
      const previous = this.record(record.key);
      if (!conditionHolds(previous, condition)) return { ok: false, reason: "PreconditionFailed" };
      this.sql.exec(
        `INSERT INTO objects (key, size, etag, last_modified, manifest) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (key) DO UPDATE SET size = excluded.size, etag = excluded.etag,
           last_modified = excluded.last_modified, manifest = excluded.manifest`,
        record.key,
        record.size,
        record.etag,
        record.lastModified,
        toArrayBuffer(record.manifest),
      );
      return { ok: true, previous };
    });
  }

  /** Removes the object under `key` (a no-op when there is none) and returns what was there. */
  async delete(key: string): Promise<{ bucket: boolean; previous: ObjectRecord | null }> {
    return this.ctx.storage.transactionSync(() => {
      if (!this.exists()) return { bucket: false, previous: null };
      const previous = this.record(key);
      if (previous) this.sql.exec("DELETE FROM objects WHERE key = ?", key);
      return { bucket: true, previous };
    });
  }

  async isEmpty(): Promise<boolean> {
    return this.empty();
  }

  /**
   * One page of an S3 listing (see ListQuery). Cost is one indexed range query per common
   * prefix on the page plus one, never a scan of the keys a common prefix rolls up.
   */
  async list(q: ListQuery): Promise<ListPage> {
    const maxKeys = Math.min(Math.max(Math.trunc(q.maxKeys) || 0, 0), MAX_LIST_KEYS);
    if (maxKeys === 0 || !this.exists()) return { objects: [], commonPrefixes: [], isTruncated: false, last: null };
    // One entry more than the page holds tells whether the listing goes on.
    const entries = this.collect(q, maxKeys + 1);
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
  private collect(q: ListQuery, limit: number): Entry[] {
    const end = q.prefix === "" ? null : prefixEnd(q.prefix);
    const entries: Entry[] = [];
    let lower: Lower | null = startOf(q.prefix, q.after);
    while (lower !== null && entries.length < limit) {
      let next: Lower | null = null;
      for (const row of this.scan(lower, end, limit - entries.length)) {
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

  /** Summaries from `lower` up to `end` (exclusive; null: no bound) in key order, read lazily. */
  private scan(lower: Lower, end: string | null, limit: number): Iterable<SummaryRow> {
    const from = lower.inclusive ? "key >= ?" : "key > ?";
    const bindings: (string | number)[] = [lower.key];
    let where = from;
    if (end !== null) {
      where += " AND key < ?";
      bindings.push(end);
    }
    bindings.push(limit);
    return this.sql.exec<SummaryRow>(
      `SELECT key, size, etag, last_modified FROM objects WHERE ${where} ORDER BY key LIMIT ?`,
      ...bindings,
    );
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private bucketRow(): BucketRow | null {
    return this.sql.exec<BucketRow>("SELECT name, created, present FROM bucket WHERE id = 1").toArray()[0] ?? null;
  }

  private exists(): boolean {
    return this.bucketRow()?.present === 1;
  }

  private empty(): boolean {
    return this.sql.exec("SELECT 1 FROM objects LIMIT 1").toArray().length === 0;
  }

  private record(key: string): ObjectRecord | null {
    const row = this.sql
      .exec<Row>("SELECT key, size, etag, last_modified, manifest FROM objects WHERE key = ?", key)
      .toArray()[0];
    return row ? { ...toSummary(row), manifest: new Uint8Array(row.manifest) } : null;
  }
}

/** The first position a listing reads: just after `after` if that is within or past the prefix's keys. */
function startOf(prefix: string, after: string | null): Lower {
  if (after !== null && compareKeys(after, prefix) >= 0) return { key: after, inclusive: false };
  return { key: prefix, inclusive: true };
}

function conditionHolds(current: ObjectRecord | null, condition: WriteCondition): boolean {
  if (condition.ifNoneMatch && current !== null) return false;
  if (condition.ifMatch !== undefined && current?.etag !== condition.ifMatch) return false;
  return true;
}

function entryName(entry: Entry): string {
  return entry.kind === "object" ? entry.summary.key : entry.prefix;
}

function toSummary(row: SummaryRow): ObjectSummary {
  return { key: row.key, size: row.size, etag: row.etag, lastModified: row.last_modified };
}

/** SQLite binds BLOBs from ArrayBuffers only; copy out exactly the view's bytes. */
function toArrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.slice().buffer;
}
