// Healing from the request side: after a read that had to go around shard files (heal on read),
// and `POST /_shardgate/admin/heal` (a bucket, or a prefix of it, in bounded batches that resume
// from the key they stopped at, so a failed object never sends the walk back to the start).
import type { Manifest } from "../core-api";
import { metrics } from "../observability/metrics";
import { S3Error } from "../s3-error";
import { isSharded, missingShards, rebuildShards, type HealResult } from "../storage/heal";
import { noSuchBucket } from "./bucket";
import { bucketIndex, type RequestContext } from "./context";
import { equalBytes } from "./put";

/** Shard files a read went around, by the storage id of their part. */
export type LostShards = Map<string, Set<number>>;

const DEFAULT_BATCH = 100;
const MAX_BATCH = 1000;

/** Rebuilds what a read lost, if the object is still the version that was read. Never throws. */
export async function healAfterRead(ctx: RequestContext, bucket: string, key: string, read: Uint8Array, manifest: Manifest, lost: LostShards): Promise<void> {
  if (lost.size === 0) return;
  try {
    // An overwrite or delete since removes these shard files on purpose: do not put them back.
    const { object } = await bucketIndex(ctx, bucket).head(key);
    if (!object || !equalBytes(object.manifest, read)) return;
    for (const part of manifest.parts) {
      if (!isSharded(part)) continue;
      const shards = lost.get(part.layout.storageId);
      if (shards) count(await rebuildShards(ctx.config, ctx.core, part, [...shards]));
    }
  } catch (e) {
    console.error(JSON.stringify({ requestId: ctx.requestId, heal: `${bucket}/${key}`, error: String(e) }));
  }
}

function count(result: HealResult): void {
  metrics.add("shardgate_heal_shards_total", result.rebuilt.length, { result: "rebuilt" });
  metrics.add("shardgate_heal_shards_total", result.failed.length, { result: "failed" });
}

interface HealReport {
  bucket: string;
  prefix: string;
  objectsChecked: number;
  shardsRebuilt: number;
  shardsFailed: number;
  /** Objects that could not be healed, and why; the walk went on past them. */
  objectsFailed: { key: string; error: string }[];
  /** Where the next batch starts (the `start-after` to send), or null when the walk is done. */
  next: string | null;
}

/**
 * `POST /_shardgate/admin/heal?bucket=B[&prefix=P][&start-after=K][&max-objects=N]`: checks that
 * every shard file of up to N objects is on its node at its full length, rebuilds those that are
 * not, and answers a JSON report with the key to continue after.
 */
export async function adminHeal(ctx: RequestContext): Promise<Response> {
  const params = ctx.url.searchParams;
  const bucket = params.get("bucket");
  if (!bucket) throw new S3Error(400, "InvalidArgument", "Name the bucket to heal: ?bucket=NAME.");
  const prefix = params.get("prefix") ?? "";
  const batch = Math.min(Math.max(Number(params.get("max-objects") ?? DEFAULT_BATCH) || DEFAULT_BATCH, 1), MAX_BATCH);
  const index = bucketIndex(ctx, bucket);
  const [info, page] = await Promise.all([index.info(), index.list({ prefix, delimiter: null, after: params.get("start-after") || null, maxKeys: batch })]);
  if (!info) throw noSuchBucket(bucket);
  const report: HealReport = { bucket, prefix, objectsChecked: 0, shardsRebuilt: 0, shardsFailed: 0, objectsFailed: [], next: page.isTruncated ? page.last : null };
  for (const summary of page.objects) {
    report.objectsChecked += 1;
    try {
      const { object } = await index.head(summary.key);
      if (!object) continue; // deleted meanwhile
      for (const part of ctx.core.decodeManifest(object.manifest).parts) {
        if (!isSharded(part)) continue;
        const missing = await missingShards(ctx.config, ctx.core, part);
        if (missing.length === 0) continue;
        const result = await rebuildShards(ctx.config, ctx.core, part, missing);
        count(result);
        report.shardsRebuilt += result.rebuilt.length;
        report.shardsFailed += result.failed.length;
      }
    } catch (e) {
      report.objectsFailed.push({ key: summary.key, error: e instanceof Error ? e.message : String(e) });
    }
  }
  return new Response(JSON.stringify(report, null, 2), { headers: { "content-type": "application/json" } });
}
