// A bucket's outbox: events its commits made, to be delivered after the commit and never lost
// once it is made. A write or delete that makes an event writes its row IN ITS OWN TRANSACTION
// (BucketIndex.put, completeUpload, deleteMany), so no event is sent for a write that did not
// commit and none is lost for one that did. Rows are generic (a target, the event's kind, key,
// version, size, ETag, time and a sequencer that only grows), so that other consumers (bucket
// replication) can use the same table with targets of their own. The deliverer (the index's alarm,
// services/notification-delivery.ts, run by jobs/bucket-jobs.ts) takes due rows, at most one per (target, key) and never one behind an
// earlier row of its key, so events of one key reach a target in order; a failed row is retried
// later (exponential backoff), and after its last attempt it moves to the dead letters, kept here
// until the operator retries them (admin API). The outbox holds at most a cap of rows: past it a
// new event is dropped and counted, never a write refused.
//
// Also here: the bucket's notification configuration (meta/notification-rules.ts), which decides
// which events are written; a bucket without one writes no row and reads nothing per write.
import { type EventName, matchingRules, type NotificationRule, targetOfArn } from "./notification-rules";

/** The columns of an event, in the outbox and in its dead letters. */
const EVENT_COLUMNS = `target TEXT NOT NULL,
     config_id TEXT NOT NULL,
     event TEXT NOT NULL,
     key TEXT NOT NULL,
     version_id TEXT,
     size INTEGER,
     etag TEXT,
     time INTEGER NOT NULL`;

export const OUTBOX_SCHEMA: readonly string[] = [
  "CREATE TABLE notification_config (id INTEGER PRIMARY KEY CHECK (id = 1), rules TEXT NOT NULL)",
  `CREATE TABLE outbox (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     ${EVENT_COLUMNS},
     attempts INTEGER NOT NULL DEFAULT 0,
     next_at INTEGER NOT NULL,
     last_error TEXT
   )`,
  "CREATE INDEX outbox_by_key ON outbox (target, key, seq)",
  "CREATE INDEX outbox_by_due ON outbox (next_at, seq)",
  `CREATE TABLE outbox_dead (
     seq INTEGER PRIMARY KEY,
     ${EVENT_COLUMNS},
     attempts INTEGER NOT NULL,
     last_error TEXT,
     failed_at INTEGER NOT NULL
   )`,
  "CREATE TABLE outbox_stats (id INTEGER PRIMARY KEY CHECK (id = 1), dropped INTEGER NOT NULL)",
];

/**
 * A version's rows, found by key and version (Outbox.waiting, Outbox.holds: replication's walk of
 * existing objects asks per key): an index search, not a scan of the outbox and its dead letters.
 */
export const OUTBOX_VERSION_SCHEMA: readonly string[] = [
  "CREATE INDEX outbox_by_version ON outbox (key, version_id)",
  "CREATE INDEX outbox_dead_by_version ON outbox_dead (key, version_id)",
];

/** Whether a row of `table` for version `versionId` of `key` has a target starting with `prefix`. */
export const waitingQuery = (table: "outbox" | "outbox_dead") => `SELECT 1 FROM ${table} WHERE key = ? AND version_id = ? AND substr(target, 1, ?) = ? LIMIT 1`;
/** Whether a row of `table` for version `versionId` of `key` goes to `target`. */
export const holdsQuery = (table: "outbox" | "outbox_dead") => `SELECT 1 FROM ${table} WHERE key = ? AND version_id = ? AND target = ? LIMIT 1`;
/** Rows in the outbox whose target lies in [from, to): a range of its index by target. */
export const PENDING_OF_QUERY = "SELECT COUNT(*) AS n FROM outbox WHERE target >= ? AND target < ?";

/** What happened to an object: the event, and what it names. */
export interface ObjectEvent {
  event: EventName;
  key: string;
  /** The version written or removed; null: the bucket is unversioned. */
  versionId: string | null;
  /** Of a created object; null for a removal. */
  size: number | null;
  etag: string | null;
  time: number;
}

/** A row of the outbox (or of the dead letters). */
export interface OutboxRow extends ObjectEvent {
  seq: number;
  target: string;
  configId: string;
  attempts: number;
  lastError: string | null;
}

/** When failed rows are tried again and when they are given up (config.ts GatewayConfig.notify, from SHARDGATE_NOTIFY_*). */
export interface RetryPolicy {
  /** The first retry's delay (ms); each further one doubles it, up to `maxMs`. */
  firstMs: number;
  maxMs: number;
  /** Attempts before a row goes to the dead letters. */
  attempts: number;
  /** Rows the outbox (and the dead letters, each) hold at most. */
  cap: number;
  /** How long one delivery attempt may take (ms). */
  timeoutMs: number;
}

/** A row as SQL answers it, under OutboxRow's names (a mapped type: the one kind `exec` takes). */
type Row = Pick<OutboxRow, keyof OutboxRow>;
const COLUMNS = "seq, target, config_id AS configId, event, key, version_id AS versionId, size, etag, time, attempts, last_error AS lastError";

/** The outbox of one bucket's index, with what its one instance remembers (the rules, the row count). */
export class Outbox {
  private rules: NotificationRule[] | undefined;
  private pending: number | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** The notification configuration (none: []); read once, then remembered. */
  configuration(): NotificationRule[] {
    if (this.rules === undefined) {
      const row = this.sql.exec<{ rules: string }>("SELECT rules FROM notification_config WHERE id = 1").toArray()[0];
      this.rules = row ? (JSON.parse(row.rules) as NotificationRule[]) : [];
    }
    return this.rules;
  }

  /** Replaces the configuration ([] or null: none). Events already written stay and are delivered. */
  setConfiguration(rules: readonly NotificationRule[] | null): void {
    this.rules = undefined;
    if (!rules || rules.length === 0) this.sql.exec("DELETE FROM notification_config");
    else this.sql.exec("INSERT OR REPLACE INTO notification_config (id, rules) VALUES (1, ?)", JSON.stringify(rules));
  }

  /** Forgets what is remembered (a transaction that changed it may roll back). */
  forget(): void {
    this.rules = undefined;
    this.pending = undefined;
  }

  /**
   * Writes a row for each rule `e` matches, in the caller's transaction: nothing at all when the
   * bucket has no configuration. Past the cap a row is dropped and counted. How many of each.
   */
  record(e: ObjectEvent, cap: number): { queued: number; dropped: number } {
    const rules = this.configuration();
    if (rules.length === 0) return { queued: 0, dropped: 0 };
    let queued = 0;
    let dropped = 0;
    for (const rule of matchingRules(rules, e.event, e.key)) {
      const target = targetOfArn(rule.arn);
      if (target === null) continue;
      if (this.enqueue(target, rule.id, e, cap)) queued++;
      else dropped++;
    }
    if (dropped > 0) this.countDropped(dropped);
    return { queued, dropped };
  }

  /** One row for `target` (any consumer's), unless the outbox is full. Whether it was written. */
  enqueue(target: string, configId: string, e: ObjectEvent, cap: number): boolean {
    this.pending ??= this.count();
    if (this.pending >= cap) return false;
    this.sql.exec(
      "INSERT INTO outbox (target, config_id, event, key, version_id, size, etag, time, next_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      target,
      configId,
      e.event,
      e.key,
      e.versionId,
      e.size,
      e.etag,
      e.time,
      e.time,
    );
    this.pending++;
    return true;
  }

  /** Rows in the outbox, counted (and remembered again). */
  count(): number {
    this.pending = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox").one().n;
    return this.pending;
  }

  /**
   * Rows due at `now` whose target starts with `prefix` (one consumer's: "webhook:", "replica:"),
   * oldest first, at most `limit`: at most one per (target, key), and none while an earlier row of
   * its key for its target is still in the outbox (order per key).
   */
  due(now: number, limit: number, prefix = ""): OutboxRow[] {
    // In sequence order a key's earlier row comes before its later ones.
    const candidates = this.sql
      .exec<Row>(`SELECT ${COLUMNS} FROM outbox WHERE next_at <= ? AND substr(target, 1, ?) = ? ORDER BY seq LIMIT ?`, now, prefix.length, prefix, limit * 4)
      .toArray();
    const taken = new Set<string>();
    const out: OutboxRow[] = [];
    for (const r of candidates) {
      const id = `${r.target}\u0000${r.key}`;
      if (out.length >= limit || taken.has(id)) continue;
      taken.add(id);
      const earlier = this.sql
        .exec<{ at: number | null }>("SELECT MAX(next_at) AS at FROM outbox WHERE target = ? AND key = ? AND seq < ?", r.target, r.key, r.seq)
        .one().at;
      if (earlier === null) out.push(r);
      // Behind an earlier row that waits for its retry: it waits as long (no alarm for a row that cannot go).
      else if (earlier > now) this.sql.exec("UPDATE outbox SET next_at = ? WHERE seq = ?", earlier, r.seq);
    }
    return out;
  }

  /** When the next row (whose target starts with `prefix`) is due (ms since the epoch), or null when there is none. */
  nextDue(prefix = ""): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT MIN(next_at) AS at FROM outbox WHERE substr(target, 1, ?) = ?", prefix.length, prefix).one().at;
  }

  /** Rows waiting and dead letters whose target starts with `prefix`. */
  countOf(prefix: string): { pending: number; dead: number } {
    const count = (table: string) =>
      this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE substr(target, 1, ?) = ?`, prefix.length, prefix).one().n;
    return { pending: count("outbox"), dead: count("outbox_dead") };
  }

  /**
   * Rows waiting (not the dead letters) whose target starts with `prefix` (not empty), counted over
   * the index by target: only those rows are read.
   */
  pendingOf(prefix: string): number {
    const end = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
    return this.sql.exec<{ n: number }>(PENDING_OF_QUERY, prefix, end).one().n;
  }

  /** Rows the outbox takes before its cap (its count remembered, as `enqueue` keeps it). */
  free(cap: number): number {
    this.pending ??= this.count();
    return cap - this.pending;
  }

  /** Whether a row for version `versionId` of `key` with a target starting with `prefix` still waits, or was given up. */
  waiting(key: string, versionId: string, prefix: string): boolean {
    const one = (table: "outbox" | "outbox_dead") => this.sql.exec(waitingQuery(table), key, versionId, prefix.length, prefix).toArray().length > 0;
    return one("outbox") || one("outbox_dead");
  }

  /** Whether a row for version `versionId` of `key` to `target` still waits, or was given up. */
  holds(target: string, key: string, versionId: string): boolean {
    const one = (table: "outbox" | "outbox_dead") => this.sql.exec(holdsQuery(table), key, versionId, target).toArray().length > 0;
    return one("outbox") || one("outbox_dead");
  }

  /** Forgets the rows delivered. */
  delivered(seqs: readonly number[]): void {
    for (const seq of seqs) this.sql.exec("DELETE FROM outbox WHERE seq = ?", seq);
    if (this.pending !== undefined) this.pending = Math.max(0, this.pending - seqs.length);
  }

  /**
   * Counts a failed attempt on each row: tried again after its backoff (the later rows of its key
   * wait as long), or after its last attempt moved to the dead letters. How many went there.
   */
  failed(rows: readonly { row: OutboxRow; error: string }[], now: number, policy: RetryPolicy): number {
    let dead = 0;
    for (const { row, error } of rows) {
      const attempts = row.attempts + 1;
      if (attempts >= policy.attempts) {
        this.bury(row.seq, attempts, error, now);
        dead++;
        continue;
      }
      const at = now + Math.min(policy.maxMs, policy.firstMs * 2 ** Math.min(attempts - 1, 40));
      this.sql.exec("UPDATE outbox SET attempts = ?, next_at = ?, last_error = ? WHERE seq = ?", attempts, at, error.slice(0, 500), row.seq);
      this.sql.exec("UPDATE outbox SET next_at = ? WHERE target = ? AND key = ? AND seq > ? AND next_at < ?", at, row.target, row.key, row.seq, at);
    }
    if (dead > 0) this.trimDead(policy.cap);
    return dead;
  }

  private bury(seq: number, attempts: number, error: string, now: number): void {
    this.sql.exec(
      `INSERT OR REPLACE INTO outbox_dead (seq, target, config_id, event, key, version_id, size, etag, time, attempts, last_error, failed_at)
       SELECT seq, target, config_id, event, key, version_id, size, etag, time, ?, ?, ? FROM outbox WHERE seq = ?`,
      attempts,
      error.slice(0, 500),
      now,
      seq,
    );
    this.sql.exec("DELETE FROM outbox WHERE seq = ?", seq);
    if (this.pending !== undefined) this.pending = Math.max(0, this.pending - 1);
  }

  /** Keeps the newest `cap` dead letters; the older ones are dropped and counted. */
  private trimDead(cap: number): void {
    const n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox_dead").one().n;
    if (n <= cap) return;
    this.sql.exec("DELETE FROM outbox_dead WHERE seq IN (SELECT seq FROM outbox_dead ORDER BY seq LIMIT ?)", n - cap);
    this.countDropped(n - cap);
  }

  private countDropped(n: number): void {
    this.sql.exec("INSERT INTO outbox_stats (id, dropped) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET dropped = dropped + excluded.dropped", n);
  }

  /** The outbox's size, the dead letters (the oldest `limit`) and their number, events dropped at the cap. */
  status(limit: number): { pending: number; dead: OutboxRow[]; deadCount: number; dropped: number; nextDue: number | null } {
    const dead = this.sql.exec<Row>(`SELECT ${COLUMNS} FROM outbox_dead ORDER BY seq LIMIT ?`, limit).toArray();
    const deadCount = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox_dead").one().n;
    const dropped = this.sql.exec<{ d: number }>("SELECT dropped AS d FROM outbox_stats WHERE id = 1").toArray()[0]?.d ?? 0;
    return { pending: this.count(), dead, deadCount, dropped, nextDue: this.nextDue() };
  }

  /** Puts the dead letters back in the outbox (their sequencers kept), due at `now`. How many. */
  retryDead(now: number): number {
    const n = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM outbox_dead").one().n;
    this.sql.exec(
      `INSERT INTO outbox (seq, target, config_id, event, key, version_id, size, etag, time, attempts, next_at, last_error)
       SELECT seq, target, config_id, event, key, version_id, size, etag, time, 0, ?, last_error FROM outbox_dead`,
      now,
    );
    this.sql.exec("DELETE FROM outbox_dead");
    this.pending = undefined;
    return n;
  }
}

/** S3's sequencer of a row: its outbox sequence as fixed-width hex (compared as strings per key). */
export function sequencer(seq: number): string {
  return seq.toString(16).toUpperCase().padStart(16, "0");
}
