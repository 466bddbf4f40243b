// Get/Put/DeleteBucketPolicy and GetBucketPolicyStatus: a bucket's policy (auth/policy.ts), the
// subset of S3's policy language that the gateway enforces, kept with the bucket.
import { isPublic, MAX_POLICY_BYTES, parsePolicy } from "../../auth/policy";
import { S3Error } from "../../s3-error";
import { setBucketPolicy, storedPolicy } from "../../services/bucket-policy";
import type { RequestContext, BucketAt } from "../http/context";
import { readBodyUpTo } from "../http/request-body";
import { element, xmlResponse, xmlDocument } from "../format/xml";

const policyTooLarge = () => new S3Error("PolicyTooLarge", `Policy exceeds the maximum allowed document size (${MAX_POLICY_BYTES} bytes).`);

async function policyText(ctx: RequestContext, bucket: string): Promise<string> {
  const stored = await storedPolicy(ctx.env, bucket);
  if (stored === null) throw new S3Error("NoSuchBucketPolicy", "The bucket policy does not exist");
  return stored;
}

export async function getBucketPolicy(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  return new Response(await policyText(ctx, bucket), { status: 200, headers: { "content-type": "application/json" } });
}

export async function putBucketPolicy(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  // Read no further than a policy may be long: a bigger body is refused before it is all read.
  const body = ctx.auth.body ? await readBodyUpTo(ctx.auth.body, MAX_POLICY_BYTES, policyTooLarge) : new Uint8Array();
  const text = new TextDecoder().decode(body);
  await setBucketPolicy(ctx.env, bucket, text);
  return new Response(null, { status: 204 });
}

export async function deleteBucketPolicy(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await setBucketPolicy(ctx.env, bucket, null);
  return new Response(null, { status: 204 });
}

export async function getBucketPolicyStatus(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const policy = parsePolicy(await policyText(ctx, bucket), bucket);
  const status = element("IsPublic", String(isPublic(policy)));
  return xmlResponse(xmlDocument("PolicyStatus", status));
}
