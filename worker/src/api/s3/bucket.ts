// Bucket operations: CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation.
import { S3Error } from "../../s3-error";
import { checkBucketName } from "../format/bucket-name";
import { checkAclHeaders, checkObjectOwnershipHeader } from "../format/acls";
import { owner, bucketIndex, bucketRegistry, type RequestContext, type BucketAt } from "../http/context";
import { readBodyUpTo } from "../http/request-body";
import { xmlResponse, xmlDocument } from "../format/xml";
import { childText, malformedXml, parseXmlBytes } from "../format/xml-parse";
import { drainBucketGarbage } from "../../services/garbage";
import { dropBucketGrants, grantBucket } from "../../services/access-keys";
import { forgetSettings } from "../../services/bucket-settings";

export async function createBucket(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  checkBucketName(bucket);
  checkAclHeaders(ctx.request.headers, owner(ctx).id);
  checkObjectOwnershipHeader(ctx.request.headers);
  await checkLocationConstraint(ctx);
  const created = Date.now();
  // The registry decides who created it; the bucket's own index then starts accepting objects.
  const added = await bucketRegistry(ctx).add(bucket, created);
  if (added === "exists") throw new S3Error("BucketAlreadyOwnedByYou", "Your previous request to create the named bucket succeeded and you already own it.");
  const objectLock = ctx.request.headers.get("x-amz-bucket-object-lock-enabled")?.trim().toLowerCase() === "true";
  await bucketIndex(ctx, bucket).init(bucket, created, objectLock);
  forgetSettings(bucket);
  // A key allowed to create buckets holds every right on those it creates.
  if (ctx.principal.kind === "key") await grantBucket(ctx.env, ctx.principal.keyId, { bucket, read: true, write: true, owner: true });
  return new Response(null, { status: 200, headers: { Location: `/${bucket}` } });
}

/** The largest CreateBucketConfiguration read (S3's are a few hundred bytes). */
const MAX_CONFIGURATION_BYTES = 64 * 1024;

/** An optional CreateBucketConfiguration may only name this gateway's region. */
async function checkLocationConstraint(ctx: RequestContext): Promise<void> {
  const body = ctx.auth.body
    ? await readBodyUpTo(ctx.auth.body, MAX_CONFIGURATION_BYTES, () => malformedXml("The XML you provided was too large."))
    : new Uint8Array();
  if (body.length === 0) return;
  const doc = parseXmlBytes(body);
  if (doc.name !== "CreateBucketConfiguration") throw malformedXml();
  const location = childText(doc, "LocationConstraint")?.trim() ?? "";
  if (location !== "" && location !== ctx.config.region) {
    throw new S3Error("InvalidLocationConstraint", `The specified location-constraint is not valid: this gateway serves ${ctx.config.region}.`);
  }
}

export async function headBucket(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await bucketIndex(ctx, bucket).info(); // NoSuchBucket unless it exists
  return new Response(null, { status: 200, headers: { "x-amz-bucket-region": ctx.config.region } });
}

/** Garbage entries deleted right after a bucket is: its uploads' parts. */
const DROPPED_BUCKET_GARBAGE = 10_000;

export async function deleteBucket(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const result = await bucketIndex(ctx, bucket).drop();
  if (result === "not-empty") throw new S3Error("BucketNotEmpty", "The bucket you tried to delete is not empty.");
  await bucketRegistry(ctx).remove(bucket);
  await dropBucketGrants(ctx.env, bucket);
  forgetSettings(bucket);
  // Uploads in progress went with the bucket: their shard files now, as the registry no longer lists it for the job.
  ctx.waitUntil(drainBucketGarbage(ctx.env, ctx.config, bucket, DROPPED_BUCKET_GARBAGE).catch(() => {}));
  return new Response(null, { status: 204 });
}

export async function getBucketLocation(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await bucketIndex(ctx, bucket).info(); // NoSuchBucket unless it exists
  // S3 answers an empty constraint for us-east-1.
  const region = ctx.config.region === "us-east-1" ? "" : ctx.config.region;
  return xmlResponse(xmlDocument("LocationConstraint", region));
}
