// What a request that writes an object says about its body: its length, its key, its Content-MD5,
// and the check of the written bytes against them (PutObject, UploadPart).
import { equalBytes } from "../../shared/bytes";
import type { ObjectChecksum } from "../../shared/core-api";
import { isVersionId } from "../../meta/versions";
import { REPLICA_HEADER } from "../../meta/replication-rules";
import { S3Error } from "../../s3-error";
import { MAX_PART_NUMBER, MAX_PUT_BYTES } from "../../s3-limits";
import { partOf } from "../../services/objects";
import { removeParts } from "../../storage/remove";
import type { WrittenPart } from "../../storage/write-part";
import type { RequestChecksums } from "./checksums";
import type { RequestContext } from "../http/context";

/** A version id as sent (`?versionId`; "null": the null version); InvalidArgument when one this gateway could not have made. */
export function parseVersionId(versionId: string): string | null {
  if (!isVersionId(versionId)) throw new S3Error("InvalidArgument", "Invalid version id specified");
  return versionId === "null" ? null : versionId;
}

/** A part number as sent (`?partNumber`): InvalidArgument unless a whole number from 1 to 10000. */
export function parsePartNumber(value: string | null): number {
  const n = value !== null && /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= MAX_PART_NUMBER)) throw new S3Error("InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
  return n;
}

/** A multipart upload's requests name it: `?uploadId`. */
export interface UploadParams {
  uploadId: string;
}

/** UploadPart and UploadPartCopy name the part too: `?partNumber`. */
export interface PartParams extends UploadParams {
  partNumber: number;
}

export const uploadParams = (query: URLSearchParams): UploadParams => ({ uploadId: query.get("uploadId") ?? "" });
export const partParams = (query: URLSearchParams): PartParams => ({ ...uploadParams(query), partNumber: parsePartNumber(query.get("partNumber")) });
/** GET and HEAD may name one part of a multipart object (`?partNumber`), or none. */
export const readPartParams = (query: URLSearchParams): { partNumber: number | null } => {
  const n = query.get("partNumber");
  return { partNumber: n === null ? null : parsePartNumber(n) };
};

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
    if (contentMd5 && !equalBytes(contentMd5, written.md5)) throw new S3Error("BadDigest", "The Content-MD5 you specified did not match what we received.");
    return await checksums.verify(ctx.auth.trailers);
  } catch (e) {
    ctx.waitUntil(removeParts(ctx.config.nodes, [partOf(written, "", [])]));
    throw e;
  }
}

/** S3's longest key, in bytes of UTF-8. */
const MAX_KEY_BYTES = 1024;
const utf8 = new TextEncoder();

/** Whether `key` is longer than S3 takes (a UTF-16 unit is at most 3 bytes of UTF-8: short keys are not encoded). */
export function keyTooLong(key: string): boolean {
  return key.length * 3 > MAX_KEY_BYTES && utf8.encode(key).length > MAX_KEY_BYTES;
}

export function checkKey(key: string): void {
  if (keyTooLong(key)) throw new S3Error("KeyTooLongError", "Your key is too long (the limit is 1024 bytes of UTF-8).");
}

/**
 * Whether a write or delete says it is another gateway's replica (`x-shardgate-replica: true`,
 * meta/replication-rules.ts REPLICA_HEADER; who may say so is the operation's permission, the root
 * key's alone, and the header is signed: auth/sigv4.ts). Another value is InvalidArgument.
 */
export function replicaRequest(headers: Headers): boolean {
  const value = headers.get(REPLICA_HEADER);
  if (value === null) return false;
  if (value.trim().toLowerCase() !== "true") throw new S3Error("InvalidArgument", `${REPLICA_HEADER} takes only "true".`);
  return true;
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
