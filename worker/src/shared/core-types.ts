// Generated from core/src/manifest.rs by core/src/ts_types.rs (`UPDATE_CORE_TYPES=1 cargo test ts_types`): do not edit.

export type Manifest = { 
/**
 * Whole object size in bytes.
 */
size: number, 
/**
 * As returned to clients, without quotes.
 */
etag: string, 
/**
 * Set by the worker (the core has no clock).
 */
lastModifiedMs: number, 
/**
 * Stored content headers (lowercase names: content-type, content-disposition,
 * content-encoding, content-language, cache-control, expires), in insertion order.
 */
headers: Array<[string, string]>, 
/**
 * `x-amz-meta-*`: lowercase name without the prefix, and value.
 */
userMetadata: Array<[string, string]>, 
/**
 * S3 checksums of the whole object.
 */
checksums: Array<ObjectChecksum>, 
/**
 * Object tags.
 */
tags: Array<[string, string]>, 
/**
 * One for a single PUT, N for multipart, in order.
 */
parts: Array<ManifestPart>, 
/**
 * Server-side encryption: absent for a plain object. When present, every part stores
 * ciphertext (its `size` is the stored size) and `size` is the plaintext's.
 */
encryption?: Encryption, };

export type ManifestPart = { 
/**
 * Bytes in this part.
 */
size: number, 
/**
 * Part ETag (md5 hex) without quotes.
 */
etag: string, 
/**
 * Where the part's bytes are.
 */
layout: PartLayout, };

export type PartLayout = { "type": "inline", 
/**
 * The part's bytes (base64 in JSON).
 */
data: string, } | { "type": "sharded" } & ShardedLayout;

export type ShardedLayout = { 
/**
 * Bytes of the part per erasure-coded block.
 */
blockBytes: number, 
/**
 * k: data shards.
 */
dataShards: number, 
/**
 * m: parity shards.
 */
parityShards: number, 
/**
 * Bytes per checksummed chunk of a shard file; a multiple of 64.
 */
chunkBytes: number, 
/**
 * Unique id of this part's shard files: node object key = "<storage_id>/<shard index>".
 */
storageId: string, 
/**
 * Node id holding shard file i; exactly k + m entries.
 */
placement: Array<string>, 
/**
 * Per-part S3 checksums (for COMPOSITE multipart).
 */
partChecksums: Array<ObjectChecksum>, };

export type ObjectChecksum = { 
/**
 * "CRC32", "CRC32C", "CRC64NVME", "SHA1" or "SHA256".
 */
algorithm: string, 
/**
 * Whether it covers the bytes directly or is a checksum of part checksums.
 */
kind: ChecksumKind, 
/**
 * Raw digest bytes (base64 in JSON, as in the x-amz-checksum-* header).
 */
value: string, };

export type ChecksumKind = "FULL_OBJECT" | "COMPOSITE";

export type Encryption = { 
/**
 * Whose key: the gateway's (SSE-S3) or the client's (SSE-C).
 */
mode: EncryptionMode, 
/**
 * Plaintext bytes per segment (the last one may be shorter).
 */
segmentBytes: number, 
/**
 * SSE-S3: the object's data key sealed under the master key. SSE-C: the salt the object key
 * is derived with from the customer's key. Base64.
 */
key: string, 
/**
 * SSE-C: an HMAC of the customer's key that tells a wrong key from the right one (base64);
 * empty for SSE-S3.
 */
keyCheck: string, 
/**
 * Per part, in order: the random salt its key is derived with (base64), so that no two
 * writes, a retried part included, ever encrypt under the same key and nonce.
 */
partSalts: Array<string>, };

export type EncryptionMode = "SSE-S3" | "SSE-C";
