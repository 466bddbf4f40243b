// Get/Put/DeleteBucketTagging: a bucket's tags, kept with the bucket in its Durable Object.
import { S3Error } from "../../s3-error";
import { bucketIndex, type RequestContext, type BucketAt } from "../http/context";
import { MAX_BUCKET_TAGS, parseTaggingXml, renderTagging, type Tags } from "../format/tags";
import { xmlResponse } from "../format/xml";

export async function getBucketTagging(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const stored = await bucketIndex(ctx, bucket).setting("tags");
  if (stored === null) throw new S3Error("NoSuchTagSet", "The TagSet does not exist");
  return xmlResponse(renderTagging(JSON.parse(stored) as Tags));
}

export async function putBucketTagging(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const tags = await parseTaggingXml(ctx.auth.body, MAX_BUCKET_TAGS);
  // An empty tag set is no tag set (GetBucketTagging then answers NoSuchTagSet).
  await bucketIndex(ctx, bucket).setSetting("tags", tags.length > 0 ? JSON.stringify(tags) : null);
  return new Response(null, { status: 204 });
}

export async function deleteBucketTagging(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await bucketIndex(ctx, bucket).setSetting("tags", null);
  return new Response(null, { status: 204 });
}
