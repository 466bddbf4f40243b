// One SQLite-backed Durable Object per bucket: whether the bucket exists, and its object index
// (key -> manifest, plus what listing needs). A Durable Object runs one event at a time and its
// synchronous SQL calls cannot interleave with another request, so every read-check-write below
// is done without an `await` in between and is atomic. The class is the object's RPC surface: each
// method checks and delegates to the module that keeps its tables (meta/bucket-schema.ts lists them).
//
// A method that answers a request about the bucket throws NoSuchBucketError (meta/types.ts) when
// the bucket does not exist (requireBucket); one that only reads or changes what is stored under
// it (a heal queue entry, garbage, an upload's part, a version's record, a lifecycle pass) needs
// no such check, since a bucket that does not exist holds nothing: drop takes only an empty one.
import { BucketBackground } from "./bucket-background";
import type { BucketSetting } from "./bucket-settings";
import * as direct from "./direct-sessions";
import * as listing from "./listing";
import type { CreatedBy } from "./notification-rules";
import type { LockConfig } from "./object-lock";
import * as objects from "./object-records";
import type { ObjectEvent } from "./outbox";
import * as quota from "./quota";
import * as stored from "./stored-parts";
import type { BucketInfo, CompleteResult, DeleteOutcome, HeadResult, ListPage, ListQuery, ListUploadsPage } from "./types";
import type { ListUploadsQuery, ListVersionsPage, ListVersionsQuery, ObjectRecord, PartRecord, PutResult } from "./types";
import type { QuotaRefusal, UploadInfo, VersioningStatus, WriteCondition } from "./types";
import * as uploads from "./uploads";
import * as versions from "./versions";

export abstract class BucketIndex extends BucketBackground {
  /** Marks the bucket as existing ("exists": it did); `objectLock`: versioned, with object lock (CreateBucket's header). */
  async init(name: string, created: number, objectLock = false): Promise<"created" | "exists"> {
    if (this.settings.exists()) return "exists";
    this.ctx.storage.transactionSync(() => this.settings.create(name, created, objectLock));
    return "created";
  }

  async info(): Promise<BucketInfo> {
    this.requireBucket();
    return this.settings.info() as BucketInfo;
  }

  /** Removes the bucket if it holds no objects; its uploads in progress (not objects) go with it. */
  async drop(): Promise<"dropped" | "not-empty"> {
    return this.ctx.storage.transactionSync(() => {
      this.requireBucket();
      if (!versions.bucketEmpty(this.sql)) return "not-empty";
      stored.giveUpAll(this.sql, Date.now());
      this.settings.remove();
      quota.setQuota(this.sql, null); // a bucket made again under this name starts without one
      this.outbox.setConfiguration(null);
      this.replication.setConfiguration(null);
      return "dropped";
    });
  }

  /**
   * The object under `key`: its current version, or with `versionId` (null: the null version)
   * that version, or the delete marker in its place. A GET's one metadata call.
   */
  async head(key: string, versionId?: string | null): Promise<HeadResult> {
    this.requireBucket();
    const found = objects.lookup(this.sql, key, versionId, this.settings.versioning() !== null);
    const replication = found.object ? this.replication.statusOf(key, found.object.versionId) : null;
    const withStatus = replication ? { ...found, replication } : found;
    return versionId === undefined ? { ...withStatus, expiry: found.object ? this.settings.expiryOf(found.object) : null } : withStatus;
  }

  /**
   * Makes `record` the current version of its key if `condition` holds (meta/versions.ts: a new
   * version, or a replacement when the bucket is unversioned). Returns the versions replaced for
   * good so the caller can delete their shard files once this has committed.
   */
  async put(record: ObjectRecord, condition: WriteCondition = {}, heal: string | null = null): Promise<PutResult> {
    return this.writing(() =>
      this.refusingOverQuota((): PutResult => {
        this.requireBucket();
        const now = Date.now();
        if (condition.once && !direct.committable(this.sql, condition.once, now)) return { ok: false, reason: "AlreadyCommitted" };
        const put = objects.commit(this.sql, record, condition, this.settings.lockConfig(), heal, now, direct.committing(this.sql, condition.once, now));
        if (put.refused) return { ok: false, reason: put.refused };
        this.notify(created(record, put.change.versionId, condition.event ?? "Put", now), condition.replica, record.manifest);
        return { ok: true, ...put.change, expiry: this.settings.expiryOf(record) };
      }),
    );
  }

  /** Opens a direct-path session, its size reserved against the quota, within the caps: direct-sessions.ts open. */
  async openSession(session: direct.OpenSession): Promise<{ ok: true } | { ok: false; reason: direct.SessionRefusal | QuotaRefusal }> {
    this.requireBucket();
    const opened = this.refusingOverQuota(() => direct.open(this.sql, session, Date.now()));
    await this.scheduleExpiryCheck();
    return opened;
  }

  /** Spends a write that may happen once without writing, ending its session (an abort, a refused commit): direct-sessions.ts claim. */
  async claimOnce(once: { id: string; until: number }): Promise<"claimed" | "spent" | "writing"> {
    return this.ctx.storage.transactionSync(() => direct.claim(this.sql, once, Date.now()));
  }

  /** Seals a direct-path session as its commit begins: direct-sessions.ts sealForCommit. */
  async sealSession(once: { id: string; until: number }, presigned: boolean): Promise<"sealed" | "spent" | "writing" | "locked"> {
    return this.ctx.storage.transactionSync(() => direct.sealForCommit(this.sql, once, presigned && this.settings.lockConfig() !== null, Date.now()));
  }

  /** Whether shard files of a direct-path session may still be written: not sealed, committed or aborted. */
  async sessionWritable(id: string): Promise<boolean> {
    return !direct.spent(this.sql, id, Date.now()) && !direct.sealed(this.sql, id, Date.now());
  }

  /** A lease for a shard write of session `id` to complete, null when it may not: direct-sessions.ts beginWrite. */
  async beginShardWrite(id: string, until: number): Promise<string | null> {
    return this.ctx.storage.transactionSync(() => direct.beginWrite(this.sql, id, until, Date.now()));
  }

  /** Ends a shard write's lease (its file is stored, or never will be). */
  async endShardWrite(id: string, lease: string): Promise<void> {
    direct.endLease(this.sql, id, lease);
  }

  /**
   * Deletes the current version of `key` (a delete marker in a versioned bucket) or, with
   * `versionId`, that version for good. Null when there is no such version.
   */
  async delete(key: string, versionId?: string | null, bypassGovernance = false, replica = false): Promise<DeleteOutcome | null> {
    return (await this.deleteMany([{ key, versionId }], bypassGovernance, replica))[0] ?? null;
  }

  /**
   * Deletes many keys or versions at once (DeleteObjects): one transaction, one round trip. The
   * outcome of each, in order (null: no such version).
   */
  async deleteMany(items: { key: string; versionId?: string | null }[], bypassGovernance = false, replica = false): Promise<(DeleteOutcome | null)[]> {
    return this.writing(() =>
      this.ctx.storage.transactionSync(() => {
        this.requireBucket();
        return items.map((item) => {
          const now = Date.now();
          const outcome = objects.deleteOne(this.sql, item.key, item.versionId, bypassGovernance, now);
          const removal = outcome && removed(item.key, item.versionId, outcome, now);
          if (removal) this.notify(removal, replica);
          return outcome;
        });
      }),
    );
  }

  /**
   * Replaces the record of version `record.versionId` of its key only if its manifest is still
   * exactly `expected` (a change of tags or metadata that must not undo a concurrent overwrite).
   */
  async replace(expected: Uint8Array, record: ObjectRecord): Promise<"replaced" | "changed" | "missing"> {
    return this.ctx.storage.transactionSync(() => versions.replaceVersion(this.sql, expected, record));
  }

  // --- versioning -----------------------------------------------------------------------------

  async versioning(): Promise<VersioningStatus> {
    this.requireBucket();
    return this.settings.versioning();
  }

  /** Enables or suspends versioning (never back to unversioned, as S3; never suspended under object lock). */
  async setVersioning(status: "Enabled" | "Suspended"): Promise<"ok" | "locked" | "replicating"> {
    this.requireBucket();
    if (status === "Suspended" && this.settings.lockConfig()) return "locked";
    if (status === "Suspended" && this.replication.configuration().length > 0) return "replicating";
    this.settings.setVersioning(status);
    return "ok";
  }

  async listVersions(q: ListVersionsQuery): Promise<ListVersionsPage> {
    this.requireBucket();
    return versions.listVersions(this.sql, q, listing.MAX_LIST_KEYS);
  }

  // --- multipart uploads ----------------------------------------------------------------------

  async createUpload(upload: UploadInfo): Promise<"ok" | "NoObjectLockConfiguration"> {
    this.requireBucket();
    if (upload.lock && !this.settings.lockConfig()) return "NoObjectLockConfiguration";
    uploads.insertUpload(this.sql, upload);
    await this.scheduleExpiryCheck();
    return "ok";
  }

  /** The upload; null when there is no such upload for `key`. */
  async upload(uploadId: string, key: string): Promise<UploadInfo | null> {
    this.requireBucket();
    const upload = uploads.getUpload(this.sql, uploadId);
    return upload && upload.key === key ? upload : null;
  }

  /** Records an uploaded part; the part it replaced (to delete), or not ok: no such upload. */
  async putPart(
    uploadId: string,
    key: string,
    part: PartRecord,
  ): Promise<{ ok: true; previous: PartRecord | null } | { ok: false; reason: "NoSuchUpload" | QuotaRefusal }> {
    return this.refusingOverQuota(() => {
      const upload = uploads.getUpload(this.sql, uploadId);
      if (!upload || upload.key !== key) return { ok: false as const, reason: "NoSuchUpload" as const };
      return { ok: true as const, previous: quota.withinQuota(this.sql, () => uploads.upsertPart(this.sql, uploadId, part)) };
    });
  }

  /** Parts numbered above `after`, at most `limit` (+1 to tell whether more follow). */
  async listParts(uploadId: string, key: string, after: number, limit: number): Promise<{ upload: UploadInfo | null; parts: PartRecord[] }> {
    const upload = await this.upload(uploadId, key);
    return { upload, parts: upload ? uploads.listPartRecords(this.sql, uploadId, after, limit) : [] };
  }

  async listUploads(q: ListUploadsQuery): Promise<ListUploadsPage> {
    this.requireBucket();
    return uploads.listUploads(this.sql, q, listing.MAX_LIST_KEYS);
  }

  /** Completes an upload atomically if its `used` parts are still as read and `condition` holds; its other parts come back. */
  async completeUpload(
    uploadId: string,
    record: ObjectRecord,
    used: uploads.UsedPart[],
    condition: WriteCondition = {},
    heal: string | null = null,
  ): Promise<CompleteResult> {
    return this.writing(() =>
      this.refusingOverQuota((): CompleteResult => {
        this.requireBucket();
        const unused = uploads.unusedParts(this.sql, uploadId, record.key, used);
        if (typeof unused === "string") return { ok: false, reason: unused };
        const now = Date.now();
        // Its parts become the object: they leave the upload in the commit's quota check.
        const dropUpload = () => void uploads.deleteUpload(this.sql, uploadId);
        const put = objects.commit(this.sql, record, { ...condition, integrity: true }, this.settings.lockConfig(), heal, now, dropUpload);
        if (put.refused) return { ok: false, reason: put.refused };
        this.notify(created(record, put.change.versionId, "CompleteMultipartUpload", now), condition.replica, record.manifest);
        return { ok: true, ...put.change, unused, expiry: this.settings.expiryOf(record) };
      }),
    );
  }

  /** Removes an upload; its parts (to delete), or null when there is no such upload. */
  async abortUpload(uploadId: string, key: string): Promise<PartRecord[] | null> {
    return this.ctx.storage.transactionSync(() => {
      this.requireBucket();
      const upload = uploads.getUpload(this.sql, uploadId);
      return upload && upload.key === key ? uploads.deleteUpload(this.sql, uploadId) : null;
    });
  }

  // --- bucket settings (meta/bucket-settings.ts) ------------------------------------------------

  /** A setting of the bucket as stored (JSON), null when none. */
  async setting(name: BucketSetting): Promise<string | null> {
    this.requireBucket();
    return this.settings.get(name);
  }

  /** Sets (or with null removes) a setting. */
  async setSetting(name: BucketSetting, value: string | null): Promise<void> {
    this.requireBucket();
    this.settings.set(name, value);
  }

  /** The bucket's quota (null: none) and its usage (meta/quota.ts). */
  async quota(): Promise<{ quota: quota.Quota | null; usage: quota.Usage }> {
    this.requireBucket();
    return { quota: quota.quotaOf(this.sql), usage: quota.usageOf(this.sql) };
  }

  /** Sets the bucket's quota (null, or both limits null: none); the quota and usage then. Writes already stored stay. */
  async setQuota(limits: quota.Quota | null): Promise<{ quota: quota.Quota | null; usage: quota.Usage }> {
    this.requireBucket();
    quota.setQuota(this.sql, limits);
    return this.quota();
  }

  /** The bucket's object lock configuration; null: none. */
  async objectLock(): Promise<LockConfig | null> {
    this.requireBucket();
    return this.settings.lockConfig();
  }

  /** Enables object lock (versioning must be Enabled) and sets its default retention. */
  async setObjectLock(config: LockConfig): Promise<"ok" | "not-versioned"> {
    this.requireBucket();
    if (this.settings.versioning() !== "Enabled") return "not-versioned";
    this.settings.setLockConfig(config);
    return "ok";
  }

  /** Sets a version's retention or legal hold by S3's rules (object-records.ts changeLock); `versionId` undefined: the current one. */
  async setVersionLock(key: string, versionId: string | null | undefined, change: objects.LockRequest, bypassGovernance = false): Promise<objects.LockChange> {
    return this.ctx.storage.transactionSync(() => {
      this.requireBucket();
      return objects.changeLock(this.sql, this.settings.lockConfig(), { key, versionId }, change, bypassGovernance, Date.now());
    });
  }

  async isEmpty(): Promise<boolean> {
    return versions.bucketEmpty(this.sql);
  }

  /** One page of an S3 listing (see ListQuery): listing.ts, which never scans the keys a common prefix rolls up. */
  async list(q: ListQuery): Promise<ListPage> {
    this.requireBucket();
    return listing.listPage(this.sql, q);
  }
}

/** The event of a committed write of `record` (its version id as the commit gave it). */
function created(record: ObjectRecord, versionId: string | undefined, by: CreatedBy, now: number): ObjectEvent {
  return { event: `ObjectCreated:${by}`, key: record.key, versionId: versionId ?? null, size: record.size, etag: record.etag, time: now };
}

/**
 * The event of a delete's outcome (`versionId` as asked; undefined: the current version): a delete
 * marker made, or a version removed for good; null when refused or when there was nothing to delete.
 */
function removed(key: string, versionId: string | null | undefined, outcome: DeleteOutcome, now: number): ObjectEvent | null {
  if (outcome.denied) return null;
  const made = versionId === undefined && outcome.marker;
  if (versionId === undefined && !made && outcome.freed.length === 0) return null;
  const event = made ? "ObjectRemoved:DeleteMarkerCreated" : "ObjectRemoved:Delete";
  return { event, key, versionId: outcome.versionId ?? null, size: null, etag: null, time: now };
}
