// A bucket's replication (PutBucketReplication, api/s3/bucket-replication.ts): its rules, which
// commits they queue in the outbox (meta/outbox.ts, targets "replica:NAME/BUCKET", NAME empty for
// a bucket of this gateway) and each replicated version's x-amz-replication-status. A commit that
// matches an enabled rule writes its outbox row and its PENDING status in the commit's own
// transaction (BucketIndex.put, completeUpload, deleteMany); services/replication.ts delivers the
// row (run from the index's alarm by jobs/bucket-jobs.ts) and sets COMPLETED, or FAILED after its
// last attempt. A bucket without rules reads nothing per write once its (empty) rules are known.
// It also notes the multipart uploads replication has begun at a remote target and not yet
// completed or aborted, so that one whose abort failed (the remote down) is aborted later.
import type { ObjectEvent, Outbox } from "./outbox";
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
  /** Whether delete markers are replicated (DeleteMarkerReplication Enabled). */
  deleteMarkers: boolean;
  /** As given: arn:aws:s3:::BUCKET or arn:shardgate:s3:::TARGET/BUCKET. */
  destination: string;
  /** The outbox target: "replica:TARGET/BUCKET" ("replica:/BUCKET" for a bucket here). */
  target: string;
}

/** A source version's progress, or REPLICA: a version replication wrote (never replicated again). */
export type ReplicationStatus = "PENDING" | "COMPLETED" | "FAILED" | "REPLICA";

export const REPLICA_PREFIX = "replica:";

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

/**
 * For each destination, the rule of highest priority that is enabled and matches `key` (S3: when
 * rules overlap, the higher priority wins), and for a delete marker only one that replicates them.
 */
export function rulesFor(rules: readonly ReplicationRule[], key: string, deleteMarker: boolean): ReplicationRule[] {
  const best = new Map<string, ReplicationRule>();
  for (const rule of rules) {
    if (!rule.enabled || !key.startsWith(rule.prefix)) continue;
    const held = best.get(rule.target);
    if (!held || rule.priority > held.priority) best.set(rule.target, rule);
  }
  return [...best.values()].filter((r) => !deleteMarker || r.deleteMarkers);
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

  /** Replaces the rules (null or []: none). Versions already queued are still replicated. */
  setConfiguration(rules: readonly ReplicationRule[] | null): void {
    this.rules = undefined;
    if (!rules || rules.length === 0) this.sql.exec("DELETE FROM replication_config");
    else this.sql.exec("INSERT OR REPLACE INTO replication_config (id, rules) VALUES (1, ?)", JSON.stringify(rules));
  }

  forget(): void {
    this.rules = undefined;
  }

  /**
   * Queues `e` for each destination a rule gives it (a created version, or a delete marker made),
   * in the caller's transaction; a created version queued is PENDING. How many rows were written
   * and dropped at the outbox's cap.
   */
  record(e: ObjectEvent, outbox: Outbox, cap: number, replica = false): { queued: number; dropped: number } {
    if (replica) {
      if (e.versionId !== null && e.event.startsWith("ObjectCreated:")) this.setStatus(e.key, e.versionId, "REPLICA", null);
      return { queued: 0, dropped: 0 };
    }
    const rules = this.configuration();
    const marker = e.event === "ObjectRemoved:DeleteMarkerCreated";
    if (rules.length === 0 || e.versionId === null || (!marker && !e.event.startsWith("ObjectCreated:"))) return { queued: 0, dropped: 0 };
    let queued = 0;
    let dropped = 0;
    for (const rule of rulesFor(rules, e.key, marker)) {
      if (outbox.enqueue(rule.target, rule.id, e, cap)) queued++;
      else dropped++;
    }
    if (!marker && queued + dropped > 0) this.setStatus(e.key, e.versionId, dropped > 0 ? "FAILED" : "PENDING", dropped > 0 ? "the outbox was full" : null);
    return { queued, dropped };
  }

  /** Sets a version's status (a version no longer there keeps none). */
  setStatus(key: string, versionId: string, status: ReplicationStatus, reason: string | null): void {
    this.sql.exec(
      "INSERT INTO replication_status (key, version_id, status, reason) VALUES (?, ?, ?, ?) ON CONFLICT (key, version_id) DO UPDATE SET status = excluded.status, reason = excluded.reason",
      key,
      versionId,
      status,
      reason === null ? null : reason.slice(0, 500),
    );
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

  /** Notes a multipart upload begun at a remote target (before its first part is sent). */
  uploadBegun(upload: RemoteUpload, now: number): void {
    this.sql.exec(
      "INSERT OR REPLACE INTO replication_uploads (target, upload_id, key, since) VALUES (?, ?, ?, ?)",
      upload.target,
      upload.uploadId,
      upload.key,
      now,
    );
  }

  /** Forgets a multipart upload that was completed or aborted. */
  uploadEnded(upload: Pick<RemoteUpload, "target" | "uploadId">): void {
    this.sql.exec("DELETE FROM replication_uploads WHERE target = ? AND upload_id = ?", upload.target, upload.uploadId);
  }

  /** Multipart uploads begun and neither completed nor aborted (their abort failed), oldest first, at most `limit`. */
  uploadsLeft(limit: number): RemoteUpload[] {
    return this.sql
      .exec<{ target: string; upload_id: string; key: string }>("SELECT target, upload_id, key FROM replication_uploads ORDER BY since LIMIT ?", limit)
      .toArray()
      .map((r) => ({ target: r.target, key: r.key, uploadId: r.upload_id }));
  }

  /** Forgets the statuses of versions removed for good. */
  removed(key: string, versionId: string): void {
    this.sql.exec("DELETE FROM replication_status WHERE key = ? AND version_id = ?", key, versionId);
  }
}
