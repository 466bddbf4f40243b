// A bucket's replication (PutBucketReplication, api/s3/bucket-replication.ts): its rules, which
// commits they queue in the outbox (meta/outbox.ts, targets "replica:NAME/BUCKET", NAME empty for
// a bucket of this gateway) and each replicated version's x-amz-replication-status. A commit that
// matches an enabled rule writes its outbox row and its PENDING status in the commit's own
// transaction (BucketIndex.put, completeUpload, deleteMany); services/replication.ts delivers the
// row (run from the index's alarm by jobs/bucket-jobs.ts) and sets COMPLETED, or FAILED after its
// last attempt. A bucket without rules reads nothing per write once its (empty) rules are known.
// It also notes the multipart uploads replication has begun at a remote target and not yet
// completed or aborted, so that one whose abort failed (the remote down) is aborted later.
//
// A rule may filter by tags (all of them, same values, on the version as committed: its
// manifest's tags; a later PutObjectTagging queues nothing and changes no status). A rule with
// ExistingObjectReplication Enabled also replicates the versions already in the bucket: setting
// the configuration starts a walk of the bucket's current objects (replication_walk, its cursor the
// next key), which the index's alarm advances a bounded step at a time (walkStep: its bounds, and
// why it waits rather than drop); a new configuration restarts it, and one without it
// (DeleteBucketReplication too) cancels it. A status is per version, not per destination: a
// destination the configuration adds (the walk's new targets) gets the versions already
// replicated elsewhere too.
import { core } from "../core";
import type { ObjectEvent, Outbox, RetryPolicy } from "./outbox";
import { LOCAL_ARN_PREFIX, REMOTE_ARN_PREFIX } from "../shared/arns";

export const REPLICATION_SCHEMA: readonly string[] = [
  "CREATE TABLE replication_config (id INTEGER PRIMARY KEY CHECK (id = 1), rules TEXT NOT NULL)",
  `CREATE TABLE replication_status (
     key TEXT NOT NULL,
     version_id TEXT NOT NULL,
     status TEXT NOT NULL,
     reason TEXT,
     PRIMARY KEY (key, version_id)
   ) WITHOUT ROWID`,
];

/** Multipart uploads begun at a remote target (services/replication.ts), until completed or aborted. */
export const REPLICATION_UPLOADS_SCHEMA: readonly string[] = [
  `CREATE TABLE replication_uploads (
     target TEXT NOT NULL,
     upload_id TEXT NOT NULL,
     key TEXT NOT NULL,
     since INTEGER NOT NULL,
     PRIMARY KEY (target, upload_id)
   ) WITHOUT ROWID`,
];

/**
 * When a multipart upload left behind (its abort failed) is tried again, and how often it was:
 * aborts back off, and after MAX_ABORT_ATTEMPTS one is given up (counted), so a remote that never
 * aborts cannot grow the table for good.
 */
export const REPLICATION_UPLOAD_RETRY_SCHEMA: readonly string[] = [
  "ALTER TABLE replication_uploads ADD COLUMN next_at INTEGER NOT NULL DEFAULT 0",
  "ALTER TABLE replication_uploads ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0",
  "CREATE INDEX replication_uploads_by_due ON replication_uploads (next_at)",
];

/** Aborts of an upload left behind tried at most this often (backing off as the outbox's rows do). */
const MAX_ABORT_ATTEMPTS = 20;
/** Uploads left behind kept at most: past it, no new multipart upload begins until some are gone. */
export const MAX_LEFT_UPLOADS = 1000;

/** The walk of existing objects (ExistingObjectReplication): where it goes on, and what it did. */
export const REPLICATION_WALK_SCHEMA: readonly string[] = [
  `CREATE TABLE replication_walk (
     id INTEGER PRIMARY KEY CHECK (id = 1),
     generation INTEGER NOT NULL,
     after TEXT,
     started INTEGER NOT NULL,
     visited INTEGER NOT NULL DEFAULT 0,
     queued INTEGER NOT NULL DEFAULT 0,
     runs INTEGER NOT NULL DEFAULT 0,
     largest_run INTEGER NOT NULL DEFAULT 0,
     waits INTEGER NOT NULL DEFAULT 0,
     done INTEGER
   )`,
];

/**
 * The walk's targets new to its configuration (JSON array: those the configuration before it did
 * not replicate to, which get versions already replicated elsewhere), the delay of its waiting
 * poll (ms; 0 while it walks) and the null versions it passed over (nothing to replicate).
 */
export const REPLICATION_WALK_TARGETS_SCHEMA: readonly string[] = [
  "ALTER TABLE replication_walk ADD COLUMN new_targets TEXT NOT NULL DEFAULT '[]'",
  "ALTER TABLE replication_walk ADD COLUMN wait_ms INTEGER NOT NULL DEFAULT 0",
  "ALTER TABLE replication_walk ADD COLUMN skipped_null INTEGER NOT NULL DEFAULT 0",
];

/** Versions one run of the walk queues at most. */
export const WALK_BATCH = 500;
/** Keys one run of the walk reads at most, queued or skipped (most may match no rule). */
const WALK_VISITS = 2000;
/** Manifest bytes one run of the walk decodes at most (for tag filters), the last one aside. */
export const WALK_MANIFEST_BYTES = 8 * 1024 * 1024;
/** The share of the outbox's cap the walk fills at most with replication's rows: the rest stays for new writes. */
const WALK_FILL = 0.9;
/** The waiting walk's poll: after a second, doubling to a minute while it queues nothing. */
const WALK_WAIT_FIRST_MS = 1000;
export const WALK_WAIT_MAX_MS = 60_000;
/**
 * The walk's read of the next keys: a search of the primary key from the cursor ('' before the
 * first key: a key is never empty), never a scan from the bucket's first key.
 */
export const WALK_KEYS_QUERY = "SELECT key, version_id, size, etag, last_modified FROM objects WHERE key > ? ORDER BY key LIMIT ?";

/** The state of the walk after a step, and how long its waiting poll waits (ms; 0 unless waiting). */
export interface WalkStep {
  state: "none" | "walking" | "waiting" | "done";
  queued: number;
  waitMs: number;
}

/** A multipart upload replication began at a remote target ("replica:TARGET/BUCKET"). */
export interface RemoteUpload {
  target: string;
  key: string;
  uploadId: string;
}

/** One rule as stored: its destination ARN as given, and the outbox target it names. */
export interface ReplicationRule {
  id: string;
  priority: number;
  enabled: boolean;
  /** Keys that start with it (""; every key). */
  prefix: string;
  /** Whether delete markers are replicated (DeleteMarkerReplication Enabled; never with tags). */
  deleteMarkers: boolean;
  /** Tags a version must all carry, with these values (absent: none), in the order given. */
  tags?: [string, string][];
  /** The Filter came as <And> (answered back the same way). */
  and?: boolean;
  /** ExistingObjectReplication: Enabled (true), Disabled (false), not given (absent). */
  existing?: boolean;
  /** As given: arn:aws:s3:::BUCKET or arn:shardgate:s3:::TARGET/BUCKET. */
  destination: string;
  /** The outbox target: "replica:TARGET/BUCKET" ("replica:/BUCKET" for a bucket here). */
  target: string;
  /**
   * When a rule to this target with this filter first stood (ms; kept across configurations that
   * keep it, set by setConfiguration): versions written since went to the target as they were
   * written, older ones only by a walk. Absent: always (rules stored before it was kept).
   */
  since?: number;
}

/** A source version's progress, or REPLICA: a version replication wrote (never replicated again). */
export type ReplicationStatus = "PENDING" | "COMPLETED" | "FAILED" | "REPLICA";

export const REPLICA_PREFIX = "replica:";

/**
 * The header a replication run sends with the writes and deletes it makes at a remote
 * (`x-shardgate-replica: true`), and that this gateway honours, signed, from its root key alone
 * (api/http/permissions.ts REPLICA_MARK): the write is a REPLICA here and never replicated again,
 * as S3 replicates no replica, so two gateways replicating to each other do not copy without end.
 */
export const REPLICA_HEADER = "x-shardgate-replica";

/** The outbox target a destination ARN names; null when it is not one (no check of the names). */
export function targetOfDestination(arn: string): { target: string; remote: string | null; bucket: string } | null {
  if (arn.startsWith(LOCAL_ARN_PREFIX)) {
    const bucket = arn.slice(LOCAL_ARN_PREFIX.length);
    return bucket && !bucket.includes("/") ? { target: `${REPLICA_PREFIX}/${bucket}`, remote: null, bucket } : null;
  }
  if (!arn.startsWith(REMOTE_ARN_PREFIX)) return null;
  const rest = arn.slice(REMOTE_ARN_PREFIX.length);
  const slash = rest.indexOf("/");
  if (slash <= 0 || slash === rest.length - 1 || rest.indexOf("/", slash + 1) >= 0) return null;
  const remote = rest.slice(0, slash);
  const bucket = rest.slice(slash + 1);
  return { target: `${REPLICA_PREFIX}${remote}/${bucket}`, remote, bucket };
}

/** An outbox target's parts: the remote target's name ("" for this gateway) and the bucket. */
export function destinationOfTarget(target: string): { remote: string; bucket: string } | null {
  if (!target.startsWith(REPLICA_PREFIX)) return null;
  const rest = target.slice(REPLICA_PREFIX.length);
  const slash = rest.indexOf("/");
  return slash < 0 ? null : { remote: rest.slice(0, slash), bucket: rest.slice(slash + 1) };
}

type Tags = [string, string][];

/** Whether `have` holds every tag of `want` with the same value (lifecycle filters ask too). */
export function carries(have: Tags, want: Tags): boolean {
  return want.every(([k, v]) => have.some(([hk, hv]) => hk === k && hv === v));
}

/** The tags of a manifest (none when it cannot be read: a rule with tags then does not match). */
function tagsOfManifest(manifest: Uint8Array): Tags {
  try {
    return core.decodeManifest(manifest).tags;
  } catch {
    return [];
  }
}

/**
 * For each destination, the rule of highest priority that is enabled and matches `key` and the
 * version's tags (read only when a rule names tags; a delete marker has none) (S3: when rules
 * overlap, the higher priority wins), and for a delete marker only one that replicates them.
 */
export function rulesFor(rules: readonly ReplicationRule[], key: string, deleteMarker: boolean, tagsOf: () => Tags = () => []): ReplicationRule[] {
  const best = new Map<string, ReplicationRule>();
  let tags: Tags | undefined;
  for (const rule of rules) {
    if (!rule.enabled || !key.startsWith(rule.prefix)) continue;
    if (rule.tags && rule.tags.length > 0 && !carries((tags ??= deleteMarker ? [] : tagsOf()), rule.tags)) continue;
    const held = best.get(rule.target);
    if (!held || rule.priority > held.priority) best.set(rule.target, rule);
  }
  return [...best.values()].filter((r) => !deleteMarker || r.deleteMarkers);
}

/** A rule's destination and filter, as the walk compares configurations (setConfiguration). */
function walkedKey(r: ReplicationRule): string {
  return JSON.stringify([r.target, r.prefix, r.and === true, r.tags ?? []]);
}

/** A bucket's replication configuration and the statuses of its versions, in its index. */
export class Replication {
  private rules: ReplicationRule[] | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** The rules ([]: none); read once, then remembered. */
  configuration(): ReplicationRule[] {
    if (this.rules === undefined) {
      const row = this.sql.exec<{ rules: string }>("SELECT rules FROM replication_config WHERE id = 1").toArray()[0];
      this.rules = row ? (JSON.parse(row.rules) as ReplicationRule[]) : [];
    }
    return this.rules;
  }

  /**
   * Replaces the rules (null or []: none), in the caller's transaction. Versions already queued are
   * still replicated. The walk of existing objects starts over when a rule enabled asks for it, and
   * is cancelled otherwise; whether one starts.
   */
  setConfiguration(rules: readonly ReplicationRule[] | null, now = Date.now()): boolean {
    // What the configuration before walked already: its enabled rules asking for existing objects,
    // by target and filter. A target is new to this walk when a rule of it asks for existing objects
    // with a filter (or the ask itself) the configuration before did not have: a new destination, a
    // widened filter, ExistingObjectReplication turned on.
    const previous = this.configuration().filter((r) => r.enabled);
    const walked = new Set(previous.filter((r) => r.existing === true).map(walkedKey));
    // Each rule's `since`: that of the same target and filter before, else now.
    const sinceOf = new Map(previous.map((r) => [walkedKey(r), r.since ?? 0]));
    const stored = (rules ?? []).map((r) => ({ ...r, since: sinceOf.get(walkedKey(r)) ?? now }));
    // A walk cut short keeps the targets new to it that it had not walked to the end.
    const cut = this.sql.exec<{ t: string; done: number | null }>("SELECT new_targets AS t, done FROM replication_walk WHERE id = 1").toArray()[0];
    const unfinished = new Set(cut && cut.done === null ? (JSON.parse(cut.t) as string[]) : []);
    this.rules = undefined;
    if (stored.length === 0) this.sql.exec("DELETE FROM replication_config");
    else this.sql.exec("INSERT OR REPLACE INTO replication_config (id, rules) VALUES (1, ?)", JSON.stringify(stored));
    const walk = stored.some((r) => r.enabled && r.existing === true);
    if (!walk) {
      this.sql.exec("DELETE FROM replication_walk");
      return false;
    }
    const generation = this.sql.exec<{ g: number | null }>("SELECT MAX(generation) AS g FROM replication_walk").one().g ?? 0;
    const asking = stored.filter((r) => r.enabled && r.existing === true);
    const fresh = [...new Set(asking.filter((r) => !walked.has(walkedKey(r)) || unfinished.has(r.target)).map((r) => r.target))];
    this.sql.exec(
      "INSERT OR REPLACE INTO replication_walk (id, generation, after, started, new_targets) VALUES (1, ?, NULL, ?, ?)",
      generation + 1,
      now,
      JSON.stringify(fresh.sort()),
    );
    return true;
  }

  forget(): void {
    this.rules = undefined;
  }

  /**
   * Queues `e` for each destination a rule gives it (a created version, or a delete marker made),
   * in the caller's transaction; a created version queued is PENDING. How many rows were written
   * and dropped at the outbox's cap.
   */
  record(e: ObjectEvent, outbox: Outbox, cap: number, replica = false, manifest?: Uint8Array): { queued: number; dropped: number } {
    if (replica) {
      if (e.versionId !== null && e.event.startsWith("ObjectCreated:")) this.setStatus(e.key, e.versionId, "REPLICA", null);
      return { queued: 0, dropped: 0 };
    }
    const rules = this.configuration();
    const marker = e.event === "ObjectRemoved:DeleteMarkerCreated";
    if (rules.length === 0 || e.versionId === null || (!marker && !e.event.startsWith("ObjectCreated:"))) return { queued: 0, dropped: 0 };
    const taken = rulesFor(rules, e.key, marker, () => (manifest ? tagsOfManifest(manifest) : []));
    const queued = taken.filter((rule) => outbox.enqueue(rule.target, rule.id, e, cap)).length;
    const dropped = taken.length - queued;
    if (!marker && queued + dropped > 0) this.setStatus(e.key, e.versionId, dropped > 0 ? "FAILED" : "PENDING", dropped > 0 ? "the outbox was full" : null);
    return { queued, dropped };
  }

  /** Sets a version's status (a version no longer there keeps none). */
  setStatus(key: string, versionId: string, status: ReplicationStatus, reason: string | null): void {
    const upsert =
      "INSERT INTO replication_status (key, version_id, status, reason) VALUES (?, ?, ?, ?) ON CONFLICT (key, version_id) DO UPDATE SET status = excluded.status, reason = excluded.reason";
    this.sql.exec(upsert, key, versionId, status, reason === null ? null : reason.slice(0, 500));
  }

  /** A version's status; null when it is not replicated. */
  statusOf(key: string, versionId: string | null): ReplicationStatus | null {
    if (versionId === null) return null;
    const row = this.sql.exec<{ status: string }>("SELECT status FROM replication_status WHERE key = ? AND version_id = ?", key, versionId).toArray()[0];
    return row ? (row.status as ReplicationStatus) : null;
  }

  /** Before the dead letters go back in the outbox: the versions they replicate are PENDING again. */
  retrying(): void {
    this.sql.exec(
      `UPDATE replication_status SET status = 'PENDING', reason = NULL WHERE (key, version_id) IN
         (SELECT key, version_id FROM outbox_dead WHERE substr(target, 1, ?) = ? AND substr(event, 1, 14) = 'ObjectCreated:')`,
      REPLICA_PREFIX.length,
      REPLICA_PREFIX,
    );
  }

  /**
   * One bounded step of the walk of existing objects, in the caller's transaction: from its cursor,
   * in key order, each current object that a rule with ExistingObjectReplication Enabled takes (the
   * rule of highest priority for its destination, as for a new write) is queued and PENDING, for
   * every destination when it was never replicated (or FAILED with no dead letter kept), and
   * otherwise (PENDING, COMPLETED, FAILED with its dead letter kept, which the admin retry sends)
   * only for a destination new to the configuration without a row for it already; a REPLICA never.
   * A null version is passed over and counted: it has no version id to replicate. Its status is
   * read before its manifest (for tag filters) is. At most `batch` versions queued, WALK_VISITS keys
   * read (skipped ones too) and `manifestBytes` decoded (the last manifest aside); none queued past
   * WALK_FILL of `cap` in replication's rows (webhooks' are not the walk's) nor past `cap` itself
   * (the step stops before that key: "waiting", and waits longer each time it queues nothing).
   * "none": no walk; "done": it has ended.
   */
  walkStep(outbox: Outbox, cap: number, batch = WALK_BATCH, now = Date.now(), manifestBytes = WALK_MANIFEST_BYTES): WalkStep {
    const walk = this.sql
      .exec<{ after: string | null; done: number | null; new_targets: string; wait_ms: number }>(
        "SELECT after, done, new_targets, wait_ms FROM replication_walk WHERE id = 1",
      )
      .toArray()[0];
    if (!walk) return { state: "none", queued: 0, waitMs: 0 };
    if (walk.done !== null) return { state: "done", queued: 0, waitMs: 0 };
    const rules = this.configuration();
    const existing = rules.filter((r) => r.enabled && r.existing === true);
    const fresh = new Set(JSON.parse(walk.new_targets) as string[]);
    const limit = Math.floor(cap * WALK_FILL);
    let pending = outbox.pendingOf(REPLICA_PREFIX);
    let queued = 0;
    let visited = 0;
    let skippedNull = 0;
    let after = walk.after;
    const decoded = { bytes: 0 };
    let state: "walking" | "waiting" | "done" = "walking";
    // (An outbox without replication's rows takes a version whatever the share: a tiny cap never stalls the walk.)
    if (pending > 0 && pending >= limit) state = "waiting";
    else {
      let read = 0;
      let stopped = false;
      type KeyRow = { key: string; version_id: string | null; size: number; etag: string; last_modified: number };
      for (const row of this.sql.exec<KeyRow>(WALK_KEYS_QUERY, after ?? "", WALK_VISITS)) {
        read++;
        if (queued >= batch || decoded.bytes >= manifestBytes) {
          stopped = true;
          break;
        }
        if (row.version_id !== null) {
          const take = this.walkRules(rules, fresh, { key: row.key, versionId: row.version_id, written: row.last_modified }, outbox, decoded);
          if (take.length > 0) {
            // Past the walk's share of replication's rows, or past the cap itself (webhooks' rows count there: it waits rather than drop).
            const free = outbox.free(cap);
            if ((pending > 0 && pending + take.length > limit) || (free < take.length && free < cap)) {
              state = "waiting";
              stopped = true;
              break;
            }
            const e: ObjectEvent = { event: "ObjectCreated:Put", key: row.key, versionId: row.version_id, size: row.size, etag: row.etag, time: now };
            const written = take.filter((rule) => outbox.enqueue(rule.target, rule.id, e, cap)).length;
            // Only a cap smaller than a version's destinations drops one here: FAILED, as for a new write.
            this.setStatus(row.key, row.version_id, written < take.length ? "FAILED" : "PENDING", written < take.length ? "the outbox was full" : null);
            pending += written;
            queued++;
          }
        } else if (existing.some((r) => row.key.startsWith(r.prefix))) skippedNull++;
        visited++;
        after = row.key;
      }
      if (!stopped && read < WALK_VISITS) state = "done";
    }
    // Waiting: the poll waits a second, then twice as long each run that queued nothing, up to a minute.
    const waitMs = state !== "waiting" ? 0 : queued > 0 || walk.wait_ms === 0 ? WALK_WAIT_FIRST_MS : Math.min(WALK_WAIT_MAX_MS, walk.wait_ms * 2);
    const update = `UPDATE replication_walk SET after = ?, visited = visited + ?, queued = queued + ?, runs = runs + 1,
         largest_run = MAX(largest_run, ?), waits = waits + ?, done = ?, wait_ms = ?, skipped_null = skipped_null + ? WHERE id = 1`;
    this.sql.exec(update, after, visited, queued, queued, state === "waiting" ? 1 : 0, state === "done" ? now : null, waitMs, skippedNull);
    return { state, queued, waitMs };
  }

  /**
   * The rules the walk queues version `versionId` of `key` for: its status first (no manifest read
   * for a version that goes nowhere), then the rules, its manifest decoded (its bytes counted in
   * `decoded`) only when a rule that may take it filters by tags.
   */
  private walkRules(
    rules: readonly ReplicationRule[],
    fresh: ReadonlySet<string>,
    { key, versionId, written }: { key: string; versionId: string; written: number },
    outbox: Outbox,
    decoded: { bytes: number },
  ): ReplicationRule[] {
    const candidates = rules.filter((r) => r.enabled && key.startsWith(r.prefix));
    if (!candidates.some((r) => r.existing === true)) return [];
    const status = this.statusOf(key, versionId);
    if (status === "REPLICA") return [];
    // Replicated (or on its way) already: only by a rule new to the walk (its target in `fresh`) that
    // stood only since after this version was written (so it never went there), with no row for it yet.
    const replicated = status === "PENDING" || status === "COMPLETED" || (status === "FAILED" && outbox.waiting(key, versionId, REPLICA_PREFIX));
    const goes = (r: ReplicationRule) => !replicated || (fresh.has(r.target) && written < (r.since ?? 0) && !outbox.holds(r.target, key, versionId));
    const allowed = candidates.filter(goes);
    if (!allowed.some((r) => r.existing === true)) return [];
    const tagsOf = () => {
      const m = new Uint8Array(this.sql.exec<{ m: ArrayBuffer }>("SELECT manifest AS m FROM objects WHERE key = ?", key).one().m);
      decoded.bytes += m.byteLength;
      return tagsOfManifest(m);
    };
    return rulesFor(allowed, key, false, tagsOf).filter((r) => r.existing === true);
  }

  /** The walk of existing objects: null when there is none (or it was cancelled). */
  walkStatus() {
    type Counts = Record<"visited" | "queued" | "runs" | "largestRun" | "waits" | "waitMs", number>;
    const row = this.sql
      .exec<{ generation: number; after: string | null; started: number; done: number | null; newTargets: string; skipped: number } & Counts>(
        `SELECT generation, after, started, done, new_targets AS newTargets, skipped_null AS skipped,
           visited, queued, runs, largest_run AS largestRun, waits, wait_ms AS waitMs FROM replication_walk WHERE id = 1`,
      )
      .toArray()[0];
    if (!row) return null;
    const { generation, after, started, done, newTargets, skipped, ...counts } = row;
    const state: "walking" | "done" = done === null ? "walking" : "done";
    const doneAt = done === null ? null : new Date(done).toISOString();
    return {
      generation,
      state,
      nextAfter: after,
      startedAt: new Date(started).toISOString(),
      doneAt,
      ...counts,
      newTargets: JSON.parse(newTargets) as string[],
      skippedNullVersions: skipped,
    };
  }

  /** Notes a multipart upload begun at a remote target (before its first part is sent). */
  uploadBegun(upload: RemoteUpload, now: number): void {
    const insert = "INSERT OR REPLACE INTO replication_uploads (target, upload_id, key, since) VALUES (?, ?, ?, ?)";
    this.sql.exec(insert, upload.target, upload.uploadId, upload.key, now);
  }

  /** Forgets a multipart upload that was completed or aborted. */
  uploadEnded(upload: Pick<RemoteUpload, "target" | "uploadId">): void {
    this.sql.exec("DELETE FROM replication_uploads WHERE target = ? AND upload_id = ?", upload.target, upload.uploadId);
  }

  /**
   * Multipart uploads begun and neither completed nor aborted (an attempt cut off, or its abort
   * failed) whose next abort is due at `now`, the longest due first, at most `limit`.
   */
  uploadsLeft(limit: number, now: number): RemoteUpload[] {
    const due = "SELECT target, key, upload_id AS uploadId FROM replication_uploads WHERE next_at <= ? ORDER BY next_at LIMIT ?";
    return this.sql.exec<{ target: string; key: string; uploadId: string }>(due, now, limit).toArray();
  }

  /** Uploads left behind, all of them. */
  uploadsLeftCount(): number {
    return this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM replication_uploads").one().n;
  }

  /** When the next abort of an upload left behind is due (ms since the epoch), or null when there is none. */
  nextUploadAbort(): number | null {
    return this.sql.exec<{ at: number | null }>("SELECT MIN(next_at) AS at FROM replication_uploads").one().at;
  }

  /** An abort of `upload` failed at `now`: tried again after `backoff`'s delay, or given up after its last attempt (true). */
  uploadAbortFailed(upload: Pick<RemoteUpload, "target" | "uploadId">, now: number, backoff: Pick<RetryPolicy, "firstMs" | "maxMs">): boolean {
    const row = this.sql
      .exec<{ attempts: number }>("SELECT attempts FROM replication_uploads WHERE target = ? AND upload_id = ?", upload.target, upload.uploadId)
      .toArray()[0];
    if (!row) return false;
    const attempts = row.attempts + 1;
    if (attempts >= MAX_ABORT_ATTEMPTS) {
      this.uploadEnded(upload);
      return true;
    }
    const at = now + Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.min(attempts - 1, 40));
    this.sql.exec("UPDATE replication_uploads SET attempts = ?, next_at = ? WHERE target = ? AND upload_id = ?", attempts, at, upload.target, upload.uploadId);
    return false;
  }

  /** Forgets the statuses of versions removed for good. */
  removed(key: string, versionId: string): void {
    this.sql.exec("DELETE FROM replication_status WHERE key = ? AND version_id = ?", key, versionId);
  }
}
