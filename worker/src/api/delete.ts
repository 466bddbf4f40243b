// DeleteObject and DeleteObjects: idempotent; the manifests go first (one metadata call for a
// whole batch), their shard files after the response.
import type { ObjectRecord } from "../meta/types";
import { S3Error, noSuchBucket } from "../s3-error";
import { removeParts } from "../storage/remove";
import { RequestChecksums } from "./checksums";
import { bucketIndex, type RequestContext } from "./context";
import { equalBytes } from "../bytes";
import { element, S3_XMLNS, XML_DECLARATION, xmlResponse } from "./xml";
import { childrenNamed, childText, malformedXml, parseXmlBytes, readXmlBody } from "./xml-parse";
import { parseContentMd5 } from "./object-request";

/** S3's limit on keys per DeleteObjects request. */
const MAX_DELETE_KEYS = 1000;

export async function deleteObject(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const { bucket: exists, previous } = await bucketIndex(ctx, bucket).delete(key);
  if (!exists) throw noSuchBucket(bucket);
  if (previous) removeInBackground(ctx, [previous]);
  return new Response(null, { status: 204 });
}

export async function deleteObjects(ctx: RequestContext, bucket: string): Promise<Response> {
  const request = await parseDeleteRequest(ctx);
  const valid = request.keys.filter((k) => k.error === null).map((k) => k.key);
  const { bucket: exists, previous } = await bucketIndex(ctx, bucket).deleteMany(valid);
  if (!exists) throw noSuchBucket(bucket);
  removeInBackground(ctx, previous);
  // S3 reports a key as deleted whether or not it existed; Quiet leaves out the successes.
  const results = request.keys.map(({ key, error }) =>
    error === null
      ? request.quiet
        ? ""
        : `<Deleted>${element("Key", key)}</Deleted>`
      : `<Error>${element("Key", key)}${element("Code", error.code)}${element("Message", error.message)}</Error>`,
  );
  return xmlResponse(`${XML_DECLARATION}<DeleteResult xmlns="${S3_XMLNS}">${results.join("")}</DeleteResult>`);
}

interface DeleteRequest {
  quiet: boolean;
  keys: { key: string; error: { code: string; message: string } | null }[];
}

/** The <Delete> body, whose integrity S3 requires a Content-MD5 or x-amz-checksum-* to prove. */
async function parseDeleteRequest(ctx: RequestContext): Promise<DeleteRequest> {
  const headers = ctx.request.headers;
  const contentMd5 = parseContentMd5(headers.get("content-md5"));
  const checksums = RequestChecksums.fromRequest(ctx.core, headers);
  if (!contentMd5 && checksums.isEmpty) {
    throw new S3Error("InvalidRequest", "Missing required header for this request: Content-MD5 or x-amz-checksum-*");
  }
  const bytes = await readXmlBody(ctx.auth.body);
  if (contentMd5 && !equalBytes(contentMd5, new Uint8Array(await crypto.subtle.digest("MD5", bytes)))) {
    throw new S3Error("BadDigest", "The Content-MD5 you specified did not match what we received.");
  }
  checksums.update(bytes);
  await checksums.verify(ctx.auth.trailers);
  const doc = parseXmlBytes(bytes);
  if (doc.name !== "Delete") throw malformedXml();
  const objects = childrenNamed(doc, "Object");
  if (objects.length === 0 || objects.length > MAX_DELETE_KEYS) throw malformedXml();
  const keys = objects.map((o) => {
    const key = childText(o, "Key");
    if (key === undefined) throw malformedXml();
    const version = childText(o, "VersionId");
    // Buckets are unversioned: only the "null" version exists.
    const error = version !== undefined && version !== "null" ? { code: "NoSuchVersion", message: "The specified version does not exist." } : null;
    return { key, error };
  });
  return { quiet: childText(doc, "Quiet")?.trim().toLowerCase() === "true", keys };
}

function removeInBackground(ctx: RequestContext, records: readonly ObjectRecord[]): void {
  const parts = records.flatMap((r) => ctx.core.decodeManifest(r.manifest).parts);
  if (parts.length > 0) ctx.waitUntil(removeParts(ctx.config.nodes, parts));
}
