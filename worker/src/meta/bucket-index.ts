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
import { DurableObject } from "cloudflare:workers";
import { equalBytes } from "../shared/bytes";
import type { ManifestPart } from "../shared/core-api";
import { BUCKET_INDEX_SCHEMA } from "./bucket-schema";
import { type BucketSetting, BucketSettings } from "./bucket-settings";
import * as direct from "./direct-sessions";
import * as queue from "./heal-queue";
import { type LifecycleCounts, lifecycleStep } from "./lifecycle-rules";
import * as listing from "./listing";
import type { CreatedBy, NotificationRule } from "./notification-rules";
import { type ObjectEvent, Outbox, type OutboxRow, retryPolicy } from "./outbox";
import { REPLICA_PREFIX, Replication, type ReplicationRule, WALK_WAIT_MAX_MS, type WalkStep } from "./replication-rules";
import type { LockConfig } from "./object-lock";
import * as objects from "./object-records";
import { migrate } from "./schema";
import * as stored from "./stored-parts";
import type { BucketInfo, CompleteResult, DeleteOutcome, GarbageEntry, HeadResult, HealQueueEntry, ListPage, ListQuery } from "./types";
import type { ListUploadsPage, ListUploadsQuery, ListVersionsPage, ListVersionsQuery, ObjectRecord, PartRecord, PutResult } from "./types";
import { NoSuchBucketError, type QuotaRefusal, type UploadInfo, type VersioningStatus, type WriteCondition } from "./types";
import * as quota from "./quota";
import * as uploads from "./uploads";
import * as versions from "./versions";
import { metrics } from "../observability/metrics";

/** Versions one lifecycle call visits at most (a key's versions are never split). */
const LIFECYCLE_BATCH = 2000;

export class BucketIndex extends DurableObject {
  protected readonly sql: SqlStorage;
  private readonly settings: BucketSettings;
  /** Event notifications: the configuration and the outbox (meta/outbox.ts). */
  protected readonly outbox: Outbox;
  /** Replication: the rules and each replicated version's status (meta/replication-rules.ts); rows in the outbox. */
  protected readonly replication: Replication;
  /** What the write being committed queued or dropped (notify), settled after its transaction (writing). */
  private batch = { queued: 0, dropped: 0, replicas: 0, replicasDropped: 0 };

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, BUCKET_INDEX_SCHEMA);
    this.sql = ctx.storage.sql;
    this.settings = new BucketSettings(this.sql);
    this.outbox = new Outbox(this.sql);
    this.replication = new Replication(this.sql);
  }

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

  /** Opens a browser-path session, its size reserved against the quota, within the caps: direct-sessions.ts open. */
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

  /** Seals a browser-path session as its commit begins: direct-sessions.ts sealForCommit. */
  async sealSession(once: { id: string; until: number }, presigned: boolean): Promise<"sealed" | "spent" | "writing" | "locked"> {
    return this.ctx.storage.transactionSync(() => direct.sealForCommit(this.sql, once, presigned && this.settings.lockConfig() !== null, Date.now()));
  }

  /** Whether shard files of a browser-path session may still be written: not sealed, committed or aborted. */
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

  // --- the heal queue ---------------------------------------------------------------------------

  /** Queues `key` for heal if it is still the version `manifest` (a newer one was written whole); `shards`: files known bad. */
  async queueHeal(key: string, manifest: Uint8Array, reason: string, shards: Record<string, number[]> | null = null): Promise<void> {
    const current = objects.currentRecord(this.sql, key);
    if (!current || !equalBytes(current.manifest, manifest)) return;
    queue.enqueue(this.sql, key, reason, shards, Date.now());
  }

  /** Counts an attempt at healing `key`, before the work (see services/heal.ts). */
  async healStarted(key: string): Promise<void> {
    queue.started(this.sql, key);
  }

  /** The oldest entries of the heal queue (fewest attempts first), at most `limit`, and its size. */
  async healQueue(limit: number): Promise<{ pending: number; entries: HealQueueEntry[] }> {
    return queue.page(this.sql, limit);
  }

  /** Ends a heal: the entry goes if it succeeded, else keeps the error; with `since`, only the entry the heal began from. */
  async healed(key: string, error: string | null, since?: number): Promise<void> {
    queue.ended(this.sql, key, error, since);
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

  /**
   * The alarm: aborts stale uploads and ends expired browser-path sessions (stored-parts.ts
   * giveUpExpired), a bounded batch per run, their parts garbage; delivers
   * the outbox's due events (deliverEvents); set again for whichever is due next.
   */
  override async alarm(): Promise<void> {
    this.ctx.storage.transactionSync(() => stored.giveUpExpired(this.sql, Date.now()));
    const { state: walk, waitMs } = this.walkReplication();
    const tried = await this.deliverEvents();
    let next = this.outbox.nextDue();
    // Replication's uploads left behind at remotes wake it too, when their abort is due.
    const aborts = this.replication.nextUploadAbort();
    if (aborts !== null) next = Math.min(next ?? aborts, aborts);
    // A walk of existing objects not done goes on: at once, or while the outbox is full after a
    // second, doubling to a minute while it queues nothing.
    if (walk === "walking" || walk === "waiting") next = Math.min(next ?? Number.MAX_SAFE_INTEGER, Date.now() + (walk === "walking" ? 0 : waitMs));
    // A run that could try nothing (every due row behind another) waits a second rather than spin.
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, Date.now() + (tried || walk === "walking" ? 0 : 1000)));
    await this.scheduleExpiryCheck();
  }

  private async scheduleExpiryCheck(): Promise<void> {
    const due = stored.nextExpiry(this.sql, Date.now());
    if (due === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > due) await this.ctx.storage.setAlarm(due);
  }

  // --- event notifications (meta/outbox.ts; delivered by jobs/bucket-jobs.ts) -------------------

  /** The notification configuration ([]: none). */
  async notificationConfiguration(): Promise<NotificationRule[]> {
    this.requireBucket();
    return this.outbox.configuration();
  }

  /** Replaces the notification configuration ([]: none); events already queued are still delivered. */
  async setNotificationConfiguration(rules: NotificationRule[]): Promise<void> {
    this.requireBucket();
    this.outbox.setConfiguration(rules);
  }

  /**
   * The outbox's size, the first `limit` dead letters and their count, and events dropped at the
   * cap, over every consumer (a row's target tells them apart); and of those, replication's rows.
   */
  async notificationStatus(limit: number): Promise<{
    pending: number;
    dead: OutboxRow[];
    deadCount: number;
    dropped: number;
    nextDue: number | null;
    replication: { pending: number; dead: number; existingObjects?: ReturnType<Replication["walkStatus"]> };
  }> {
    this.requireBucket();
    const walk = this.replication.walkStatus();
    const replication = { ...this.outbox.countOf(REPLICA_PREFIX), ...(walk ? { existingObjects: walk } : {}) };
    return { ...this.outbox.status(limit), replication };
  }

  /** Puts every dead letter back in the outbox, due now (replicated versions PENDING again); how many. */
  async retryDeadLetters(): Promise<number> {
    const n = this.ctx.storage.transactionSync(() => {
      this.replication.retrying();
      return this.outbox.retryDead(Date.now());
    });
    metrics.add("shardgate_notification_events_total", n, { result: "retried" });
    if (n > 0) await this.wakeDelivery();
    return n;
  }

  /**
   * Writes the outbox rows of `e` for notifications and replication (none without a configuration;
   * a replica's, `replica`, are never replicated again: it is marked REPLICA), in the caller's
   * transaction; a version removed for good loses its replication status.
   */
  private notify(e: ObjectEvent, replica = false, manifest?: Uint8Array): void {
    if (e.event === "ObjectRemoved:Delete" && e.versionId !== null) this.replication.removed(e.key, e.versionId);
    if (this.outbox.configuration().length > 0) {
      const { queued, dropped } = this.outbox.record(e, retryPolicy(this.env).cap);
      this.batch.queued += queued;
      this.batch.dropped += dropped;
    }
    if (replica || this.replication.configuration().length > 0) {
      const { queued, dropped } = this.replication.record(e, this.outbox, retryPolicy(this.env).cap, replica, manifest);
      this.batch.replicas += queued;
      this.batch.replicasDropped += dropped;
    }
  }

  // --- replication (meta/replication-rules.ts; delivered by jobs/bucket-jobs.ts) -----------------

  /** Version `versionId` of `key` as stored, for replication's delivery; null when gone or a delete marker. */
  protected storedVersion(key: string, versionId: string): ObjectRecord | null {
    return objects.lookup(this.sql, key, versionId, true).object;
  }

  /** The replication rules ([]: none). */
  async replicationConfiguration(): Promise<ReplicationRule[]> {
    this.requireBucket();
    return this.replication.configuration();
  }

  /**
   * Replaces the replication rules ([]: none); refused unless versioning is Enabled (S3). A rule
   * with ExistingObjectReplication starts the walk of existing objects over (run from the alarm).
   */
  async setReplicationConfiguration(rules: ReplicationRule[]): Promise<"ok" | "not-versioned"> {
    this.requireBucket();
    if (rules.length > 0 && this.settings.versioning() !== "Enabled") return "not-versioned";
    if (this.ctx.storage.transactionSync(() => this.replication.setConfiguration(rules))) await this.wakeDelivery();
    return "ok";
  }

  /**
   * One bounded step of the walk of existing objects (Replication.walkStep), in its own
   * transaction: its state after it. Never throws (a failed step is logged and tried next run).
   */
  protected walkReplication(batch?: number): { state: WalkStep["state"]; waitMs: number } {
    try {
      const step = this.ctx.storage.transactionSync(() => this.replication.walkStep(this.outbox, retryPolicy(this.env).cap, batch));
      if (step.queued > 0) metrics.add("shardgate_replication_versions_total", step.queued, { result: "queued" });
      this.walkFailedMs = 0;
      return step;
    } catch (e) {
      this.outbox.forget();
      this.replication.forget();
      console.error(JSON.stringify({ replicationWalk: { error: e instanceof Error ? e.message : String(e) } }));
      // A step that fails (rolled back) is tried again after a second, doubling to a minute.
      this.walkFailedMs = Math.min(WALK_WAIT_MAX_MS, this.walkFailedMs === 0 ? 1000 : this.walkFailedMs * 2);
      return { state: "waiting", waitMs: this.walkFailedMs };
    }
  }
  private walkFailedMs = 0;

  /**
   * Runs a write's transaction (`run`, which may notify), then settles what it queued: counted, and
   * the alarm woken, when it committed (not a refusal: `ok` false); forgotten when it did not.
   */
  private async writing<T>(run: () => T): Promise<T> {
    this.batch = { queued: 0, dropped: 0, replicas: 0, replicasDropped: 0 };
    let result: T;
    const wrote = () => this.batch.queued + this.batch.dropped + this.batch.replicas + this.batch.replicasDropped > 0;
    try {
      result = run();
    } catch (e) {
      if (wrote()) this.outbox.forget(); // rolled back: its count is read again
      throw e;
    }
    const { queued, dropped, replicas, replicasDropped } = this.batch;
    const refused = typeof result === "object" && result !== null && "ok" in result && result.ok === false;
    if (refused) {
      if (wrote()) this.outbox.forget();
      return result;
    }
    if (dropped > 0) metrics.add("shardgate_notification_events_total", dropped, { result: "dropped" });
    if (queued > 0) metrics.add("shardgate_notification_events_total", queued, { result: "queued" });
    if (replicasDropped > 0) metrics.add("shardgate_replication_versions_total", replicasDropped, { result: "dropped" });
    if (replicas > 0) metrics.add("shardgate_replication_versions_total", replicas, { result: "queued" });
    if (queued + replicas > 0) await this.wakeDelivery();
    return result;
  }

  /** After a commit that queued events: the alarm runs now (unless it is set sooner). */
  private async wakeDelivery(): Promise<void> {
    const now = Date.now();
    const at = await this.ctx.storage.getAlarm();
    if (at === null || at > now) await this.ctx.storage.setAlarm(now);
  }

  /**
   * One delivery run of the outbox; whether it tried any row. Metadata makes no request: the
   * Durable Object the runtime runs (jobs/bucket-jobs.ts) delivers; this index alone keeps rows.
   */
  protected async deliverEvents(): Promise<boolean> {
    return false;
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

  /**
   * One bounded step of the lifecycle pass as of `now` (lifecycle-rules.ts lifecycleStep), in one
   * transaction: what it expired, and whether the pass is done. Null when the bucket has no rules.
   */
  async runLifecycle(now: number, budget = LIFECYCLE_BATCH): Promise<{ counts: LifecycleCounts; done: boolean } | null> {
    const rules = this.settings.lifecycleRules();
    if (rules.length === 0) return null;
    return this.ctx.storage.transactionSync(() => {
      const step = lifecycleStep(this.sql, rules, now, this.settings.lifecycleCursor(), budget);
      this.settings.setLifecycleCursor(step.next);
      return { counts: step.counts, done: step.next === null };
    });
  }

  // --- garbage: shard files to delete ----------------------------------------------------------

  /** Up to `limit` entries to delete, those tried least first, and how many there are in all. */
  async garbage(limit: number): Promise<{ pending: number; entries: GarbageEntry[] }> {
    return stored.garbagePage(this.sql, limit);
  }

  /** What this bucket keeps on nodes, a page at a time from `after`, for the orphan sweep (stored-parts.ts). */
  async storageRefs(after: string | null, limit: number): Promise<{ manifests: Uint8Array[]; parts: ManifestPart[]; next: string | null }> {
    return stored.storageRefs(this.sql, after, limit);
  }

  /** Forgets the entries whose files are gone; counts an attempt, with its error, on the others. */
  async garbageDone(removed: number[], failed: { id: number; error: string }[]): Promise<void> {
    this.ctx.storage.transactionSync(() => stored.garbageDone(this.sql, removed, failed));
  }

  async isEmpty(): Promise<boolean> {
    return versions.bucketEmpty(this.sql);
  }

  /** One page of an S3 listing (see ListQuery): listing.ts, which never scans the keys a common prefix rolls up. */
  async list(q: ListQuery): Promise<ListPage> {
    this.requireBucket();
    return listing.listPage(this.sql, q);
  }

  /**
   * Runs a write in a transaction; one that would take the bucket over its quota (meta/quota.ts
   * throws QuotaExceeded inside it) is rolled back whole and answered as refused.
   */
  private refusingOverQuota<T>(write: () => T): T | { ok: false; reason: QuotaRefusal } {
    try {
      return this.ctx.storage.transactionSync(write);
    } catch (e) {
      if (e instanceof quota.QuotaExceeded) return { ok: false, reason: `QuotaExceeded:${e.what}` };
      throw e;
    }
  }

  /** Throws NoSuchBucketError unless the bucket exists: the one way every method says it does not. */
  private requireBucket(): void {
    if (!this.settings.exists()) throw new NoSuchBucketError();
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
