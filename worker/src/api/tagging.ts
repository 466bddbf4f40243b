// Object tagging: GetObjectTagging, PutObjectTagging, DeleteObjectTagging, and the x-amz-tagging
// header of PutObject, CopyObject and CreateMultipartUpload. Tags live in the manifest, so a GET
// still needs one metadata call; changing them swaps the manifest only if nothing else did.
import type { Manifest } from "../core-api";
import { S3Error, noSuchKey } from "../s3-error";
import { bucketIndex, type RequestContext } from "./context";
import { existingObject } from "./get";
import { element, S3_XMLNS, XML_DECLARATION, xmlResponse } from "./xml";
import { childrenNamed, childText, malformedXml, readXml } from "./xml-parse";

export type Tags = [string, string][];

const MAX_TAGS = 10;
const MAX_KEY_CHARS = 128;
const MAX_VALUE_CHARS = 256;

function invalidTag(message: string): S3Error {
  return new S3Error("InvalidTag", message);
}

/** S3's rules: at most 10 tags, unique keys of 1..128 and values of 0..256 characters. */
export function validateTags(tags: Tags): Tags {
  if (tags.length > MAX_TAGS) throw new S3Error("BadRequest", "Object tags cannot be greater than 10");
  const seen = new Set<string>();
  for (const [key, value] of tags) {
    if (key.length === 0 || [...key].length > MAX_KEY_CHARS) throw invalidTag("The TagKey you have provided is invalid");
    if ([...value].length > MAX_VALUE_CHARS) throw invalidTag("The TagValue you have provided is invalid");
    if (seen.has(key)) throw invalidTag("Cannot provide multiple Tags with the same key");
    seen.add(key);
  }
  return tags;
}

/** The x-amz-tagging header (URL query encoding: `k1=v1&k2=v2`); none: no tags. */
export function parseTaggingHeader(value: string | null): Tags {
  if (value === null || value === "") return [];
  return validateTags([...new URLSearchParams(value)]);
}

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

export function renderTagging(tags: Tags): string {
  const items = tags.map(([k, v]) => `<Tag>${element("Key", k)}${element("Value", v)}</Tag>`).join("");
  return `${XML_DECLARATION}<Tagging xmlns="${S3_XMLNS}"><TagSet>${items}</TagSet></Tagging>`;
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
