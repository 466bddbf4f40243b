// What the metadata Durable Objects store and answer. The manifest itself is the core's binary
// encoding (core/src/manifest.rs): the index keeps it in one piece, next to the few fields listing
// needs, so a GET is one metadata call.
import type { ChecksumKind, Encryption, ManifestPart, ObjectChecksum } from "../shared/core-api";
import type { ObjectLock } from "./object-lock";

const NO_SUCH_BUCKET = "BucketIndex: no such bucket";

/**
 * What a bucket's index throws, whatever the method, when the bucket does not exist. It reaches the
 * caller as a plain Error with its message (Durable Object RPC and MetaGate, meta/remote.ts, keep an
 * error's message, not its class), so the message is what tells it (isNoSuchBucket): meta/stubs.ts
 * answers it with S3's 404 NoSuchBucket.
 */
export class NoSuchBucketError extends Error {
  constructor() {
    super(NO_SUCH_BUCKET);
  }
}

/** Whether `e` is a NoSuchBucketError, here or come from another isolate or process. */
export function isNoSuchBucket(e: unknown): boolean {
  return e instanceof Error && e.message === NO_SUCH_BUCKET;
}

/** One object version as the index holds it. */
export interface ObjectRecord {
  key: string;
  /** Null: the null version (written while the bucket was unversioned or suspended). */
  versionId: string | null;
  size: number;
  /** Without quotes. */
  etag: string;
  /** Milliseconds since the epoch. */
  lastModified: number;
  /** The core's binary manifest (Core.encodeManifest). */
  manifest: Uint8Array;
  /** Retention and legal hold (object lock); absent: none. */
  lock?: ObjectLock;
}

/** What a listing returns per object. */
export type ObjectSummary = Omit<ObjectRecord, "manifest" | "versionId" | "lock">;

/** A bucket's versioning state; null: never configured (unversioned). */
export type VersioningStatus = "Enabled" | "Suspended" | null;

/** What ListObjectVersions returns per version: an object's, or a delete marker. */
export type VersionSummary = { key: string; versionId: string | null; isLatest: boolean; lastModified: number } & (
  | { deleteMarker: false; size: number; etag: string }
  | { deleteMarker: true }
);

export interface ListVersionsQuery {
  prefix: string;
  delimiter: string | null;
  /** Versions after this key (or, with versionIdMarker, after that version of it); null: from the start. */
  keyMarker: string | null;
  /** undefined: none given; null: the null version. */
  versionIdMarker?: string | null;
  maxKeys: number;
}

export interface ListVersionsPage {
  versions: VersionSummary[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker: string | null;
  /** When the page ends on a version: its id ("null" for the null version). */
  nextVersionIdMarker: string | null;
}

/** The one metadata call of a GET or HEAD (BucketIndex.head). */
export interface HeadResult {
  object: ObjectRecord | null;
  /** Instead of an object: the delete marker that is the current version, or the version asked for. */
  marker: { versionId: string | null; lastModified: number } | null;
  /** Whether the bucket has versioning configured (its objects carry x-amz-version-id). */
  versioned: boolean;
  /** When the current object expires by the bucket's lifecycle rules (x-amz-expiration). */
  expiry?: Expiry | null;
  /** The object's x-amz-replication-status, when it is replicated (meta/replication-rules.ts). */
  replication?: "PENDING" | "COMPLETED" | "FAILED" | "REPLICA";
}

/** When a lifecycle rule expires an object, and which rule. */
export interface Expiry {
  at: number;
  ruleId: string;
}

/** What a delete did: the version it removed or the marker it added. */
export interface DeleteOutcome {
  /** x-amz-version-id of the answer: the marker made or the version removed; absent when unversioned. */
  versionId?: string;
  /** Whether that version is a delete marker. */
  marker: boolean;
  /** Versions gone for good: their shard files are deleted after the answer. */
  freed: ObjectRecord[];
  /** Why object lock refused the delete (nothing changed). */
  denied?: string;
}

export interface ListQuery {
  prefix: string;
  /** Group keys by the first delimiter after the prefix into common prefixes; null: no grouping. */
  delimiter: string | null;
  /** Return only keys (and common prefixes) strictly after this one; null: from the start. */
  after: string | null;
  /** 0..1000; 0 returns nothing and is not truncated. */
  maxKeys: number;
}

export interface ListPage {
  objects: ObjectSummary[];
  commonPrefixes: string[];
  isTruncated: boolean;
  /** When truncated: the last key or common prefix returned, to continue after. */
  last: string | null;
}

/** Conditions a write must meet atomically (conditional writes). */
export interface WriteCondition {
  /** Only if no object exists under the key (If-None-Match: *). */
  ifNoneMatch?: boolean;
  /** Only if the current object's ETag is none of these (If-None-Match: <etag>, …), without quotes. */
  ifNoneMatchEtag?: readonly string[];
  /**
   * Only over an existing object (If-Match) whose ETag is one of these (without quotes; "*": any
   * object). With no object under the key the write is refused as NoSuchKey, as S3 does.
   */
  ifMatch?: readonly string[];
  /** The write carried Content-MD5 or a checksum: object lock requires one when a retention applies. */
  integrity?: boolean;
  /**
   * A write that may happen once (a direct-path commit): refused as AlreadyCommitted if `id` was
   * written before `until`, or (`reserved`: its session reserved its size) once its session ended.
   */
  once?: { id: string; until: number; reserved?: boolean };
  /** How the write came (its event notification is ObjectCreated:<this>); default Put. */
  event?: "Put" | "Post" | "Copy";
  /** A replica written by replication (services/replication.ts): REPLICA, and never replicated again (no loop between two buckets). */
  replica?: boolean;
}

/** A committed write: the new version's id for x-amz-version-id (absent when the bucket is
 *  unversioned), and the versions it replaced for good (their shard files are to be deleted). */
export type PutResult =
  | { ok: true; versionId?: string; freed: ObjectRecord[]; expiry: Expiry | null }
  | { ok: false; reason: ConditionRefusal | "AlreadyCommitted" | LockRefusal | QuotaRefusal };

/** Why a bucket's quota refused a write (meta/quota.ts): it would store more bytes or objects than allowed. */
export type QuotaRefusal = "QuotaExceeded:bytes" | "QuotaExceeded:objects";

/** Why a write's If-Match / If-None-Match refused it: no object for If-Match (404), else 412. */
export type ConditionRefusal = "PreconditionFailed" | "NoSuchKey";

/** Why object lock refused a write: lock headers on a bucket without object lock, or a retained
 *  write without Content-MD5 or a checksum. */
export type LockRefusal = "NoObjectLockConfiguration" | "IntegrityRequired";

export interface BucketInfo {
  name: string;
  /** Milliseconds since the epoch. */
  created: number;
}

/** A multipart upload in progress, with what CreateMultipartUpload fixed for the object. */
export interface UploadInfo {
  uploadId: string;
  key: string;
  /** Milliseconds since the epoch. */
  initiated: number;
  /** Content headers to store with the object (lowercase names). */
  headers: [string, string][];
  /** x-amz-meta-*: lowercase name without the prefix, and value. */
  metadata: [string, string][];
  tags: [string, string][];
  /** x-amz-checksum-algorithm of the upload ("CRC32" …), or null. */
  checksumAlgorithm: string | null;
  /** x-amz-checksum-type, or null when the upload has no checksum algorithm. */
  checksumType: ChecksumKind | null;
  /** The object lock the object gets when completed. */
  lock?: ObjectLock;
  /** How its parts are encrypted (each part's salt is in its PartRecord); absent: not. */
  encryption?: Omit<Encryption, "partSalts">;
}

/** Shard files to delete: the part whose files they are (meta/bucket-index.ts `garbage`). */
export interface GarbageEntry {
  id: number;
  part: ManifestPart;
}

/** One uploaded part of a multipart upload. */
export interface PartRecord {
  partNumber: number;
  size: number;
  /** MD5 hex of the part's bytes, without quotes. */
  etag: string;
  lastModified: number;
  /** Unique per upload of this part number: tells a re-uploaded part from the one a client listed. */
  version: string;
  /** The part as the object's manifest will hold it. */
  part: ManifestPart;
  /** The part's checksum in the upload's algorithm, when it has one. */
  checksum: ObjectChecksum | null;
  /** Shard files the write could not store (the part is under-replicated until healed). */
  missedShards?: number[];
  /** The salt of the part's key, when the upload is encrypted. */
  salt?: string;
}

/** An object waiting for heal. */
export interface HealQueueEntry {
  key: string;
  reason: string;
  /** Milliseconds since the epoch. */
  since: number;
  attempts: number;
  lastError: string | null;
  /** Shard files known bad, by the storage id of their part; null: check them all. */
  shards: Record<string, number[]> | null;
}

export interface ListUploadsQuery {
  prefix: string;
  delimiter: string | null;
  /** Uploads of keys after this one (or of this key after `uploadIdMarker`); null: from the start. */
  keyMarker: string | null;
  uploadIdMarker: string | null;
  maxUploads: number;
}

export interface ListUploadsPage {
  uploads: Omit<UploadInfo, "headers" | "metadata" | "tags">[];
  commonPrefixes: string[];
  isTruncated: boolean;
  nextKeyMarker: string | null;
  nextUploadIdMarker: string | null;
}

export type CompleteResult =
  | { ok: true; versionId?: string; freed: ObjectRecord[]; unused: PartRecord[]; expiry: Expiry | null }
  | { ok: false; reason: "NoSuchUpload" | "InvalidPart" | ConditionRefusal | LockRefusal | QuotaRefusal };

/** An access key besides the root key, as listed (never with its secret). */
export interface KeyRecord {
  /** The access key id. */
  id: string;
  name: string;
  /** Milliseconds since the epoch. */
  created: number;
  enabled: boolean;
  /** Whether the key may create buckets (it then holds every right on those it creates). */
  createBucket: boolean;
}

/** A key's rights on one bucket. */
export interface BucketGrant {
  bucket: string;
  read: boolean;
  write: boolean;
  owner: boolean;
}

/** A key as authentication needs it: its secret sealed under the master key, and its grants. */
export interface KeyWithGrants extends KeyRecord {
  sealedSecret: string;
  grants: BucketGrant[];
  /** Sessions of the key issued before this time (ms) are refused (0: none). */
  sessionsNotBefore: number;
}
