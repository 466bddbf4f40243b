// Deleting shard files that metadata gave up: the garbage each bucket's Durable Object records in
// the transaction that dropped the parts (expired multipart uploads, uploads that went with their
// bucket). The Durable Object never touches a node; this service does, from the scheduler's job
// (jobs/scheduler.ts) and right after a bucket is deleted. An entry whose files could not all be
// deleted (a node down) stays, with its error, and is tried again behind the others next time.
import type { Env, GatewayConfig } from "../config";
import { bucketIndex, bucketRegistry } from "../meta/stubs";
import { metrics } from "../observability/metrics";
import { removePart } from "../storage/remove";

/** Entries taken from one bucket at a time. */
const BATCH = 50;

export interface GarbageReport {
  partsRemoved: number;
  partsFailed: number;
  /** Entries left, over the buckets visited. */
  pending: number;
}

/** Deletes up to `limit` entries' files of `bucket`'s garbage. */
export async function drainBucketGarbage(env: Env, config: GatewayConfig, bucket: string, limit: number, report = emptyReport()): Promise<GarbageReport> {
  const index = bucketIndex(env, bucket);
  let left = limit;
  for (;;) {
    const { entries, pending } = await index.garbage(Math.min(BATCH, left));
    if (entries.length === 0) {
      report.pending += pending;
      return report;
    }
    const outcomes = await Promise.all(entries.map(async (e) => ({ id: e.id, error: await removePart(config.nodes, e.part) })));
    const removed = outcomes.filter((o) => o.error === null).map((o) => o.id);
    const failed = outcomes.flatMap((o) => (o.error === null ? [] : [{ id: o.id, error: o.error }]));
    await index.garbageDone(removed, failed);
    report.partsRemoved += removed.length;
    report.partsFailed += failed.length;
    if (removed.length) metrics.add("shardgate_garbage_parts_total", removed.length, { result: "removed" });
    if (failed.length) metrics.add("shardgate_garbage_parts_total", failed.length, { result: "failed" });
    left -= entries.length;
    // A batch with failures leaves them for the next run rather than taking them again now.
    if (left <= 0 || failed.length > 0) {
      report.pending += pending - removed.length;
      return report;
    }
  }
}

/** Drains every bucket's garbage, at most `limit` entries in all. */
export async function drainGarbage(env: Env, config: GatewayConfig, limit: number): Promise<GarbageReport> {
  const report = emptyReport();
  for (const { name } of await bucketRegistry(env).list()) {
    const before = report.partsRemoved + report.partsFailed;
    await drainBucketGarbage(env, config, name, Math.max(limit - before, 0), report);
  }
  return report;
}

function emptyReport(): GarbageReport {
  return { partsRemoved: 0, partsFailed: 0, pending: 0 };
}
