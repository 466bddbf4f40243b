// Who may do what (docs/access.md): the one table from each S3 operation to the right it needs, and
// the check every request passes after authentication. The root key may do everything; another key
// has, per bucket, any of read, write and owner, and may be allowed to create buckets.
import { S3Error } from "../s3-error";
import type { Principal } from "../services/access-keys";
import { parseCopySource } from "./copy-source";
import type { Endpoint } from "./router";

/**
 * What an operation needs: a right on its bucket (read, write, owner); to create a bucket; nothing
 * beyond a valid key (listing buckets shows only those the key has a right on; a 501 needs no
 * right); or the root key (metrics, the admin API).
 */
export type Need = "read" | "write" | "owner" | "createBucket" | "anyKey" | "root";

export const NEEDS: Record<Endpoint["op"], Need> = {
  ListBuckets: "anyKey",
  CreateBucket: "createBucket",
  HeadBucket: "read",
  DeleteBucket: "owner",
  GetBucketLocation: "read",
  GetBucketVersioning: "read",
  PutBucketVersioning: "owner",
  ListObjectsV2: "read",
  ListObjects: "read",
  ListObjectVersions: "read",
  GetObject: "read",
  HeadObject: "read",
  PutObject: "write",
  DeleteObject: "write",
  DeleteObjects: "write",
  CopyObject: "write", // and read on the source's bucket
  GetObjectAttributes: "read",
  CreateMultipartUpload: "write",
  UploadPart: "write",
  UploadPartCopy: "write", // and read on the source's bucket
  CompleteMultipartUpload: "write",
  AbortMultipartUpload: "write",
  ListParts: "write",
  ListMultipartUploads: "write",
  GetObjectTagging: "read",
  PutObjectTagging: "write",
  DeleteObjectTagging: "write",
  GetBucketTagging: "read",
  PutBucketTagging: "owner",
  DeleteBucketTagging: "owner",
  GetBucketLifecycleConfiguration: "read",
  PutBucketLifecycleConfiguration: "owner",
  DeleteBucketLifecycle: "owner",
  GetObjectLockConfiguration: "read",
  PutObjectLockConfiguration: "owner",
  GetObjectRetention: "read",
  PutObjectRetention: "write", // shortening GOVERNANCE retention (a bypass) needs owner too
  GetObjectLegalHold: "read",
  PutObjectLegalHold: "write",
  GetBucketAcl: "read",
  PutBucketAcl: "owner",
  GetObjectAcl: "read",
  PutObjectAcl: "write",
  GetBucketCors: "read",
  PutBucketCors: "owner",
  DeleteBucketCors: "owner",
  PreflightCors: "anyKey", // answered before authentication, from the bucket's CORS rules
  GetMetrics: "root",
  Admin: "root",
  NotImplemented: "anyKey",
};

const denied = () => new S3Error("AccessDenied", "Access Denied");

/** Whether `principal` holds `right` on `bucket`. */
export function holds(principal: Principal, bucket: string, right: "read" | "write" | "owner"): boolean {
  if (principal.kind === "root") return true;
  return principal.grants.get(bucket)?.[right] === true;
}

/** Whether `principal` may see `bucket` at all (in ListBuckets): any right on it. */
export function sees(principal: Principal, bucket: string): boolean {
  return holds(principal, bucket, "read") || holds(principal, bucket, "write") || holds(principal, bucket, "owner");
}

/** Throws AccessDenied unless `principal` may do `endpoint` (with `headers`, for a copy's source). */
export function authorize(principal: Principal, endpoint: Endpoint, headers: Headers): void {
  if (principal.kind === "root") return;
  const need = NEEDS[endpoint.op];
  switch (need) {
    case "anyKey":
      return;
    case "root":
      throw denied();
    case "createBucket":
      if (!principal.createBucket) throw denied();
      return;
    default:
      if (!("bucket" in endpoint) || !holds(principal, endpoint.bucket, need)) throw denied();
  }
  if (endpoint.op === "CopyObject" || endpoint.op === "UploadPartCopy") {
    const source = headers.get("x-amz-copy-source");
    if (source !== null && !holds(principal, parseCopySource(source).bucket, "read")) throw denied();
  }
}
