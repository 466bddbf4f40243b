// What the metadata Durable Objects store and answer. The manifest itself is the core's binary
// encoding (core/src/manifest.rs): the index keeps it in one piece, next to the few fields listing
// needs, so a GET is one metadata call.

/** One object version as the index holds it. */
export interface ObjectRecord {
  key: string;
  size: number;
  /** Without quotes. */
  etag: string;
  /** Milliseconds since the epoch. */
  lastModified: number;
  /** The core's binary manifest (Core.encodeManifest). */
  manifest: Uint8Array;
}

/** What a listing returns per object. */
export type ObjectSummary = Omit<ObjectRecord, "manifest">;

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
  /** Only if the current object's ETag is this (If-Match), without quotes. */
  ifMatch?: string;
}

export type PutResult =
  | { ok: true; previous: ObjectRecord | null }
  | { ok: false; reason: "NoSuchBucket" | "PreconditionFailed" };

export interface BucketInfo {
  name: string;
  /** Milliseconds since the epoch. */
  created: number;
}
