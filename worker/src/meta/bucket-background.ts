// The half of a bucket's Durable Object (meta/bucket-index.ts) that works besides requests: its
// tables' handles, the transaction a write commits in with the events it queues (writing, notify),
// the alarm, event notifications and replication, and what background jobs call: the heal queue,
// lifecycle steps and garbage. BucketIndex extends it with the calls requests make; the runtime
// runs jobs/bucket-jobs.ts's subclass, which delivers the outbox.
import { errorText } from "../errors";
import { DurableObject } from "cloudflare:workers";
import { metrics } from "../observability/metrics";
import { equalBytes } from "../shared/bytes";
import type { ManifestPart } from "../shared/core-api";
import { BUCKET_INDEX_SCHEMA } from "./bucket-schema";
import { BucketSettings } from "./bucket-settings";
import * as queue from "./heal-queue";
import { type LifecycleCounts, lifecycleStep } from "./lifecycle-rules";
import type { NotificationRule } from "./notification-rules";
import { type ObjectEvent, Outbox } from "./outbox";
import * as objects from "./object-records";
import * as quota from "./quota";
import { REPLICA_PREFIX, Replication, type ReplicationRule, WALK_WAIT_MAX_MS, type WalkStep } from "./replication-rules";
import { migrate } from "./schema";
import * as stored from "./stored-parts";
import { type GarbageEntry, type HealQueueEntry, NoSuchBucketError, type ObjectRecord, type QuotaRefusal } from "./types";

/** Versions one lifecycle call visits at most (a key's versions are never split). */
const LIFECYCLE_BATCH = 2000;

export abstract class BucketBackground extends DurableObject {
  protected readonly sql = this.ctx.storage.sql;
  protected readonly settings = new BucketSettings(this.sql);
  /** Event notifications: the configuration and the outbox (meta/outbox.ts). */
  protected readonly outbox = new Outbox(this.sql);
  /** Replication: the rules and each replicated version's status (meta/replication-rules.ts); rows in the outbox. */
  protected readonly replication = new Replication(this.sql);
  /** What the write being committed queued or dropped (notify), settled after its transaction (writing). */
  private batch = { queued: 0, dropped: 0, replicas: 0, replicasDropped: 0 };

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, BUCKET_INDEX_SCHEMA);
  }

  /**
   * The alarm: aborts stale uploads and ends expired direct-path sessions (stored-parts.ts
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

  protected async scheduleExpiryCheck(): Promise<void> {
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
  async notificationStatus(limit: number) {
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
  protected notify(e: ObjectEvent, replica = false, manifest?: Uint8Array): void {
    if (e.event === "ObjectRemoved:Delete" && e.versionId !== null) this.replication.removed(e.key, e.versionId);
    if (this.outbox.configuration().length > 0) {
      const { queued, dropped } = this.outbox.record(e, this.outboxCap());
      this.batch.queued += queued;
      this.batch.dropped += dropped;
    }
    if (replica || this.replication.configuration().length > 0) {
      const { queued, dropped } = this.replication.record(e, this.outbox, this.outboxCap(), replica, manifest);
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
      const step = this.ctx.storage.transactionSync(() => this.replication.walkStep(this.outbox, this.outboxCap(), batch));
      if (step.queued > 0) metrics.add("shardgate_replication_versions_total", step.queued, { result: "queued" });
      this.walkFailedMs = 0;
      return step;
    } catch (e) {
      this.outbox.forget();
      this.replication.forget();
      console.error(JSON.stringify({ replicationWalk: { error: errorText(e) } }));
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
  protected async writing<T>(run: () => T): Promise<T> {
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

  /** Rows the outbox holds at most (SHARDGATE_NOTIFY_MAX_PENDING): the configuration's, which jobs/bucket-jobs.ts reads (meta/ never loads it). */
  protected abstract outboxCap(): number;

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

  /**
   * Runs a write in a transaction; one that would take the bucket over its quota (meta/quota.ts
   * throws QuotaExceeded inside it) is rolled back whole and answered as refused.
   */
  protected refusingOverQuota<T>(write: () => T): T | { ok: false; reason: QuotaRefusal } {
    try {
      return this.ctx.storage.transactionSync(write);
    } catch (e) {
      if (e instanceof quota.QuotaExceeded) return { ok: false, reason: `QuotaExceeded:${e.what}` };
      throw e;
    }
  }

  /** Throws NoSuchBucketError unless the bucket exists: the one way every method says it does not. */
  protected requireBucket(): void {
    if (!this.settings.exists()) throw new NoSuchBucketError();
  }
}
