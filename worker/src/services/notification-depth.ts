// How many event notifications wait in the buckets' outboxes and dead letters, for the metrics
// (shardgate_notification_outbox_events, shardgate_notification_dead_letters), and how many rows of
// replication (shardgate_replication_pending, shardgate_replication_failed). Each bucket's
// outbox lives in its own index, so the totals are a count per bucket: as for the heal queues
// (services/heal-depth.ts), at most MAX_BUCKETS asked, AT_ONCE at a time, at most once per
// REFRESH_MS per isolate; scrapes in between, and one that finds a count in progress, answer the
// figure kept.
import type { Env } from "../config";
import { bucketIndex, bucketRegistry, orNullWithoutBucket } from "../meta/stubs";

/** How long a count answers scrapes (ms). */
const REFRESH_MS = 60_000;
/** Buckets counted (the registry's first ones by name). */
const MAX_BUCKETS = 1000;
/** Bucket indexes asked at once. */
const AT_ONCE = 8;

export interface NotificationDepth {
  /** Events waiting for delivery, over the buckets counted. */
  pending: number;
  /** Events given up and kept as dead letters. */
  dead: number;
  /** Replication's rows (the same outboxes): versions and delete markers waiting, and given up. */
  replicationPending: number;
  replicationDead: number;
  /** When the count started (ms since the epoch). */
  at: number;
}

let kept: NotificationDepth | null = null;
let countingSince = 0;

/** The outboxes' size, at most REFRESH_MS old; null when no count ever succeeded. */
export async function notificationDepth(env: Env): Promise<NotificationDepth | null> {
  const now = Date.now();
  if (kept && now - kept.at < REFRESH_MS) return kept;
  if (countingSince !== 0 && now - countingSince < REFRESH_MS) return kept;
  countingSince = now;
  try {
    kept = { ...(await count(env)), at: now };
  } catch (e) {
    console.error(JSON.stringify({ notificationDepth: String(e) }));
  } finally {
    if (countingSince === now) countingSince = 0;
  }
  return kept;
}

async function count(env: Env): Promise<Omit<NotificationDepth, "at">> {
  const names = (await bucketRegistry(env).list()).slice(0, MAX_BUCKETS).map((b) => b.name);
  const total = { pending: 0, dead: 0, replicationPending: 0, replicationDead: 0 };
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < names.length; i = next++) {
      const status = await orNullWithoutBucket(bucketIndex(env, names[i] as string).notificationStatus(0));
      if (!status) continue;
      total.pending += status.pending - status.replication.pending;
      total.dead += status.deadCount - status.replication.dead;
      total.replicationPending += status.replication.pending;
      total.replicationDead += status.replication.dead;
    }
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, names.length) }, worker));
  return total;
}
