// Get/PutBucketAcl and Get/PutObjectAcl, answered as a single-owner service does (api/common/acl-policy.ts).
import { noSuchBucket } from "../../s3-error";
import { existingObject, versionHeader } from "../../services/objects";
import { checkAclBody, checkAclHeaders, ownerAclXml } from "../common/acl-policy";
import { bucketIndex, type RequestContext } from "../common/context";
import { requestedVersion } from "../common/object-request";
import { xmlResponse } from "../common/xml";
import { readXmlBody } from "../common/xml-parse";

export async function getBucketAcl(ctx: RequestContext, bucket: string): Promise<Response> {
  if ((await bucketIndex(ctx, bucket).info()) === null) throw noSuchBucket(bucket);
  return xmlResponse(ownerAclXml(ctx));
}

/** A Put*Acl's ACL: the x-amz-acl / x-amz-grant-* headers, or an <AccessControlPolicy> body. */
async function checkAcl(ctx: RequestContext): Promise<void> {
  checkAclHeaders(ctx.request.headers);
  if (ctx.auth.body) checkAclBody(ctx, await readXmlBody(ctx.auth.body));
}

export async function putBucketAcl(ctx: RequestContext, bucket: string): Promise<Response> {
  await checkAcl(ctx);
  if ((await bucketIndex(ctx, bucket).info()) === null) throw noSuchBucket(bucket);
  return new Response(null, { status: 200 });
}

export async function getObjectAcl(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const found = await existingObject(ctx, bucket, key, requestedVersion(ctx.url));
  return xmlResponse(ownerAclXml(ctx), 200, versionHeader(found));
}

export async function putObjectAcl(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  await checkAcl(ctx);
  const found = await existingObject(ctx, bucket, key, requestedVersion(ctx.url));
  return new Response(null, { status: 200, headers: versionHeader(found) });
}
