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
