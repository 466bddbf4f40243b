// The direct path's bookkeeping in a bucket's index (docs/direct-path.md): writes that may happen
// once (a commit, until its ticket expires: a replay would make two versions share shard files),
// sessions whose commit has begun (sealed: no shard file of theirs goes live after it), and leases
// of shard writes completing now (a seal waits for them: services/direct-shards.ts). BucketIndex
// calls these inside its events; each forgets what has expired as it writes.
//
// Open sessions (`open_sessions`) are what a session holds until it ends: its declared size,
// reserved against the bucket's quota as `pending` bytes (meta/quota.ts, like an upload's parts),
// and its parts, which become garbage if it expires uncommitted. A commit ends it in the write's
// transaction (its bytes are then the object's), an abort or a refused commit by claim(), expiry
// by expire(). Open sessions are capped per key and per bucket.
import type { ManifestPart } from "../shared/core-api";
import * as quota from "./quota";

/** Schema version of the bucket index that adds open sessions (see BUCKET_INDEX_SCHEMA). */
export const OPEN_SESSIONS_SCHEMA: readonly string[] = [
  // holder: the key that opened it ('' for anonymous); until: when its reservation ends unless it
  // committed or was claimed (its ticket's expiry, plus a shard write's lease); parts: ManifestPart[].
  `CREATE TABLE open_sessions (
     id TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     bytes INTEGER NOT NULL,
     until INTEGER NOT NULL,
     parts TEXT NOT NULL
   ) WITHOUT ROWID`,
  "CREATE INDEX open_sessions_by_holder ON open_sessions (holder, until)",
  "CREATE INDEX open_sessions_by_until ON open_sessions (until)",
  "CREATE TRIGGER usage_sessions_insert AFTER INSERT ON open_sessions BEGIN UPDATE usage SET pending = pending + NEW.bytes; END",
  "CREATE TRIGGER usage_sessions_delete AFTER DELETE ON open_sessions BEGIN UPDATE usage SET pending = pending - OLD.bytes; END",
];

/**
 * Open sessions one key (anonymous writers together count as one) may hold in a bucket. The
 * console uploads three files at a time and resumes a session it kept; the rest is room for tabs
 * closed mid-upload, whose sessions stay open until they expire (hours). S3 has no such limit on
 * multipart uploads, but their parts are stored as they come; a session reserves its whole size.
 */
export const SESSIONS_PER_KEY = 100;

/** Open sessions a bucket holds at most: ten keys' worth, which bounds the table and the work of its expiry. */
export const SESSIONS_PER_BUCKET = 1000;

/** Expired sessions whose parts one call makes garbage at most: keeps one event's work bounded. */
const EXPIRED_PER_CALL = 100;

/** A session to open: its id, the key that opens it (null: anonymous), its declared size, until when it may be written, its parts. */
export interface OpenSession {
  id: string;
  holder: string | null;
  bytes: number;
  until: number;
  parts: readonly ManifestPart[];
}

export type SessionRefusal = "TooManySessions:key" | "TooManySessions:bucket";

/**
 * Opens a session: refused beyond the caps (counting only sessions not expired); its size
 * reserved within quota.withinQuota, which throws QuotaExceeded (the caller's transaction rolls
 * back) when the bucket's stored and pending bytes would exceed its quota.
 */
export function open(sql: SqlStorage, s: OpenSession, now: number): { ok: true } | { ok: false; reason: SessionRefusal } {
  expire(sql, now);
  const holder = s.holder ?? "";
  const count = (where: string, ...args: (string | number)[]) =>
    sql.exec<{ n: number }>(`SELECT count(*) AS n FROM open_sessions WHERE ${where}`, ...args).one().n;
  if (count("until >= ?", now) >= SESSIONS_PER_BUCKET) return { ok: false, reason: "TooManySessions:bucket" };
  if (count("holder = ? AND until >= ?", holder, now) >= SESSIONS_PER_KEY) return { ok: false, reason: "TooManySessions:key" };
  quota.withinQuota(sql, () =>
    sql.exec("INSERT INTO open_sessions (id, holder, bytes, until, parts) VALUES (?, ?, ?, ?, ?)", s.id, holder, s.bytes, s.until, JSON.stringify(s.parts)),
  );
  return { ok: true };
}

/** Ends session `id` (its reservation released, its parts no longer its): whether it was open. */
export function end(sql: SqlStorage, id: string): boolean {
  return sql.exec("DELETE FROM open_sessions WHERE id = ? RETURNING id", id).toArray().length > 0;
}

/**
 * Ends sessions that expired uncommitted, a bounded batch: their parts become garbage (the
 * garbage job removes the shard files), their reservations are released.
 */
export function expire(sql: SqlStorage, now: number): void {
  const batch = "SELECT id FROM open_sessions WHERE until < ? ORDER BY until LIMIT ?";
  sql.exec(
    `INSERT INTO garbage (part, since) SELECT p.value, ? FROM open_sessions s, json_each(s.parts) p WHERE s.id IN (${batch})`,
    now,
    now,
    EXPIRED_PER_CALL,
  );
  sql.exec(`DELETE FROM open_sessions WHERE id IN (${batch})`, now, EXPIRED_PER_CALL);
}

/** Ends every session (its bucket goes): their parts become garbage. */
export function endAll(sql: SqlStorage, now: number): void {
  sql.exec("INSERT INTO garbage (part, since) SELECT p.value, ? FROM open_sessions s, json_each(s.parts) p", now);
  sql.exec("DELETE FROM open_sessions");
}

/** When the next session expires (at least a second from `now`); null when none is open. */
export function expiryDue(sql: SqlStorage, now: number): number | null {
  const until = sql.exec<{ until: number | null }>("SELECT min(until) AS until FROM open_sessions").one().until;
  return until === null ? null : Math.max(until + 1, now + 1000);
}

/**
 * Whether a commit of session `once` may write: not spent, and (for a session that reserved its
 * size, `once.reserved`) still open: not expired, aborted or ended by a refused commit.
 */
export function committable(sql: SqlStorage, once: { id: string; until: number; reserved?: boolean }, now: number): boolean {
  if (spent(sql, once.id, now)) return false;
  return !once.reserved || sql.exec("SELECT 1 FROM open_sessions WHERE id = ?", once.id).toArray().length > 0;
}

/**
 * What a write with `once` (a session's commit) does alongside its version, within its quota
 * check (object-records.ts commit): the session spent and ended, its reservation now the
 * object's bytes. Undefined for other writes.
 */
export function committing(sql: SqlStorage, once: { id: string; until: number } | undefined, now: number): (() => void) | undefined {
  if (!once) return undefined;
  return () => {
    record(sql, "spent", once, now);
    end(sql, once.id);
  };
}

/** Whether a commit of session `id` has begun (its ticket has not expired). */
export function sealed(sql: SqlStorage, id: string, now: number): boolean {
  return sql.exec("SELECT 1 FROM sealed WHERE id = ? AND until >= ?", id, now).toArray().length > 0;
}

/** Whether a shard write of session `id` holds a lease. */
export function writing(sql: SqlStorage, id: string, now: number): boolean {
  return sql.exec("SELECT 1 FROM shard_writes WHERE session = ? AND until >= ?", id, now).toArray().length > 0;
}

/** Whether a write that may happen once has happened (and its ticket has not expired). */
export function spent(sql: SqlStorage, id: string, now: number): boolean {
  return sql.exec("SELECT 1 FROM spent WHERE id = ? AND until >= ?", id, now).toArray().length > 0;
}

/**
 * Records `once` in `table` until its ticket expires (forgetting the rows expired): spent, a write
 * that may happen once has happened; sealed, the session's commit has begun.
 */
function record(sql: SqlStorage, table: "spent" | "sealed", once: { id: string; until: number }, now: number): void {
  sql.exec(`DELETE FROM ${table} WHERE until < ?`, now);
  sql.exec(`INSERT INTO ${table} (id, until) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET until = excluded.until`, once.id, once.until);
}

/** Ends a shard write's lease (its file is stored, or never will be). */
export function endLease(sql: SqlStorage, id: string, lease: string): void {
  sql.exec("DELETE FROM shard_writes WHERE session = ? AND lease = ?", id, lease);
}

/**
 * How long a shard write's lease (beginShardWrite) holds at most: the writer gives its node the
 * file's last bytes only once it holds one, and gives up well within it (SHARD_WRITE_FINISH_MS).
 */
export const SHARD_WRITE_LEASE_MS = 60_000;

/**
 * Spends a write that may happen once without writing (a direct-path session's abort, or its
 * refused commit), and ends the session: "spent" when it was spent already (committed, or aborted
 * before); "writing" while a shard file of the session is completing (the abort waits, so that it
 * removes that file too). A commit after it is refused.
 */
export function claim(sql: SqlStorage, once: { id: string; until: number }, now: number): "claimed" | "spent" | "writing" {
  // Once its ticket expired, whether it committed is forgotten (`spent` rows go): an expired session is
  // never claimed, and its expiry (expire) alone gives up what it did not commit.
  if (now > once.until || spent(sql, once.id, now)) return "spent";
  if (writing(sql, once.id, now)) return "writing";
  record(sql, "spent", once, now);
  end(sql, once.id);
  return "claimed";
}

/**
 * Seals a direct-path session as its commit begins: from then on no shard file of it goes live
 * (beginWrite refuses), so the files the commit checks are the ones it commits and nobody changes
 * them afterwards. "writing" while a shard write of the session holds a lease (the commit waits
 * for it); "spent" once committed or aborted; "locked" for a session that handed out presigned
 * node URLs (they cannot be taken back) when the bucket has object lock now (`locked`).
 */
export function sealForCommit(sql: SqlStorage, once: { id: string; until: number }, locked: boolean, now: number): "sealed" | "spent" | "writing" | "locked" {
  if (spent(sql, once.id, now)) return "spent";
  if (locked) return "locked";
  if (writing(sql, once.id, now)) return "writing";
  record(sql, "sealed", once, now);
  return "sealed";
}

/**
 * A lease for a shard write of session `id` (valid until `until`) to complete: null when the
 * session is sealed, spent or expired. While it holds (SHARD_WRITE_LEASE_MS at most, or until
 * endLease) the session's seal waits; after it, no write of the session begins.
 */
export function beginWrite(sql: SqlStorage, id: string, until: number, now: number): string | null {
  if (now > until || spent(sql, id, now) || sealed(sql, id, now)) return null;
  sql.exec("DELETE FROM shard_writes WHERE until < ?", now);
  const lease = crypto.randomUUID();
  sql.exec("INSERT INTO shard_writes (session, lease, until) VALUES (?, ?, ?)", id, lease, now + SHARD_WRITE_LEASE_MS);
  return lease;
}
