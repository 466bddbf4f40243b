// Object tagging: GetObjectTagging, PutObjectTagging, DeleteObjectTagging, and the x-amz-tagging
// header of PutObject, CopyObject and CreateMultipartUpload (api/tags.ts). Tags live in the manifest, so a GET
// still needs one metadata call; changing them swaps the manifest only if nothing else did.
import type { Manifest } from "../core-api";
import { S3Error, noSuchKey } from "../s3-error";
import { bucketIndex, type RequestContext } from "./context";
import { xmlResponse } from "./xml";
import { childrenNamed, childText, malformedXml, readXml } from "./xml-parse";
import { existingObject } from "../services/objects";
import { type Tags, validateTags, renderTagging } from "./tags";

async function parseTaggingXml(body: ReadableStream<Uint8Array> | null): Promise<Tags> {
  const doc = await readXml(body);
  const tagSet = doc.name === "Tagging" ? childrenNamed(doc, "TagSet") : [];
  if (tagSet.length !== 1) throw malformedXml();
  const tags: Tags = childrenNamed(tagSet[0], "Tag").map((tag) => {
    const key = childText(tag, "Key");
    const value = childText(tag, "Value");
    if (key === undefined || value === undefined) throw malformedXml();
    return [key, value];
  });
  return validateTags(tags);
}

export async function getObjectTagging(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const { manifest } = await currentObject(ctx, bucket, key);
  return xmlResponse(renderTagging(manifest.tags));
}

export async function putObjectTagging(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const tags = await parseTaggingXml(ctx.auth.body);
  await updateManifest(ctx, bucket, key, (m) => ({ ...m, tags }));
  return new Response(null, { status: 200 });
}

export async function deleteObjectTagging(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  await updateManifest(ctx, bucket, key, (m) => ({ ...m, tags: [] }));
  return new Response(null, { status: 204 });
}

async function currentObject(ctx: RequestContext, bucket: string, key: string) {
  const object = await existingObject(ctx, bucket, key);
  return { object, manifest: ctx.core.decodeManifest(object.manifest) };
}

/** Rewrites an object's manifest; retried when a concurrent write changed the object meanwhile. */
async function updateManifest(ctx: RequestContext, bucket: string, key: string, change: (m: Manifest) => Manifest): Promise<void> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { object, manifest } = await currentObject(ctx, bucket, key);
    const next = change(manifest);
    const record = { key, size: object.size, etag: object.etag, lastModified: object.lastModified, manifest: ctx.core.encodeManifest(next) };
    const result = await bucketIndex(ctx, bucket).replace(object.manifest, record);
    if (result === "replaced") return;
    if (result === "missing") throw noSuchKey();
  }
  throw new S3Error("OperationAborted", "A conflicting conditional operation is currently in progress against this resource. Please try again.");
}
