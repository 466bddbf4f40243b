// Objects as a service: plain functions over the metadata and the nodes that the S3 operations
// share (no Request, no Response). Finding an object, committing a new version (and removing what
// it supersedes), and reading a byte range of an object across its parts.
import type { Env, GatewayConfig } from "../config";
import type { Core, Manifest, ManifestPart, ObjectChecksum } from "../shared/core-api";
import { bucketIndex } from "../meta/stubs";
import { expirationHeader } from "../meta/lifecycle-rules";
import { conditionRefusal } from "../meta/object-records";
import type { ObjectLock } from "../meta/object-lock";
import type { Expiry, ObjectRecord, PutResult, WriteCondition } from "../meta/types";
import { hex } from "../shared/bytes";
import { metrics } from "../observability/metrics";
import { noSuchKey, preconditionFailed, S3Error } from "../s3-error";
import type { LossReason, RangeSource, ReadEvents } from "../shared/read-part";
import { partKey } from "../sse/object-keys";
import { plainSize, TAG_BYTES } from "../sse/segments";
import { decryptingSource } from "./encryption";
import { type CacheUse, storedSource } from "./cached-read";
import { sourceStream } from "../storage/range-stream";
import { removeParts, storageIds } from "../storage/remove";
import type { WrittenPart } from "../storage/write-part";
import type { LostShards } from "./heal";

/** What the object service needs: no request. */
export interface ObjectContext {
  env: Env;
  config: GatewayConfig;
  core: Core;
  /** Work that may finish after the answer (removing superseded shard files). */
  waitUntil(promise: Promise<unknown>): void;
}

/** An object version found, and whether its bucket is versioned (its answers name the version). */
export interface FoundObject {
  object: ObjectRecord;
  versioned: boolean;
  /** When a lifecycle rule expires it (current objects only). */
  expiry: Expiry | null;
  /** Its x-amz-replication-status, when it is replicated. */
  replication?: "PENDING" | "COMPLETED" | "FAILED" | "REPLICA";
}

/**
 * The object under `key` (one metadata call): its current version, or with `versionId` (null:
 * the null version) that version. Otherwise S3's error: NoSuchBucket; NoSuchKey, with the delete
 * marker's headers when one is the current version; NoSuchVersion; MethodNotAllowed when the
 * version asked for is a delete marker.
 */
export async function existingObject(ctx: Pick<ObjectContext, "env">, bucket: string, key: string, versionId?: string | null): Promise<FoundObject> {
  const { object, marker, versioned, expiry, replication } = await bucketIndex(ctx.env, bucket).head(key, versionId);
  if (object) return { object, versioned, expiry: expiry ?? null, ...(replication ? { replication } : {}) };
  if (marker) {
    const headers = { "x-amz-delete-marker": "true", "x-amz-version-id": marker.versionId ?? "null" };
    if (versionId === undefined) throw noSuchKey(headers);
    const lastModified = new Date(marker.lastModified).toUTCString();
    throw new S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.", { ...headers, "Last-Modified": lastModified });
  }
  if (versionId === undefined) throw noSuchKey();
  throw new S3Error("NoSuchVersion", "The specified version does not exist.");
}

/** The x-amz-version-id an answer about `object` carries: only in a versioned bucket. */
export function versionHeader(found: FoundObject): Record<string, string> {
  return found.versioned ? { "x-amz-version-id": found.object.versionId ?? "null" } : {};
}

/** x-amz-replication-status, when the version is replicated. */
export function replicationHeader(found: FoundObject): Record<string, string> {
  return found.replication ? { "x-amz-replication-status": found.replication } : {};
}

/** The headers of an answer to a write: the new version's id (versioned buckets) and its expiry. */
export function writtenHeaders(written: { versionId?: string; expiry?: Expiry | null }): Record<string, string> {
  return { ...(written.versionId === undefined ? {} : { "x-amz-version-id": written.versionId }), ...expiryHeader(written.expiry) };
}

/** x-amz-expiration, when a lifecycle rule expires the object. */
export function expiryHeader(expiry: Expiry | null | undefined): Record<string, string> {
  return expiry ? { "x-amz-expiration": expirationHeader(expiry) } : {};
}

/** What a new object version is made of (the manifest less its timestamp), and its lock. */
export type NewObject = Omit<Manifest, "lastModifiedMs"> & { key: string; lock?: ObjectLock };

/** The S3 error for a write the index refused. */
export function writeRefused(reason: Exclude<PutResult, { ok: true }>["reason"]): S3Error {
  switch (reason) {
    case "PreconditionFailed":
      return preconditionFailed();
    case "NoSuchKey":
      return noSuchKey();
    case "NoObjectLockConfiguration":
      return new S3Error("InvalidRequest", "Bucket is missing Object Lock Configuration");
    case "AlreadyCommitted":
      return new S3Error("InvalidRequest", "This upload session was committed, aborted or has expired: open a new one.");
    case "IntegrityRequired":
      return new S3Error("InvalidRequest", "Content-MD5 OR x-amz-checksum- HTTP header is required for Put Object requests with Object Lock parameters");
    case "QuotaExceeded:bytes":
      return new S3Error("QuotaExceeded", "Bucket quota exceeded: this write would store more bytes than the bucket's quota allows.");
    case "QuotaExceeded:objects":
      return new S3Error("QuotaExceeded", "Bucket quota exceeded: this write would store more objects than the bucket's quota allows.");
  }
}

/**
 * Refuses a conditional write whose condition already fails against the key's current object,
 * before its bytes are stored: a large body's upload costs more than this lookup. The commit
 * decides again, atomically (a write that passes here may still be refused there).
 */
export async function refuseEarly(ctx: Pick<ObjectContext, "env">, bucket: string, key: string, condition: WriteCondition): Promise<void> {
  if (condition.ifMatch === undefined && !condition.ifNoneMatch && condition.ifNoneMatchEtag === undefined) return;
  const { object } = await bucketIndex(ctx.env, bucket).head(key);
  const refused = conditionRefusal(object, condition);
  if (refused) throw writeRefused(refused);
}

/**
 * Commits a manifest atomically, with the write's conditions. On failure the data this request
 * wrote (`written`) is removed, unless `onRefused` is "keep" (a direct-path commit: its shard
 * files may be an earlier commit's, replayed; direct-upload.ts removes them when the refusal ends
 * the session); on
 * success the superseded version's shard files are, except any the new manifest still references
 * (a copy onto itself that replaced only metadata).
 */
export async function commitObject(
  ctx: ObjectContext,
  bucket: string,
  object: NewObject,
  condition: WriteCondition | undefined,
  written: readonly WrittenPart[],
  onRefused: "remove" | "keep" = "remove",
): Promise<{ lastModified: number; versionId?: string; expiry: Expiry | null }> {
  const { key, lock, ...rest } = object;
  const manifest: Manifest = { ...rest, lastModifiedMs: Date.now() };
  let result: PutResult;
  try {
    // The index gives the version its id as it commits it.
    const record = {
      key,
      versionId: null,
      size: manifest.size,
      etag: manifest.etag,
      lastModified: manifest.lastModifiedMs,
      manifest: ctx.core.encodeManifest(manifest),
      ...(lock ? { lock } : {}),
    };
    const missed = written.some((w) => w.missedShards.length > 0);
    result = await bucketIndex(ctx.env, bucket).put(record, condition, missed ? UNDER_REPLICATED : null);
    if (!result.ok) throw writeRefused(result.reason);
  } catch (e) {
    const parts = written.map((w) => partOf(w, "", []));
    if (onRefused === "remove") ctx.waitUntil(removeParts(ctx.config.nodes, parts));
    throw e;
  }
  removeFreed(ctx, result.freed, storageIds(manifest.parts));
  return { lastModified: manifest.lastModifiedMs, versionId: result.versionId, expiry: result.expiry };
}

/**
 * Deletes, after the answer, the shard files of versions gone for good, except those of parts
 * in `keep` (still referenced by the version that replaced them: a copy onto itself).
 */
export function removeFreed(ctx: Pick<ObjectContext, "config" | "core" | "waitUntil">, freed: readonly ObjectRecord[], keep?: ReadonlySet<string>): void {
  const parts = freed.flatMap((r) => ctx.core.decodeManifest(r.manifest).parts);
  if (parts.length > 0) ctx.waitUntil(removeParts(ctx.config.nodes, parts, keep));
}

/** S3's ETag of an object uploaded in parts: the MD5 of the parts' MD5s, a dash, the part count. */
export async function multipartEtag(partMd5s: readonly string[]): Promise<string> {
  const md5s = new Uint8Array(partMd5s.length * 16);
  partMd5s.forEach((md5, i) => {
    for (let j = 0; j < 16; j++) md5s[i * 16 + j] = parseInt(md5.slice(2 * j, 2 * j + 2), 16);
  });
  return `${hex(new Uint8Array(await crypto.subtle.digest("MD5", md5s)))}-${partMd5s.length}`;
}

/** The heal-queue reason of a write that stored fewer than k + m shard files. */
export const UNDER_REPLICATED = "under-replicated write";

export function partOf(written: WrittenPart, etag: string, checksums: ObjectChecksum[]): ManifestPart {
  const layout = written.layout.type === "sharded" ? { ...written.layout, partChecksums: checksums } : written.layout;
  return { size: written.size, etag, layout };
}

/**
 * Object bytes [start, end) as one source: the first part covered opens now (so errors become
 * statuses), later parts open when the read reaches them. An encrypted object's ciphertext comes
 * from the block cache when it is there; `cache` (a GET's) fills it with what was not.
 */
export async function openRangeSource(
  ctx: Pick<ObjectContext, "config" | "core">,
  manifest: Manifest,
  start: number,
  end: number,
  lost: LostShards = new Map(),
  objectKey: Uint8Array | null = null,
  cache: CacheUse | null = null,
): Promise<RangeSource> {
  const covering = partOffsets(manifest).filter(({ offset, size }) => offset < end && offset + size > start);
  const ranges = covering.map(({ part, offset, size, index }) => ({
    part,
    index,
    start: Math.max(start, offset) - offset,
    end: Math.min(end, offset + size) - offset,
  }));
  const events = readEvents(lost);
  const encryption = manifest.encryption;
  const open = async (i: number): Promise<RangeSource> => {
    const { part, index, start: from, end: to } = ranges[i];
    // A plain object's cached bytes were looked for already (get.ts cachedRange), natively.
    if (!encryption) return storedSource(ctx, part, from, to, events, false, cache);
    // Whole segments from the shard files, decrypted, then trimmed to the plaintext asked for.
    if (!objectKey) throw new Error("an encrypted object read without its key");
    const framed = encryption.segmentBytes + TAG_BYTES;
    const first = Math.floor(from / encryption.segmentBytes);
    const last = Math.ceil(to / encryption.segmentBytes);
    const stored = await storedSource(ctx, part, first * framed, Math.min(part.size, last * framed), events, true, cache);
    const key = await partKey(objectKey, encryption.partSalts[index] as string);
    return decryptingSource(stored, key, encryption.segmentBytes, first, from - first * encryption.segmentBytes, to - from);
  };
  let index = 0;
  let current: RangeSource | null = ranges.length > 0 ? await open(0) : null;
  return {
    async next(use, max) {
      while (current) {
        const piece = await current.next(use, max);
        if (piece !== null) return piece;
        index += 1;
        current = index < ranges.length ? await open(index) : null;
      }
      return null;
    },
    close: () => current?.close(),
  };
}

/** openRangeSource as a stream (a copy's source, an UploadPartCopy's). */
export async function openRange(...args: Parameters<typeof openRangeSource>): Promise<ReadableStream<Uint8Array>> {
  return sourceStream(await openRangeSource(...args));
}

/** A part, its index, and where its bytes sit in the object (its plaintext, when encrypted). */
export interface PartSpan {
  part: ManifestPart;
  index: number;
  offset: number;
  size: number;
}

/** Each part with the object offset of its first byte and its size as the client sees it. */
export function partOffsets(manifest: Manifest): PartSpan[] {
  let at = 0;
  const encryption = manifest.encryption;
  return manifest.parts.map((part, index) => {
    const offset = at;
    const size = encryption ? plainSize(part.size, encryption.segmentBytes) : part.size;
    at += size;
    return { part, index, offset, size };
  });
}

/** A shard's worst reason wins: once it is known missing, failed or rotten, it stays so. */
const HEAL_WORTHY: ReadonlySet<LossReason> = new Set(["missing", "error", "checksum"]);

/** Counts one degraded read per request and every checksum failure; notes the shards lost. */
function readEvents(lost: LostShards): ReadEvents {
  let degraded = false;
  return {
    shardLost(storageId, shard, why) {
      if (!degraded) metrics.add("shardgate_degraded_reads_total");
      degraded = true;
      if (why === "checksum") metrics.add("shardgate_checksum_failures_total");
      if (why === "slow") metrics.add("shardgate_hedged_reads_total");
      const shards = lost.get(storageId) ?? new Map<number, LossReason>();
      if (!HEAL_WORTHY.has(shards.get(shard) ?? "slow")) shards.set(shard, why);
      lost.set(storageId, shards);
    },
  };
}
