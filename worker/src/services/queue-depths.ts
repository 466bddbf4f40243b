// How much waits in the buckets' own queues, for the metrics: the heal queues
// (shardgate_heal_queue_objects), the outboxes' events and dead letters
// (shardgate_notification_outbox_events, shardgate_notification_dead_letters) and replication's
// rows in them (shardgate_replication_pending, shardgate_replication_failed). Each bucket's queues
// live in its own index, so a total is a count per bucket: at most MAX_BUCKETS asked, AT_ONCE at a
// time, at most once per REFRESH_MS per isolate. Scrapes in between read the figure kept (with its
// age); a scrape never waits on another's count: one that finds a count in progress answers the
// previous figure.
import type { Env } from "../config";
import { bucketIndex, bucketRegistry, orNullWithoutBucket } from "../meta/stubs";
import { keptResult, mapBounded } from "../shared/bounded";

/** How long a count answers scrapes (ms). */
const REFRESH_MS = 60_000;
/** Buckets counted (the registry's first ones by name). */
const MAX_BUCKETS = 1000;
/** Bucket indexes asked at once. */
const AT_ONCE = 8;

/**
 * A total over the buckets, counted at most once per REFRESH_MS: `add` asks one bucket's index and
 * adds its share to `total`. Null until a count succeeds.
 */
function keptTotal<T extends object>(name: string, zero: () => T, add: (total: T, index: ReturnType<typeof bucketIndex>) => Promise<void>) {
  let env: Env;
  const kept = keptResult(name, REFRESH_MS, REFRESH_MS, async (at) => {
    const names = (await bucketRegistry(env).list()).slice(0, MAX_BUCKETS).map((b) => b.name);
    const total = zero();
    await mapBounded(names, AT_ONCE, (bucket) => add(total, bucketIndex(env, bucket)));
    return { ...total, at };
  });
  // The count runs with the environment of the scrape that starts it (one per isolate).
  return (scraping: Env) => {
    env = scraping;
    return kept.get();
  };
}

/** Objects queued for heal over the buckets counted. */
export const healQueueDepth = keptTotal(
  "healQueueDepth",
  () => ({ objects: 0 }),
  async (total, index) => {
    total.objects += (await orNullWithoutBucket(index.healQueue(0)))?.pending ?? 0;
  },
);

/** Events waiting for delivery and given up (dead letters); of the same outboxes, replication's rows waiting and given up. */
export const notificationDepth = keptTotal(
  "notificationDepth",
  () => ({ pending: 0, dead: 0, replicationPending: 0, replicationDead: 0 }),
  async (total, index) => {
    const status = await orNullWithoutBucket(index.notificationStatus(0));
    if (!status) return;
    total.pending += status.pending - status.replication.pending;
    total.dead += status.deadCount - status.replication.dead;
    total.replicationPending += status.replication.pending;
    total.replicationDead += status.replication.dead;
  },
);
