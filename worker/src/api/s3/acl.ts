// Get/PutBucketAcl, Get/PutObjectAcl and Get/PutBucketOwnershipControls, answered as a
// single-owner service with ACLs disabled does (api/format/acls.ts).
import { existingObject, versionHeader } from "../../services/objects";
import { checkAclBody, checkAclHeaders, checkOwnershipControlsBody, ownerAclXml, ownershipControlsXml } from "../format/acls";
import { owner, bucketIndex, type RequestContext, type BucketAt, type ObjectAt } from "../http/context";
import { xmlResponse } from "../format/xml";
import { readXmlBody } from "../format/xml-parse";

export async function getBucketAcl(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await bucketIndex(ctx, bucket).info(); // NoSuchBucket unless it exists
  return xmlResponse(ownerAclXml(ctx));
}

/** A Put*Acl's ACL: the x-amz-acl / x-amz-grant-* headers, or an <AccessControlPolicy> body. */
async function checkAcl(ctx: RequestContext): Promise<void> {
  checkAclHeaders(ctx.request.headers, owner(ctx).id);
  if (ctx.auth.body) checkAclBody(ctx, await readXmlBody(ctx.auth.body));
}

export async function putBucketAcl(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await checkAcl(ctx);
  await bucketIndex(ctx, bucket).info(); // NoSuchBucket unless it exists
  return new Response(null, { status: 200 });
}

export async function getObjectAcl(ctx: RequestContext, { bucket, key, versionId }: ObjectAt): Promise<Response> {
  const found = await existingObject(ctx, bucket, key, versionId);
  return xmlResponse(ownerAclXml(ctx), 200, versionHeader(found));
}

export async function putObjectAcl(ctx: RequestContext, { bucket, key, versionId }: ObjectAt): Promise<Response> {
  await checkAcl(ctx);
  const found = await existingObject(ctx, bucket, key, versionId);
  return new Response(null, { status: 200, headers: versionHeader(found) });
}

export async function getBucketOwnershipControls(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await bucketIndex(ctx, bucket).info(); // NoSuchBucket unless it exists
  return xmlResponse(ownershipControlsXml());
}

export async function putBucketOwnershipControls(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  checkOwnershipControlsBody(await readXmlBody(ctx.auth.body));
  await bucketIndex(ctx, bucket).info(); // NoSuchBucket unless it exists
  return new Response(null, { status: 200 });
}
