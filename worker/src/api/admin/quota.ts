// A bucket's quota (meta/quota.ts), for the root key:
//   GET    /_shardgate/admin/buckets/BUCKET/quota   {"bucket", "quota": {"maxBytes", "maxObjects"} | null, "usage": {"bytes", "objects"}}
//   PUT    /_shardgate/admin/buckets/BUCKET/quota   {"maxBytes"?: N | null, "maxObjects"?: N | null}: both limits (an absent one is none)
//   DELETE /_shardgate/admin/buckets/BUCKET/quota   no quota
// Writes that would take the bucket over it are refused with 403 QuotaExceeded in the commit's
// transaction; what is stored already stays (a lower quota only stops growth).
import type { Quota } from "../../meta/quota";
import { invalidArgument } from "../../s3-error";
import { checkBucketName } from "../format/bucket-name";
import { bucketIndex, type RequestContext } from "../http/context";
import { json, jsonObjectBody } from "../http/json";

const FIELDS = new Set(["maxBytes", "maxObjects"]);

/** A limit: a whole number, 0 or more (up to 2^53 - 1), or null / absent for none. */
function limit(body: Record<string, unknown>, name: keyof Quota): number | null {
  const value = body[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
    throw invalidArgument(`${name} must be a whole number, 0 or more, or null for no limit.`);
  return value;
}

/** The bucket's index, once `bucket` is a bucket name (a made-up name must not make a bucket index). */
function indexOf(ctx: RequestContext, bucket: string) {
  checkBucketName(bucket);
  return bucketIndex(ctx, bucket);
}

export async function adminGetQuota(ctx: RequestContext, bucket: string): Promise<Response> {
  return json({ bucket, ...(await indexOf(ctx, bucket).quota()) });
}

export async function adminSetQuota(ctx: RequestContext, bucket: string): Promise<Response> {
  const index = indexOf(ctx, bucket);
  const body = await jsonObjectBody(ctx);
  const unknown = Object.keys(body).find((k) => !FIELDS.has(k));
  if (unknown !== undefined) throw invalidArgument(`Unknown field ${JSON.stringify(unknown.slice(0, 64))}: a quota has maxBytes and maxObjects.`);
  return json({ bucket, ...(await index.setQuota({ maxBytes: limit(body, "maxBytes"), maxObjects: limit(body, "maxObjects") })) });
}

export async function adminDeleteQuota(ctx: RequestContext, bucket: string): Promise<Response> {
  await indexOf(ctx, bucket).setQuota(null);
  return new Response(null, { status: 204 });
}
