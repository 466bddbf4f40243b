// PutObject: one parallel wave of shard uploads, then one metadata commit. Nothing is visible
// until the commit; a failed or refused write removes its shard files; an overwrite removes the
// superseded object's shard files after the new manifest is committed. The commit half is shared
// with CopyObject and CompleteMultipartUpload.
import type { Manifest, ManifestPart, ObjectChecksum } from "../core-api";
import type { PutResult, WriteCondition } from "../meta/types";
import { S3Error, noSuchBucket } from "../s3-error";
import { removeParts, storageIds } from "../storage/remove";
import { writePart, type WrittenPart } from "../storage/write-part";
import { checksumHeaders, RequestChecksums } from "./checksums";
import { bucketIndex, type RequestContext } from "./context";
import { storedHeaders, userMetadata } from "./object-headers";
import { parseTaggingHeader } from "./tagging";
import { equalBytes, hex } from "../bytes";

/** S3's limit for a single PUT (and a single part, and a CopyObject). */
export const MAX_PUT_BYTES = 5 * 1024 ** 3;

export async function putObject(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const headers = ctx.request.headers;
  checkKey(key);
  const size = requestSize(ctx);
  const contentMd5 = parseContentMd5(headers.get("content-md5"));
  const condition = writeCondition(headers);
  const checksums = RequestChecksums.fromRequest(ctx.core, headers);
  const fields = { headers: storedHeaders(headers), userMetadata: userMetadata(headers), tags: parseTaggingHeader(headers.get("x-amz-tagging")) };

  const written = await writePart(ctx.config, ctx.core, ctx.auth.body, size, (b) => checksums.update(b));
  const etag = hex(written.md5);
  const verified = await verifyWritten(ctx, written, contentMd5, checksums);
  await commitObject(ctx, bucket, { key, size, etag, ...fields, checksums: verified, parts: [partOf(written, etag, [])] }, condition, [written]);
  return new Response(null, { status: 200, headers: { ETag: `"${etag}"`, ...checksumHeaders(verified) } });
}

/** The decoded body's length, required and at most MAX_PUT_BYTES. */
export function requestSize(ctx: RequestContext): number {
  const size = ctx.auth.contentLength;
  if (size === null) throw new S3Error("MissingContentLength", "You must provide the Content-Length HTTP header.");
  if (size > MAX_PUT_BYTES) throw new S3Error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size.");
  return size;
}

/**
 * Checks Content-MD5 and the x-amz-checksum-* of bytes just written; on a mismatch the written
 * shard files are removed (nothing references them) and the error is thrown.
 */
export async function verifyWritten(
  ctx: RequestContext,
  written: WrittenPart,
  contentMd5: Uint8Array | null,
  checksums: RequestChecksums,
): Promise<ObjectChecksum[]> {
  try {
    if (contentMd5 && !equalBytes(contentMd5, written.md5)) {
      throw new S3Error("BadDigest", "The Content-MD5 you specified did not match what we received.");
    }
    return await checksums.verify(ctx.auth.trailers);
  } catch (e) {
    ctx.waitUntil(removeParts(ctx.config.nodes, [partOf(written, "", [])]));
    throw e;
  }
}

/** What a new object version is made of (the manifest less its timestamp). */
export type NewObject = Omit<Manifest, "lastModifiedMs"> & { key: string };

/**
 * Commits a manifest atomically, with the write's conditions. On failure the data this request
 * wrote (`written`) is removed; on success the superseded version's shard files are, except any
 * the new manifest still references (a copy onto itself that replaced only metadata).
 */
export async function commitObject(
  ctx: RequestContext,
  bucket: string,
  object: NewObject,
  condition: WriteCondition | undefined,
  written: readonly WrittenPart[],
): Promise<{ lastModified: number }> {
  const { key, ...rest } = object;
  const manifest: Manifest = { ...rest, lastModifiedMs: Date.now() };
  let result: PutResult;
  try {
    const record = { key, size: manifest.size, etag: manifest.etag, lastModified: manifest.lastModifiedMs, manifest: ctx.core.encodeManifest(manifest) };
    const missed = written.some((w) => w.missedShards.length > 0);
    result = await bucketIndex(ctx, bucket).put(record, condition, missed ? UNDER_REPLICATED : null);
    if (!result.ok) throw result.reason === "NoSuchBucket" ? noSuchBucket(bucket) : preconditionFailedOnWrite();
  } catch (e) {
    ctx.waitUntil(
      removeParts(
        ctx.config.nodes,
        written.map((w) => partOf(w, "", [])),
      ),
    );
    throw e;
  }
  if (result.previous) {
    const previous = ctx.core.decodeManifest(result.previous.manifest);
    ctx.waitUntil(removeParts(ctx.config.nodes, previous.parts, storageIds(manifest.parts)));
  }
  return { lastModified: manifest.lastModifiedMs };
}

/** The heal-queue reason of a write that stored fewer than k + m shard files. */
export const UNDER_REPLICATED = "under-replicated write";

export function preconditionFailedOnWrite(): S3Error {
  return new S3Error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold.");
}

export function partOf(written: WrittenPart, etag: string, checksums: ObjectChecksum[]): ManifestPart {
  const layout = written.layout.type === "sharded" ? { ...written.layout, partChecksums: checksums } : written.layout;
  return { size: written.size, etag, layout };
}

export function checkKey(key: string): void {
  if (new TextEncoder().encode(key).length > 1024) {
    throw new S3Error("KeyTooLongError", "Your key is too long (the limit is 1024 bytes of UTF-8).");
  }
}

export function parseContentMd5(value: string | null): Uint8Array | null {
  if (value === null) return null;
  try {
    const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    if (bytes.length === 16) return bytes;
  } catch {
    // fall through
  }
  throw new S3Error("InvalidDigest", "The Content-MD5 you specified is not valid.");
}

/** Conditional writes: If-None-Match: * (create only) and If-Match: <etag>. */
export function writeCondition(headers: Headers): WriteCondition | undefined {
  const ifNoneMatch = headers.get("if-none-match");
  const ifMatch = headers.get("if-match");
  if (ifNoneMatch !== null && ifNoneMatch.trim() !== "*") {
    throw new S3Error("NotImplemented", "If-None-Match on writes supports only '*'.");
  }
  if (ifNoneMatch === null && ifMatch === null) return undefined;
  return { ifNoneMatch: ifNoneMatch !== null, ifMatch: ifMatch === null ? undefined : ifMatch.trim().replace(/^"|"$/g, "") };
}
