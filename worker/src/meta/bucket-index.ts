// One SQLite-backed Durable Object per bucket: whether the bucket exists, and its object index
// (key -> manifest, plus what listing needs). A Durable Object runs one event at a time and its
// synchronous SQL calls cannot interleave with another request, so every read-check-write below
// is done without an `await` in between and is atomic.
import { DurableObject } from "cloudflare:workers";
import { equalBytes } from "../shared/bytes";
import { core } from "../core";
import { applyRules, currentExpiry, type LifecycleCounts, type LifecycleRule } from "./lifecycle-rules";
import { defaultLock, deleteForbidden, type LockConfig, type ObjectLock, retained, retentionChangeForbidden } from "./object-lock";
import { migrate } from "./schema";
import type { ManifestPart } from "../shared/core-api";
import type {
  BucketInfo,
  GarbageEntry,
  HealQueueEntry,
  CompleteResult,
  DeleteOutcome,
  Expiry,
  LockRefusal,
  HeadResult,
  ListPage,
  ListQuery,
  ListUploadsPage,
  ListUploadsQuery,
  ObjectRecord,
  PartRecord,
  PutResult,
  UploadInfo,
  ListVersionsPage,
  ListVersionsQuery,
  VersioningStatus,
  WriteCondition,
} from "./types";
import * as direct from "./direct-sessions";
import * as heal from "./heal-queue";
import * as listing from "./listing";
import * as stored from "./stored-parts";
import * as uploads from "./uploads";
import { UPLOADS_SCHEMA } from "./uploads";
import * as versions from "./versions";
import { VERSIONS_SCHEMA } from "./versions";

/** The most keys plus common prefixes one listing page returns, whatever is asked (as S3). */

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
  // Multipart uploads and their parts; the bucket's CORS configuration (JSON, or NULL).
  [...UPLOADS_SCHEMA, "ALTER TABLE bucket ADD COLUMN cors TEXT"],
  // Objects waiting for heal: written while some node was down (under-replicated), or read
  // around a missing, failed or rotten shard file. Kept with the object, so a write or delete
  // updates it in the same transaction.
  [
    `CREATE TABLE heal_queue (
       key TEXT PRIMARY KEY,
       reason TEXT NOT NULL,
       since INTEGER NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       last_error TEXT,
       shards TEXT
     ) WITHOUT ROWID`,
  ],
  // Shard files to delete (services/garbage.ts drains it): the parts of uploads that expired or
  // went with their bucket, recorded in the transaction that dropped them. The Durable Object
  // never touches a node itself.
  [
    `CREATE TABLE garbage (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       part TEXT NOT NULL,
       since INTEGER NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       last_error TEXT
     )`,
  ],
  // Versioning: the bucket's state, and every version that is not a key's current object.
  VERSIONS_SCHEMA,
  // The bucket's tags (JSON), or NULL.
  ["ALTER TABLE bucket ADD COLUMN tags TEXT"],
  // Lifecycle rules (JSON, meta/lifecycle-rules.ts), or NULL, and where their pass goes on.
  ["ALTER TABLE bucket ADD COLUMN lifecycle TEXT", "ALTER TABLE bucket ADD COLUMN lifecycle_cursor TEXT"],
  // Object lock: the bucket's configuration (JSON, meta/object-lock.ts) and each version's lock.
  ["ALTER TABLE bucket ADD COLUMN object_lock TEXT", "ALTER TABLE objects ADD COLUMN lock TEXT", "ALTER TABLE versions ADD COLUMN lock TEXT"],
  // The bucket policy (its JSON document as given), or NULL.
  ["ALTER TABLE bucket ADD COLUMN policy TEXT"],
  // Default server-side encryption ({"algorithm": "AES256"}), or NULL.
  ["ALTER TABLE bucket ADD COLUMN encryption TEXT"],
  // Writes that may happen once (browser-path commits), until their grant expires: a replayed
  // commit would make two versions share one set of shard files.
  ["CREATE TABLE spent (id TEXT PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID", "CREATE INDEX spent_by_until ON spent (until)"],
  // Browser-path sessions whose commit has begun (no shard file of theirs goes live after it), and
  // shard writes completing now (a lease each, which a seal waits for): services/direct-shards.ts.
  [
    "CREATE TABLE sealed (id TEXT PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE shard_writes (session TEXT NOT NULL, lease TEXT NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (session, lease)) WITHOUT ROWID",
  ],
];

/** Per-bucket settings kept as JSON in a column of the bucket row (the table names the column). */
export type BucketSetting = "cors" | "tags" | "lifecycle" | "policy" | "encryption";
const SETTING_COLUMNS: Record<BucketSetting, string> = { cors: "cors", tags: "tags", lifecycle: "lifecycle", policy: "policy", encryption: "encryption" };

/**
 * How long a shard write's lease (beginShardWrite) holds at most: the writer gives its node the
 * file's last bytes only once it holds one, and gives up well within it (SHARD_WRITE_FINISH_MS).
 */
export const SHARD_WRITE_LEASE_MS = 60_000;

/** Versions one lifecycle call visits at most (a key's versions are never split). */
const LIFECYCLE_BATCH = 2000;

/** Multipart uploads not completed within this long are aborted and their parts removed. */
export const STALE_UPLOAD_MS = 7 * 24 * 3600 * 1000;
/** Stale uploads removed per alarm run: keeps one run's work bounded. */
const STALE_UPLOADS_PER_ALARM = 100;

type BucketRow = { name: string; created: number; present: number };

export class BucketIndex extends DurableObject {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, BUCKET_INDEX_SCHEMA);
  }

  /**
   * Marks the bucket as existing; "exists" (and no change) when it already does. With
   * `objectLock`, it starts versioned with object lock enabled (CreateBucket's
   * x-amz-bucket-object-lock-enabled).
   */
  async init(name: string, created: number, objectLock = false): Promise<"created" | "exists"> {
    if (this.exists()) return "exists";
    this.present = undefined;
    this.status = undefined;
    this.lock = undefined;
    this.ctx.storage.transactionSync(() => {
      this.sql.exec(
        `INSERT INTO bucket (id, name, created, present) VALUES (1, ?, ?, 1)
         ON CONFLICT (id) DO UPDATE SET name = excluded.name, created = excluded.created, present = 1`,
        name,
        created,
      );
      if (objectLock) {
        versions.setVersioning(this.sql, "Enabled");
        this.sql.exec("UPDATE bucket SET object_lock = ? WHERE id = 1", JSON.stringify({ enabled: true } satisfies LockConfig));
      }
    });
    return "created";
  }

  async info(): Promise<BucketInfo | null> {
    const row = this.bucketRow();
    return row?.present ? { name: row.name, created: row.created } : null;
  }

  /** Removes the bucket if it exists and holds no objects. */
  async drop(): Promise<"dropped" | "not-empty" | "missing"> {
    this.present = undefined; // read again after the transaction, whatever its outcome
    const result = this.ctx.storage.transactionSync((): { outcome: "dropped" | "not-empty" | "missing"; parts: PartRecord[] } => {
      if (!this.exists()) return { outcome: "missing", parts: [] };
      if (!this.empty()) return { outcome: "not-empty", parts: [] };
      // Uploads in progress go with the bucket (they are not objects, so they do not block it).
      const parts = uploads.allUploadIds(this.sql).flatMap((id) => uploads.deleteUpload(this.sql, id));
      this.addGarbage(parts);
      this.sql.exec(
        "UPDATE bucket SET present = 0, cors = NULL, tags = NULL, versioning = NULL, lifecycle = NULL, lifecycle_cursor = NULL, object_lock = NULL, policy = NULL, encryption = NULL WHERE id = 1",
      );
      return { outcome: "dropped", parts };
    });
    this.present = undefined;
    this.status = undefined;
    this.rules = undefined;
    this.lock = undefined;
    return result.outcome;
  }

  /**
   * Whether the bucket exists and, if so, the object under `key`: its current version, or with
   * `versionId` (null: the null version) that version. A GET's one metadata call.
   */
  async head(key: string, versionId?: string | null): Promise<HeadResult> {
    if (!this.exists()) return { bucket: false, object: null, marker: null, versioned: false };
    const versioned = this.versioningStatus() !== null;
    if (versionId === undefined) {
      const object = this.record(key);
      const marker = object || !versioned ? null : versions.currentMarker(this.sql, key);
      return {
        bucket: true,
        object,
        marker: marker && { versionId: marker.versionId, lastModified: marker.lastModified },
        versioned,
        expiry: object ? this.expiryOf(object) : null,
      };
    }
    const found = versions.findVersion(this.sql, key, versionId);
    if (found?.marker) return { bucket: true, object: null, marker: { versionId: found.versionId, lastModified: found.lastModified }, versioned };
    if (!found) return { bucket: true, object: null, marker: null, versioned };
    const { marker: _, seq: __, ...object } = found;
    return { bucket: true, object, marker: null, versioned };
  }

  /**
   * Makes `record` the current version of its key if `condition` holds (meta/versions.ts: a new
   * version, or a replacement when the bucket is unversioned). Returns the versions replaced for
   * good so the caller can delete their shard files once this has committed.
   */
  async put(record: ObjectRecord, condition: WriteCondition = {}, heal: string | null = null): Promise<PutResult> {
    return this.ctx.storage.transactionSync((): PutResult => {
      if (!this.exists()) return { ok: false, reason: "NoSuchBucket" };
      if (condition.once && direct.spent(this.sql, condition.once.id, Date.now())) return { ok: false, reason: "AlreadyCommitted" };
      if (!conditionHolds(this.record(record.key), condition)) return { ok: false, reason: "PreconditionFailed" };
      const locked = this.withLock(record, condition);
      if (typeof locked === "string") return { ok: false, reason: locked };
      if (condition.once) direct.spend(this.sql, condition.once, Date.now());
      const change = versions.putVersion(this.sql, locked);
      this.setHeal(record.key, heal);
      return { ok: true, ...change, expiry: this.expiryOf(record) };
    });
  }

  /**
   * Spends a write that may happen once without writing (a browser-path session's abort): "spent"
   * when it was spent already (committed, or aborted before); "writing" while a shard file of the
   * session is completing (the abort waits, so that it removes that file too). A commit after it
   * is refused.
   */
  async claimOnce(once: { id: string; until: number }): Promise<"claimed" | "spent" | "writing"> {
    return this.ctx.storage.transactionSync(() => {
      if (direct.spent(this.sql, once.id, Date.now())) return "spent";
      if (direct.writing(this.sql, once.id, Date.now())) return "writing";
      direct.spend(this.sql, once, Date.now());
      return "claimed";
    });
  }

  /**
   * Seals a browser-path session as its commit begins: from then on no shard file of it goes live
   * (beginShardWrite refuses), so the files the commit checks are the ones it commits and nobody
   * changes them afterwards. "writing" while a shard write of the session holds a lease (the
   * commit waits for it); "spent" once committed or aborted; "locked" for a session that handed
   * out presigned node URLs (they cannot be taken back) when the bucket has object lock now.
   */
  async sealSession(once: { id: string; until: number }, presigned: boolean): Promise<"sealed" | "spent" | "writing" | "locked"> {
    return this.ctx.storage.transactionSync(() => {
      if (direct.spent(this.sql, once.id, Date.now())) return "spent";
      if (presigned && this.lockConfig()) return "locked";
      if (direct.writing(this.sql, once.id, Date.now())) return "writing";
      direct.seal(this.sql, once, Date.now());
      return "sealed";
    });
  }

  /** Whether shard files of a browser-path session may still be written: not sealed, committed or aborted. */
  async sessionWritable(id: string): Promise<boolean> {
    return !direct.spent(this.sql, id, Date.now()) && !direct.sealed(this.sql, id, Date.now());
  }

  /**
   * A lease for a shard write of session `id` (valid until `until`) to complete: null when the
   * session is sealed, spent or expired. While it holds (SHARD_WRITE_LEASE_MS at most, or until
   * endShardWrite) the session's seal waits; after it, no write of the session begins.
   */
  async beginShardWrite(id: string, until: number): Promise<string | null> {
    return this.ctx.storage.transactionSync(() => {
      const now = Date.now();
      if (now > until || direct.spent(this.sql, id, now) || direct.sealed(this.sql, id, now)) return null;
      return direct.lease(this.sql, id, now + SHARD_WRITE_LEASE_MS, now);
    });
  }

  /** Ends a shard write's lease (its file is stored, or never will be). */
  async endShardWrite(id: string, lease: string): Promise<void> {
    direct.endLease(this.sql, id, lease);
  }

  /**
   * Deletes the current version of `key` (a delete marker in a versioned bucket) or, with
   * `versionId`, that version for good. The outcome is null when there is no such version.
   */
  async delete(key: string, versionId?: string | null, bypassGovernance = false): Promise<{ bucket: boolean; outcome: DeleteOutcome | null }> {
    return this.ctx.storage.transactionSync(() => {
      if (!this.exists()) return { bucket: false, outcome: null };
      return { bucket: true, outcome: this.deleteOne(key, versionId, bypassGovernance) };
    });
  }

  /**
   * Deletes many keys or versions at once (DeleteObjects): one transaction, one round trip. The
   * outcome of each, in order (null: no such version).
   */
  async deleteMany(
    items: { key: string; versionId?: string | null }[],
    bypassGovernance = false,
  ): Promise<{ bucket: boolean; outcomes: (DeleteOutcome | null)[] }> {
    return this.ctx.storage.transactionSync(() => {
      if (!this.exists()) return { bucket: false, outcomes: [] };
      return { bucket: true, outcomes: items.map((item) => this.deleteOne(item.key, item.versionId, bypassGovernance)) };
    });
  }

  private deleteOne(key: string, versionId: string | null | undefined, bypassGovernance: boolean): DeleteOutcome | null {
    if (versionId !== undefined) {
      // Deleting a version for good: object lock decides, in this transaction.
      const found = versions.findVersion(this.sql, key, versionId);
      const denied = found && !found.marker ? deleteForbidden(found.lock, Date.now(), bypassGovernance) : null;
      if (denied) return { versionId: versionId ?? "null", marker: false, freed: [], denied };
    }
    const before = this.record(key);
    const outcome = versionId === undefined ? versions.deleteCurrent(this.sql, key, Date.now()) : versions.deleteVersion(this.sql, key, versionId);
    // The heal entry follows the current object: gone with it, or stale once another took its place.
    const after = this.record(key);
    if (!after || !before || after.versionId !== before.versionId) this.setHeal(key, null);
    return outcome;
  }

  /**
   * Replaces the record of version `record.versionId` of its key only if its manifest is still
   * exactly `expected` (a change of tags or metadata that must not undo a concurrent overwrite).
   */
  async replace(expected: Uint8Array, record: ObjectRecord): Promise<"replaced" | "changed" | "missing"> {
    return this.ctx.storage.transactionSync(() => (this.exists() ? versions.replaceVersion(this.sql, expected, record) : "missing"));
  }

  // --- versioning -----------------------------------------------------------------------------

  /** The bucket's versioning state; undefined when there is no bucket. */
  async versioning(): Promise<VersioningStatus | undefined> {
    return this.exists() ? this.versioningStatus() : undefined;
  }

  /** Enables or suspends versioning (never back to unversioned, as S3; never suspended under object lock). */
  async setVersioning(status: "Enabled" | "Suspended"): Promise<"ok" | "missing" | "locked"> {
    if (!this.exists()) return "missing";
    if (status === "Suspended" && this.lockConfig()) return "locked";
    versions.setVersioning(this.sql, status);
    this.status = status;
    return "ok";
  }

  /** One page of ListObjectVersions, or null when there is no bucket. */
  async listVersions(q: ListVersionsQuery): Promise<ListVersionsPage | null> {
    if (!this.exists()) return null;
    const maxKeys = Math.min(Math.max(Math.trunc(q.maxKeys) || 0, 0), listing.MAX_LIST_KEYS);
    if (maxKeys === 0) return { versions: [], commonPrefixes: [], isTruncated: false, nextKeyMarker: null, nextVersionIdMarker: null };
    return versions.listVersions(this.sql, q, maxKeys);
  }

  // --- the heal queue ---------------------------------------------------------------------------

  /**
   * Queues the object under `key` for heal if it is still the version `manifest` (a newer one
   * was written whole); `shards` names shard files known bad ({ storageId: [shard, …] }).
   */
  async queueHeal(key: string, manifest: Uint8Array, reason: string, shards: Record<string, number[]> | null = null): Promise<void> {
    const current = this.record(key);
    if (!current || !equalBytes(current.manifest, manifest)) return;
    heal.enqueue(this.sql, key, reason, shards, Date.now());
  }

  /** Counts an attempt at healing `key`, before the work (see services/heal.ts). */
  async healStarted(key: string): Promise<void> {
    heal.started(this.sql, key);
  }

  /** The oldest entries of the heal queue (fewest attempts first), at most `limit`, and its size. */
  async healQueue(limit: number): Promise<{ pending: number; entries: HealQueueEntry[] }> {
    return heal.page(this.sql, limit);
  }

  /**
   * Ends a heal: the entry goes when it succeeded, otherwise it stays with the error. With
   * `since`, only the entry the heal started from (a newer version's entry has a newer `since`).
   */
  async healed(key: string, error: string | null, since?: number): Promise<void> {
    heal.ended(this.sql, key, error, since);
  }

  /** A new version of the object: its entry is replaced (`reason`) or removed (null). */
  private setHeal(key: string, reason: string | null): void {
    heal.replace(this.sql, key, reason, Date.now());
  }

  // --- multipart uploads ----------------------------------------------------------------------

  async createUpload(upload: UploadInfo): Promise<"ok" | "NoSuchBucket" | "NoObjectLockConfiguration"> {
    if (!this.exists()) return "NoSuchBucket";
    if (upload.lock && !this.lockConfig()) return "NoObjectLockConfiguration";
    uploads.insertUpload(this.sql, upload);
    await this.scheduleStaleUploadCheck();
    return "ok";
  }

  /** The upload (null when there is no such upload for `key`), and whether the bucket exists. */
  async upload(uploadId: string, key: string): Promise<{ bucket: boolean; upload: UploadInfo | null }> {
    if (!this.exists()) return { bucket: false, upload: null };
    const upload = uploads.getUpload(this.sql, uploadId);
    return { bucket: true, upload: upload && upload.key === key ? upload : null };
  }

  /** Records an uploaded part; the part it replaced (to delete), or "NoSuchUpload". */
  async putPart(uploadId: string, key: string, part: PartRecord): Promise<{ ok: true; previous: PartRecord | null } | { ok: false }> {
    return this.ctx.storage.transactionSync(() => {
      const upload = this.exists() ? uploads.getUpload(this.sql, uploadId) : null;
      if (!upload || upload.key !== key) return { ok: false as const };
      return { ok: true as const, previous: uploads.upsertPart(this.sql, uploadId, part) };
    });
  }

  /** Parts numbered above `after`, at most `limit` (+1 to tell whether more follow). */
  async listParts(uploadId: string, key: string, after: number, limit: number): Promise<{ bucket: boolean; upload: UploadInfo | null; parts: PartRecord[] }> {
    const { bucket, upload } = await this.upload(uploadId, key);
    return { bucket, upload, parts: upload ? uploads.listPartRecords(this.sql, uploadId, after, limit) : [] };
  }

  async listUploads(q: ListUploadsQuery): Promise<ListUploadsPage | null> {
    if (!this.exists()) return null;
    return uploads.listUploads(this.sql, q, listing.MAX_LIST_KEYS);
  }

  /**
   * Completes an upload atomically: the listed parts must still be the versions the caller built
   * `record` from, and `condition` must hold. The upload's other parts come back as `unused`.
   */
  async completeUpload(
    uploadId: string,
    record: ObjectRecord,
    used: { partNumber: number; version: string }[],
    condition: WriteCondition = {},
    heal: string | null = null,
  ): Promise<CompleteResult> {
    return this.ctx.storage.transactionSync((): CompleteResult => {
      if (!this.exists()) return { ok: false, reason: "NoSuchBucket" };
      const upload = uploads.getUpload(this.sql, uploadId);
      if (!upload || upload.key !== record.key) return { ok: false, reason: "NoSuchUpload" };
      const parts = new Map(uploads.listPartRecords(this.sql, uploadId, 0, Number.MAX_SAFE_INTEGER).map((p) => [p.partNumber, p]));
      if (used.some((u) => parts.get(u.partNumber)?.version !== u.version)) return { ok: false, reason: "InvalidPart" };
      if (!conditionHolds(this.record(record.key), condition)) return { ok: false, reason: "PreconditionFailed" };
      const locked = this.withLock(record, { ...condition, integrity: true });
      if (typeof locked === "string") return { ok: false, reason: locked };
      const change = versions.putVersion(this.sql, locked);
      this.setHeal(record.key, heal);
      uploads.deleteUpload(this.sql, uploadId);
      for (const u of used) parts.delete(u.partNumber);
      return { ok: true, ...change, unused: [...parts.values()], expiry: this.expiryOf(record) };
    });
  }

  /** Removes an upload; its parts (to delete), or null when there is no such upload. */
  async abortUpload(uploadId: string, key: string): Promise<{ bucket: boolean; parts: PartRecord[] | null }> {
    return this.ctx.storage.transactionSync(() => {
      if (!this.exists()) return { bucket: false, parts: null };
      const upload = uploads.getUpload(this.sql, uploadId);
      if (!upload || upload.key !== key) return { bucket: true, parts: null };
      return { bucket: true, parts: uploads.deleteUpload(this.sql, uploadId) };
    });
  }

  /** The alarm: aborts uploads older than STALE_UPLOAD_MS, a bounded batch per run. */
  override async alarm(): Promise<void> {
    const cutoff = Date.now() - STALE_UPLOAD_MS;
    this.ctx.storage.transactionSync(() =>
      this.addGarbage(uploads.staleUploadIds(this.sql, cutoff, STALE_UPLOADS_PER_ALARM).flatMap((id) => uploads.deleteUpload(this.sql, id))),
    );
    await this.scheduleStaleUploadCheck();
  }

  private async scheduleStaleUploadCheck(): Promise<void> {
    const oldest = uploads.oldestUpload(this.sql);
    if (oldest === null) return;
    const due = Math.max(oldest + STALE_UPLOAD_MS, Date.now() + 1000);
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > due) await this.ctx.storage.setAlarm(due);
  }

  // --- bucket settings: CORS rules, tags, lifecycle rules, policy --------------------------------------------------------

  /** A setting of the bucket as stored (JSON), null when none; undefined: no bucket. */
  async setting(name: BucketSetting): Promise<string | null | undefined> {
    if (!this.exists()) return undefined;
    const row = this.sql.exec<Record<string, string | null>>(`SELECT ${SETTING_COLUMNS[name]} AS value FROM bucket WHERE id = 1`).toArray()[0];
    return row?.value ?? null;
  }

  /** Sets (or with null removes) a setting; false when the bucket does not exist. */
  async setSetting(name: BucketSetting, value: string | null): Promise<boolean> {
    if (!this.exists()) return false;
    this.sql.exec(`UPDATE bucket SET ${SETTING_COLUMNS[name]} = ? WHERE id = 1`, value);
    if (name === "lifecycle") {
      this.rules = undefined;
      // New rules start a new pass.
      this.sql.exec("UPDATE bucket SET lifecycle_cursor = NULL WHERE id = 1");
    }
    return true;
  }

  // --- object lock ----------------------------------------------------------------------------

  /** The bucket's object lock configuration; null: none; undefined: no bucket. */
  async objectLock(): Promise<LockConfig | null | undefined> {
    return this.exists() ? this.lockConfig() : undefined;
  }

  /** Enables object lock (versioning must be Enabled) and sets its default retention. */
  async setObjectLock(config: LockConfig): Promise<"ok" | "missing" | "not-versioned"> {
    if (!this.exists()) return "missing";
    if (this.versioningStatus() !== "Enabled") return "not-versioned";
    this.sql.exec("UPDATE bucket SET object_lock = ? WHERE id = 1", JSON.stringify(config));
    this.lock = config;
    return "ok";
  }

  /**
   * Sets a version's retention (mode and date; both absent: removes it) or legal hold, by S3's
   * rules (meta/object-lock.ts), in one transaction with the check. `versionId` undefined: the
   * current version.
   */
  async setVersionLock(
    key: string,
    versionId: string | null | undefined,
    change: { retention: Pick<ObjectLock, "mode" | "until"> } | { legalHold: boolean },
    bypassGovernance = false,
  ): Promise<{ result: "ok" | "no-bucket" | "no-lock" | "no-key" | "no-version" | "marker" } | { result: "denied"; reason: string }> {
    return this.ctx.storage.transactionSync(() => {
      if (!this.exists()) return { result: "no-bucket" as const };
      if (!this.lockConfig()) return { result: "no-lock" as const };
      const found = versionId === undefined ? this.currentVersion(key) : versions.findVersion(this.sql, key, versionId);
      if (!found) return { result: versionId === undefined ? ("no-key" as const) : ("no-version" as const) };
      if (found.marker) return { result: "marker" as const };
      const current = found.lock ?? {};
      let next: ObjectLock;
      if ("legalHold" in change) next = { ...current, legalHold: change.legalHold };
      else {
        const reason = retentionChangeForbidden(current, change.retention, Date.now(), bypassGovernance);
        if (reason) return { result: "denied" as const, reason };
        next = { ...(current.legalHold !== undefined ? { legalHold: current.legalHold } : {}), ...change.retention };
      }
      versions.setLock(this.sql, key, found.seq, next);
      return { result: "ok" as const };
    });
  }

  /** The key's current version (an object or a delete marker), with its place. */
  private currentVersion(key: string): versions.StoredVersion | null {
    const current = versions.currentObject(this.sql, key);
    return current ? { ...current, marker: false } : versions.currentMarker(this.sql, key);
  }

  /**
   * `record` with the lock it is written with: its own, or the bucket's default retention. A
   * string when object lock refuses the write.
   */
  private withLock(record: ObjectRecord, condition: WriteCondition): ObjectRecord | LockRefusal {
    const config = this.lockConfig();
    if (record.lock && !config) return "NoObjectLockConfiguration";
    const lock = record.lock?.mode !== undefined ? record.lock : { ...defaultLock(config, record.lastModified), ...record.lock };
    if ((retained(lock, record.lastModified) || lock.legalHold) && !condition.integrity) return "IntegrityRequired";
    return lock.mode !== undefined || lock.legalHold !== undefined ? { ...record, lock } : record;
  }

  private lockConfig(): LockConfig | null {
    if (this.lock === undefined) {
      const row = this.sql.exec<{ object_lock: string | null }>("SELECT object_lock FROM bucket WHERE id = 1").toArray()[0];
      this.lock = row?.object_lock ? (JSON.parse(row.object_lock) as LockConfig) : null;
    }
    return this.lock;
  }

  // --- lifecycle ------------------------------------------------------------------------------

  /**
   * One bounded step of the lifecycle pass as of `now` (meta/lifecycle-rules.ts), in one transaction:
   * what it expired, and whether the pass is done (the next call starts a new one). The shard
   * files of versions deleted for good and of aborted uploads go to the garbage queue. Null when
   * the bucket does not exist or has no rules.
   */
  async runLifecycle(now: number, budget = LIFECYCLE_BATCH): Promise<{ counts: LifecycleCounts; done: boolean } | null> {
    const rules = this.exists() ? this.lifecycleRules() : [];
    if (rules.length === 0) return null;
    return this.ctx.storage.transactionSync(() => {
      const cursor = this.sql.exec<{ c: string | null }>("SELECT lifecycle_cursor AS c FROM bucket WHERE id = 1").one().c;
      const step = applyRules(this.sql, rules, now, cursor, budget, (m) => core.decodeManifest(m).tags);
      this.sql.exec("UPDATE bucket SET lifecycle_cursor = ? WHERE id = 1", step.next);
      for (const key of new Set(step.freed.map((r) => r.key))) if (!this.record(key)) this.setHeal(key, null);
      this.addGarbageParts([...step.freed.flatMap((r) => core.decodeManifest(r.manifest).parts), ...step.abortedParts.map((p) => p.part)]);
      return { counts: step.counts, done: step.next === null };
    });
  }

  /** The bucket's lifecycle rules, parsed once per instance (only this instance changes them). */
  private lifecycleRules(): LifecycleRule[] {
    if (this.rules === undefined) {
      const row = this.sql.exec<{ lifecycle: string | null }>("SELECT lifecycle FROM bucket WHERE id = 1").toArray()[0];
      this.rules = row?.lifecycle ? (JSON.parse(row.lifecycle) as LifecycleRule[]) : [];
    }
    return this.rules;
  }

  /** When the current object `record` expires by the rules (x-amz-expiration), or null. */
  private expiryOf(record: ObjectRecord): Expiry | null {
    const rules = this.lifecycleRules();
    return rules.length === 0 ? null : currentExpiry(rules, record, () => core.decodeManifest(record.manifest).tags);
  }

  // --- garbage: shard files to delete ----------------------------------------------------------

  private addGarbage(parts: readonly PartRecord[]): void {
    this.addGarbageParts(parts.map((p) => p.part));
  }

  private addGarbageParts(parts: readonly ManifestPart[]): void {
    stored.addGarbage(this.sql, parts, Date.now());
  }

  /** Up to `limit` entries to delete, those tried least first, and how many there are in all. */
  async garbage(limit: number): Promise<{ pending: number; entries: GarbageEntry[] }> {
    return stored.garbagePage(this.sql, limit);
  }

  /**
   * What this bucket keeps on nodes, a page at a time, for the orphan sweep: the manifests of up
   * to `limit` versions, current objects first, then the other versions, from the opaque cursor
   * `after` (null: from the start); with the first page the parts of uploads in progress and of
   * garbage not yet deleted. `next` continues (null: done).
   */
  async storageRefs(after: string | null, limit: number): Promise<{ manifests: Uint8Array[]; parts: ManifestPart[]; next: string | null }> {
    return stored.storageRefs(this.sql, after, limit);
  }

  /** Forgets the entries whose files are gone; counts an attempt, with its error, on the others. */
  async garbageDone(removed: number[], failed: { id: number; error: string }[]): Promise<void> {
    this.ctx.storage.transactionSync(() => stored.garbageDone(this.sql, removed, failed));
  }

  async isEmpty(): Promise<boolean> {
    return this.empty();
  }

  /**
   * One page of an S3 listing (see ListQuery). Cost is one indexed range query per common
   * prefix on the page plus one, never a scan of the keys a common prefix rolls up.
   */
  async list(q: ListQuery): Promise<ListPage> {
    if (!this.exists()) return { objects: [], commonPrefixes: [], isTruncated: false, last: null };
    return listing.listPage(this.sql, q);
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private present: boolean | undefined;
  /** The versioning state, remembered like `present` (only this instance changes it). */
  private status: VersioningStatus | undefined;
  private rules: LifecycleRule[] | undefined;
  private lock: LockConfig | null | undefined;

  private versioningStatus(): VersioningStatus {
    // Not `??=`: an unversioned bucket's state is null, which that would query again every time.
    if (this.status === undefined) this.status = versions.versioning(this.sql);
    return this.status;
  }

  private bucketRow(): BucketRow | null {
    return this.sql.exec<BucketRow>("SELECT name, created, present FROM bucket WHERE id = 1").toArray()[0] ?? null;
  }

  /**
   * Whether the bucket exists, asked on every request: remembered by this instance (the only one
   * that writes it, one request at a time) and forgotten whenever init or drop change it.
   */
  private exists(): boolean {
    this.present ??= this.bucketRow()?.present === 1;
    return this.present;
  }

  /** No objects and no other versions (delete markers included): S3's condition to drop a bucket. */
  private empty(): boolean {
    return this.sql.exec("SELECT 1 FROM objects LIMIT 1").toArray().length === 0 && !versions.hasOtherVersions(this.sql);
  }

  /** The key's current object. */
  private record(key: string): ObjectRecord | null {
    const current = versions.currentObject(this.sql, key);
    if (!current) return null;
    const { seq: _, ...record } = current;
    return record;
  }
}

function conditionHolds(current: ObjectRecord | null, condition: WriteCondition): boolean {
  if (condition.ifNoneMatch && current !== null) return false;
  if (condition.ifNoneMatchEtag !== undefined && current?.etag === condition.ifNoneMatchEtag) return false;
  if (condition.ifMatch !== undefined && current?.etag !== condition.ifMatch) return false;
  return true;
}
