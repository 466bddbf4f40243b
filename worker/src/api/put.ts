// PutObject: one parallel wave of shard uploads, then one metadata commit. Nothing is visible
// until the commit; a failed or refused write removes its shard files; an overwrite removes the
// superseded object's shard files after the new manifest is committed.
import type { Manifest, ManifestPart, ObjectChecksum } from "../core-api";
import type { ObjectRecord, WriteCondition } from "../meta/types";
import { S3Error } from "../s3-error";
import { removePartData } from "../storage/remove";
import { writePart, type WrittenPart } from "../storage/write-part";
import { noSuchBucket } from "./bucket";
import { RequestChecksums } from "./checksums";
import { bucketIndex, type RequestContext } from "./context";
import { storedHeaders, userMetadata } from "./object-headers";

/** S3's limit for a single PUT. */
const MAX_PUT_BYTES = 5 * 1024 ** 3;

export async function putObject(ctx: RequestContext, bucket: string, key: string): Promise<Response> {
  const headers = ctx.request.headers;
  checkKey(key);
  const size = ctx.auth.contentLength;
  if (size === null) throw new S3Error(411, "MissingContentLength", "You must provide the Content-Length HTTP header.");
  if (size > MAX_PUT_BYTES) throw new S3Error(400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size.");
  const contentMd5 = parseContentMd5(headers.get("content-md5"));
  const condition = writeCondition(headers);
  const checksums = RequestChecksums.fromRequest(ctx.core, headers);
  const manifestHeaders = storedHeaders(headers);
  const metadata = userMetadata(headers);

  const written = await writePart(ctx.config, ctx.core, ctx.auth.body, size, (b) => checksums.update(b));
  let committed: { etag: string; verified: ObjectChecksum[]; previous: ObjectRecord | null };
  try {
    committed = await commit(ctx, bucket, key, written, condition, {
      checksums: await checksums.verify(ctx.auth.trailers),
      contentMd5,
      headers: manifestHeaders,
      metadata,
    });
  } catch (e) {
    // Nothing references the new shard files: remove them.
    ctx.waitUntil(removePartData(ctx, { parts: [partOf(written, "")] }));
    throw e;
  }
  const { etag, verified, previous } = committed;
  if (previous) ctx.waitUntil(removePartData(ctx, ctx.core.decodeManifest(previous.manifest)));
  const response = new Headers({ ETag: `"${etag}"` });
  for (const c of verified) response.set(`x-amz-checksum-${c.algorithm.toLowerCase()}`, c.value);
  return new Response(null, { status: 200, headers: response });
}

interface CommitInput {
  checksums: ObjectChecksum[];
  contentMd5: Uint8Array | null;
  headers: [string, string][];
  metadata: [string, string][];
}

/** Checks the digests, then commits the manifest atomically (with the write's conditions). */
async function commit(ctx: RequestContext, bucket: string, key: string, written: WrittenPart, condition: WriteCondition | undefined, input: CommitInput) {
  if (input.contentMd5 && !equalBytes(input.contentMd5, written.md5)) {
    throw new S3Error(400, "BadDigest", "The Content-MD5 you specified did not match what we received.");
  }
  const etag = hex(written.md5);
  const manifest: Manifest = {
    size: written.size,
    etag,
    lastModifiedMs: Date.now(),
    headers: input.headers,
    userMetadata: input.metadata,
    checksums: input.checksums,
    tags: [],
    parts: [partOf(written, etag)],
  };
  const record = { key, size: written.size, etag, lastModified: manifest.lastModifiedMs, manifest: ctx.core.encodeManifest(manifest) };
  const result = await bucketIndex(ctx, bucket).put(record, condition);
  if (!result.ok) {
    if (result.reason === "NoSuchBucket") throw noSuchBucket(bucket);
    throw new S3Error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold.");
  }
  return { etag, verified: input.checksums, previous: result.previous };
}

function partOf(written: WrittenPart, etag: string): ManifestPart {
  return { size: written.size, etag, layout: written.layout };
}

function checkKey(key: string): void {
  if (new TextEncoder().encode(key).length > 1024) {
    throw new S3Error(400, "KeyTooLongError", "Your key is too long (the limit is 1024 bytes of UTF-8).");
  }
}

function parseContentMd5(value: string | null): Uint8Array | null {
  if (value === null) return null;
  try {
    const bytes = Uint8Array.from(atob(value), (c) => c.charCodeAt(0));
    if (bytes.length === 16) return bytes;
  } catch {
    // fall through
  }
  throw new S3Error(400, "InvalidDigest", "The Content-MD5 you specified is not valid.");
}

/** Conditional writes: If-None-Match: * (create only) and If-Match: <etag>. */
function writeCondition(headers: Headers): WriteCondition | undefined {
  const ifNoneMatch = headers.get("if-none-match");
  const ifMatch = headers.get("if-match");
  if (ifNoneMatch !== null && ifNoneMatch.trim() !== "*") {
    throw new S3Error(501, "NotImplemented", "If-None-Match on writes supports only '*'.");
  }
  if (ifNoneMatch === null && ifMatch === null) return undefined;
  return { ifNoneMatch: ifNoneMatch !== null, ifMatch: ifMatch === null ? undefined : ifMatch.trim().replace(/^"|"$/g, "") };
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
