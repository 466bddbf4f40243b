// What a request that writes an object says about its body: its length, its key, its Content-MD5,
// and the check of the written bytes against them (PutObject, UploadPart).
import { equalBytes } from "../../shared/bytes";
import type { ObjectChecksum } from "../../shared/core-api";
import { isVersionId } from "../../meta/versions";
import { S3Error } from "../../s3-error";
import { partOf } from "../../services/objects";
import { removeParts } from "../../storage/remove";
import type { WrittenPart } from "../../storage/write-part";
import type { RequestChecksums } from "./checksums";
import type { RequestContext } from "./context";

/**
 * The version an object request names with `?versionId`: undefined for none (the current one),
 * null for the null version. One that this gateway could not have made is InvalidArgument.
 */
export function requestedVersion(url: URL): string | null | undefined {
  const versionId = url.searchParams.get("versionId");
  if (versionId === null) return undefined;
  return parseVersionId(versionId);
}

/** A version id as sent ("null": the null version); InvalidArgument when malformed. */
export function parseVersionId(versionId: string): string | null {
  if (!isVersionId(versionId)) throw new S3Error("InvalidArgument", "Invalid version id specified");
  return versionId === "null" ? null : versionId;
}

/** S3's limit for a single PUT (and a single part, and a CopyObject). */
export const MAX_PUT_BYTES = 5 * 1024 ** 3;

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
