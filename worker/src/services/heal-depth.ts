// How many objects wait in the heal queues, for the metrics (shardgate_heal_queue_objects). Each
// bucket's queue lives in its own index, so the total is a count per bucket: this asks at most
// MAX_BUCKETS of them, AT_ONCE at a time, at most once per REFRESH_MS per isolate, and scrapes in
// between read the figure kept (with its age). A scrape never waits on another's count: one that
// finds a count in progress answers the previous figure.
import type { Env } from "../config";
import { bucketIndex, bucketRegistry, orNullWithoutBucket } from "../meta/stubs";

/** How long a count answers scrapes (ms). */
const REFRESH_MS = 60_000;
/** Buckets counted (the registry's first ones by name). */
const MAX_BUCKETS = 1000;
/** Bucket indexes asked at once. */
const AT_ONCE = 8;

export interface HealDepth {
  /** Objects queued over the buckets counted. */
  objects: number;
  /** When the count started (ms since the epoch). */
  at: number;
}

let kept: HealDepth | null = null;
let countingSince = 0;

/** The heal queues' size, at most REFRESH_MS old; null when no count ever succeeded. */
export async function healQueueDepth(env: Env): Promise<HealDepth | null> {
  const now = Date.now();
  if (kept && now - kept.at < REFRESH_MS) return kept;
  if (countingSince !== 0 && now - countingSince < REFRESH_MS) return kept;
  countingSince = now;
  try {
    kept = { objects: await count(env), at: now };
  } catch (e) {
    console.error(JSON.stringify({ healQueueDepth: String(e) }));
  } finally {
    if (countingSince === now) countingSince = 0;
  }
  return kept;
}

async function count(env: Env): Promise<number> {
  const names = (await bucketRegistry(env).list()).slice(0, MAX_BUCKETS).map((b) => b.name);
  let total = 0;
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < names.length; i = next++) total += (await orNullWithoutBucket(bucketIndex(env, names[i]).healQueue(0)))?.pending ?? 0;
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, names.length) }, worker));
  return total;
}
