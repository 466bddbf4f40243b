// The browser path's bookkeeping in a bucket's index (docs/browser-path.md): writes that may happen
// once (a commit, until its grant expires: a replay would make two versions share shard files),
// sessions whose commit has begun (sealed: no shard file of theirs goes live after it), and leases
// of shard writes completing now (a seal waits for them: services/direct-shards.ts). BucketIndex
// calls these inside its events; each forgets what has expired as it writes.

/** Whether a commit of session `id` has begun (its grant has not expired). */
export function sealed(sql: SqlStorage, id: string, now: number): boolean {
  return sql.exec("SELECT 1 FROM sealed WHERE id = ? AND until >= ?", id, now).toArray().length > 0;
}

/** Whether a shard write of session `id` holds a lease. */
export function writing(sql: SqlStorage, id: string, now: number): boolean {
  return sql.exec("SELECT 1 FROM shard_writes WHERE session = ? AND until >= ?", id, now).toArray().length > 0;
}

/** Whether a write that may happen once has happened (and its grant has not expired). */
export function spent(sql: SqlStorage, id: string, now: number): boolean {
  return sql.exec("SELECT 1 FROM spent WHERE id = ? AND until >= ?", id, now).toArray().length > 0;
}

/** Records a write that may happen once. */
export function spend(sql: SqlStorage, once: { id: string; until: number }, now: number): void {
  sql.exec("DELETE FROM spent WHERE until < ?", now);
  sql.exec("INSERT INTO spent (id, until) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET until = excluded.until", once.id, once.until);
}

/** Records that session `once.id`'s commit has begun. */
export function seal(sql: SqlStorage, once: { id: string; until: number }, now: number): void {
  sql.exec("DELETE FROM sealed WHERE until < ?", now);
  sql.exec("INSERT INTO sealed (id, until) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET until = excluded.until", once.id, once.until);
}

/** A new lease for a shard write of session `id`, held until `until`: its id. */
export function lease(sql: SqlStorage, id: string, until: number, now: number): string {
  sql.exec("DELETE FROM shard_writes WHERE until < ?", now);
  const lease = crypto.randomUUID();
  sql.exec("INSERT INTO shard_writes (session, lease, until) VALUES (?, ?, ?)", id, lease, until);
  return lease;
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
 * Spends a write that may happen once without writing (a browser-path session's abort): "spent"
 * when it was spent already (committed, or aborted before); "writing" while a shard file of the
 * session is completing (the abort waits, so that it removes that file too). A commit after it
 * is refused.
 */
export function claim(sql: SqlStorage, once: { id: string; until: number }, now: number): "claimed" | "spent" | "writing" {
  if (spent(sql, once.id, now)) return "spent";
  if (writing(sql, once.id, now)) return "writing";
  spend(sql, once, now);
  return "claimed";
}

/**
 * Seals a browser-path session as its commit begins: from then on no shard file of it goes live
 * (beginWrite refuses), so the files the commit checks are the ones it commits and nobody changes
 * them afterwards. "writing" while a shard write of the session holds a lease (the commit waits
 * for it); "spent" once committed or aborted; "locked" for a session that handed out presigned
 * node URLs (they cannot be taken back) when the bucket has object lock now (`locked`).
 */
export function sealForCommit(sql: SqlStorage, once: { id: string; until: number }, locked: boolean, now: number): "sealed" | "spent" | "writing" | "locked" {
  if (spent(sql, once.id, now)) return "spent";
  if (locked) return "locked";
  if (writing(sql, once.id, now)) return "writing";
  seal(sql, once, now);
  return "sealed";
}

/**
 * A lease for a shard write of session `id` (valid until `until`) to complete: null when the
 * session is sealed, spent or expired. While it holds (SHARD_WRITE_LEASE_MS at most, or until
 * endLease) the session's seal waits; after it, no write of the session begins.
 */
export function beginWrite(sql: SqlStorage, id: string, until: number, now: number): string | null {
  if (now > until || spent(sql, id, now) || sealed(sql, id, now)) return null;
  return lease(sql, id, now + SHARD_WRITE_LEASE_MS, now);
}
