// The admin API of healing: `POST /_shardgate/admin/heal` (services/heal.ts does the work).
import { S3Error } from "../../s3-error";
import { emptyTally, healEach, healQueues } from "../../services/heal";
import { json } from "../http/json";
import { bucketIndex, type RequestContext } from "../http/context";

/**
 * `POST /_shardgate/admin/heal?bucket=B[&prefix=P][&start-after=K][&max-objects=N]`: checks that
 * every shard file of up to N objects is on its node at its full length, rebuilds those that are
 * not, and answers a JSON report with the key to continue after. Without `bucket`: works through
 * the heal queues of every bucket (up to N objects).
 */
export async function adminHeal(
  ctx: RequestContext,
  q: { bucket: string | null; prefix: string; "start-after": string | null; "max-objects": number },
): Promise<Response> {
  const { bucket, prefix } = q;
  if (bucket === null) return json(await healQueues(ctx, q["max-objects"]));
  if (bucket === "") throw new S3Error("InvalidArgument", "Name the bucket to heal (?bucket=NAME), or none to work through the heal queues.");
  const index = bucketIndex(ctx, bucket);
  // info() answers NoSuchBucket for a bucket that does not exist (whose listing is empty).
  const [, page] = await Promise.all([index.info(), index.list({ prefix, delimiter: null, after: q["start-after"], maxKeys: q["max-objects"] })]);
  const tally = emptyTally();
  const keys = page.objects.map((o) => o.key);
  await healEach(ctx, bucket, keys, { check: true, unreachable: "heal" }, tally);
  // `next`: where the next batch starts (the `start-after` to send), or null when the walk is done.
  return json({ bucket, prefix, ...tally, next: page.isTruncated ? page.last : null });
}
