// The direct path's wire format (docs/direct-path.md): what the gateway and a client that codes
// objects itself (client/, the console) exchange as JSON. One definition for both sides.

/** How a part is erasure-coded: the same four numbers a manifest's sharded layout records. */
export interface DirectGeometry {
  blockBytes: number;
  dataShards: number;
  parityShards: number;
  chunkBytes: number;
}

/** Where one part's shard files go: its storage id and the node of every shard, in shard order. */
export interface DirectPartPlace {
  storageId: string;
  placement: string[];
}

/** One part of an upload session: its bytes of the object, its place, and a URL per shard file. */
export interface DirectUploadPart extends DirectPartPlace {
  /** Object bytes in this part (every part but the last is `partBytes` long). */
  size: number;
  /** Length of each of its shard files, checksums included. */
  shardFileBytes: number;
  /** Where to PUT shard file i (exactly shardFileBytes bytes), relative to the gateway's origin or absolute. */
  urls: string[];
}

/**
 * The answer to a new upload session. "direct": code and send the shard files, then commit.
 * "classic": send the object with PutObject instead (small objects stored in their manifest, or a
 * bucket that encrypts: the gateway must see those bytes).
 */
export type DirectUploadSession =
  | {
      mode: "direct";
      /** The session's ticket: sent back with the commit or the abort. */
      upload: string;
      /** When the shard URLs and the ticket expire (ms since the epoch). */
      expires: number;
      geometry: DirectGeometry;
      partBytes: number;
      parts: DirectUploadPart[];
    }
  | { mode: "classic"; reason: string };

/** What a client asks a session for (POST /bucket/key?shardgate-upload). */
export interface DirectUploadRequest {
  size: number;
}

/** The facts a client computed while coding, sent to commit (POST /bucket/key?shardgate-commit). */
export interface DirectCommit {
  upload: string;
  /** The parts as the session placed them, echoed back (the ticket holds their digest). */
  parts: DirectPartPlace[];
  /** MD5 of every part's bytes, hex: the ETag is made from them as S3 makes it. */
  partMd5s: string[];
  contentType?: string;
  /** x-amz-meta-* values, by name without the prefix. */
  metadata?: Record<string, string>;
}

/** The answer to a commit: as PutObject's. */
export interface DirectCommitted {
  etag: string;
  versionId?: string;
}

/** An abandoned session's shard files removed now (POST /bucket/key?shardgate-abort). */
export interface DirectAbort {
  upload: string;
  parts: DirectPartPlace[];
}

/** One part of a read plan: its layout and a URL per shard file (ranged GETs). */
export interface DirectReadPart extends DirectPartPlace, DirectGeometry {
  size: number;
  urls: string[];
}

/** The answer to GET /bucket/key?shardgate-plan: "classic" when only the gateway can read it. */
export type DirectReadPlan =
  | {
      mode: "direct";
      size: number;
      etag: string;
      lastModified: number;
      contentType: string | null;
      versionId: string | null;
      expires: number;
      parts: DirectReadPart[];
    }
  | { mode: "classic"; reason: string };

/** Where the gateway takes and serves shard files itself: SHARD_PATH + bucket + "/" + a shard ticket. */
export const SHARD_PATH = "/_shardgate/shards/";
