// Object tagging: GetObjectTagging, PutObjectTagging, DeleteObjectTagging, and the x-amz-tagging
// header of PutObject, CopyObject and CreateMultipartUpload (api/format/tags.ts). Tags live in the manifest, so a GET
// still needs one metadata call; changing them swaps the manifest only if nothing else did.
import type { Manifest } from "../../shared/core-api";
import { S3Error, noSuchKey } from "../../s3-error";
import { bucketIndex, type RequestContext, type ObjectAt } from "../http/context";
import { xmlResponse } from "../format/xml";
import { existingObject, versionHeader } from "../../services/objects";
import { parseTaggingXml, renderTagging } from "../format/tags";

export async function getObjectTagging(ctx: RequestContext, { bucket, key, versionId }: ObjectAt): Promise<Response> {
  const found = await existingObject(ctx, bucket, key, versionId);
  return xmlResponse(renderTagging(ctx.core.decodeManifest(found.object.manifest).tags), 200, versionHeader(found));
}

export async function putObjectTagging(ctx: RequestContext, object: ObjectAt): Promise<Response> {
  const tags = await parseTaggingXml(ctx.auth.body);
  const headers = await updateManifest(ctx, object, (m) => ({ ...m, tags }));
  return new Response(null, { status: 200, headers });
}

export async function deleteObjectTagging(ctx: RequestContext, object: ObjectAt): Promise<Response> {
  const headers = await updateManifest(ctx, object, (m) => ({ ...m, tags: [] }));
  return new Response(null, { status: 204, headers });
}

/**
 * Rewrites the manifest of the version the request names (or the current one); retried when a
 * concurrent write changed it meanwhile. Returns the answer's version header.
 */
async function updateManifest(ctx: RequestContext, { bucket, key, versionId }: ObjectAt, change: (m: Manifest) => Manifest): Promise<Record<string, string>> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const found = await existingObject(ctx, bucket, key, versionId);
    const { object } = found;
    const next = change(ctx.core.decodeManifest(object.manifest));
    const record = { ...object, manifest: ctx.core.encodeManifest(next) };
    const result = await bucketIndex(ctx, bucket).replace(object.manifest, record);
    if (result === "replaced") return versionHeader(found);
    if (result === "missing") throw versionId === undefined ? noSuchKey() : new S3Error("NoSuchVersion", "The specified version does not exist.");
  }
  throw new S3Error("OperationAborted", "A conflicting conditional operation is currently in progress against this resource. Please try again.");
}
