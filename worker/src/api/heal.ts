// The admin API of healing: `POST /_shardgate/admin/heal` (services/heal.ts does the work).
import { S3Error, noSuchBucket } from "../s3-error";
import { emptyTally, healEach, healQueues } from "../services/heal";
import { batchSize, json } from "./admin";
import { bucketIndex, type RequestContext } from "./context";

/**
 * `POST /_shardgate/admin/heal?bucket=B[&prefix=P][&start-after=K][&max-objects=N]`: checks that
 * every shard file of up to N objects is on its node at its full length, rebuilds those that are
 * not, and answers a JSON report with the key to continue after. Without `bucket`: works through
 * the heal queues of every bucket (up to N objects).
 */
export async function adminHeal(ctx: RequestContext): Promise<Response> {
  const params = ctx.url.searchParams;
  const bucket = params.get("bucket");
  if (bucket === null) return json(await healQueues(ctx, batchSize(params)));
  if (bucket === "") throw new S3Error("InvalidArgument", "Name the bucket to heal (?bucket=NAME), or none to work through the heal queues.");
  const prefix = params.get("prefix") ?? "";
  const index = bucketIndex(ctx, bucket);
  const [info, page] = await Promise.all([
    index.info(),
    index.list({ prefix, delimiter: null, after: params.get("start-after") || null, maxKeys: batchSize(params) }),
  ]);
  if (!info) throw noSuchBucket(bucket);
  const tally = emptyTally();
  await healEach(
    ctx,
    bucket,
    page.objects.map((o) => o.key),
    { check: true, unreachable: "heal" },
    tally,
  );
  // `next`: where the next batch starts (the `start-after` to send), or null when the walk is done.
  return json({ bucket, prefix, ...tally, next: page.isTruncated ? page.last : null });
}
