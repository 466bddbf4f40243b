// Who may do what (docs/access.md): the one table from each S3 operation to the right it needs and
// the action a bucket policy names it by, and the check every request passes after authentication.
// The root key may do everything; another key has, per bucket, any of read, write and owner, and may
// be allowed to create buckets; a bucket policy can allow more (to keys or to everyone) and deny.
import { type BucketPolicy, evaluatePolicy, type PolicyAction, resourceOf } from "../auth/policy";
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
  PostObject: "write", // checked by the operation, with the key that signed the form
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
  GetBucketEncryption: "read",
  PutBucketEncryption: "owner",
  DeleteBucketEncryption: "owner",
  GetBucketPolicy: "owner",
  PutBucketPolicy: "owner",
  DeleteBucketPolicy: "owner",
  GetBucketPolicyStatus: "owner",
  PreflightCors: "anyKey", // answered before authentication, from the bucket's CORS rules
  CreateDirectUpload: "write",
  CompleteDirectUpload: "write",
  AbortDirectUpload: "write",
  GetReadPlan: "read",
  TransferShard: "anyKey", // authorized by the grant in its URL alone (services/direct-shards.ts)
  GetMetrics: "root",
  Admin: "root",
  NotImplemented: "anyKey",
};

/** The action a bucket policy names each operation on a bucket by (null: no policy applies). */
export const ACTIONS: Record<Endpoint["op"], PolicyAction | null> = {
  ListBuckets: null,
  CreateBucket: null,
  HeadBucket: "s3:ListBucket",
  DeleteBucket: "s3:DeleteBucket",
  GetBucketLocation: "s3:GetBucketLocation",
  GetBucketVersioning: "s3:GetBucketVersioning",
  PutBucketVersioning: "s3:PutBucketVersioning",
  ListObjectsV2: "s3:ListBucket",
  ListObjects: "s3:ListBucket",
  ListObjectVersions: "s3:ListBucketVersions",
  GetObject: "s3:GetObject",
  HeadObject: "s3:GetObject",
  PutObject: "s3:PutObject",
  PostObject: "s3:PutObject",
  DeleteObject: "s3:DeleteObject",
  DeleteObjects: "s3:DeleteObject",
  CopyObject: "s3:PutObject",
  GetObjectAttributes: "s3:GetObjectAttributes",
  CreateMultipartUpload: "s3:PutObject",
  UploadPart: "s3:PutObject",
  UploadPartCopy: "s3:PutObject",
  CompleteMultipartUpload: "s3:PutObject",
  AbortMultipartUpload: "s3:AbortMultipartUpload",
  ListParts: "s3:ListMultipartUploadParts",
  ListMultipartUploads: "s3:ListBucketMultipartUploads",
  GetObjectTagging: "s3:GetObjectTagging",
  PutObjectTagging: "s3:PutObjectTagging",
  DeleteObjectTagging: "s3:DeleteObjectTagging",
  GetBucketTagging: "s3:GetBucketTagging",
  PutBucketTagging: "s3:PutBucketTagging",
  DeleteBucketTagging: "s3:PutBucketTagging",
  GetBucketLifecycleConfiguration: "s3:GetLifecycleConfiguration",
  PutBucketLifecycleConfiguration: "s3:PutLifecycleConfiguration",
  DeleteBucketLifecycle: "s3:PutLifecycleConfiguration",
  GetObjectLockConfiguration: "s3:GetBucketObjectLockConfiguration",
  PutObjectLockConfiguration: "s3:PutBucketObjectLockConfiguration",
  GetObjectRetention: "s3:GetObjectRetention",
  PutObjectRetention: "s3:PutObjectRetention",
  GetObjectLegalHold: "s3:GetObjectLegalHold",
  PutObjectLegalHold: "s3:PutObjectLegalHold",
  GetBucketAcl: "s3:GetBucketAcl",
  PutBucketAcl: "s3:PutBucketAcl",
  GetObjectAcl: "s3:GetObjectAcl",
  PutObjectAcl: "s3:PutObjectAcl",
  GetBucketCors: "s3:GetBucketCORS",
  PutBucketCors: "s3:PutBucketCORS",
  DeleteBucketCors: "s3:PutBucketCORS",
  GetBucketEncryption: "s3:GetEncryptionConfiguration",
  PutBucketEncryption: "s3:PutEncryptionConfiguration",
  DeleteBucketEncryption: "s3:PutEncryptionConfiguration",
  GetBucketPolicy: "s3:GetBucketPolicy",
  PutBucketPolicy: "s3:PutBucketPolicy",
  DeleteBucketPolicy: "s3:DeleteBucketPolicy",
  GetBucketPolicyStatus: "s3:GetBucketPolicyStatus",
  PreflightCors: null,
  CreateDirectUpload: "s3:PutObject",
  CompleteDirectUpload: "s3:PutObject",
  AbortDirectUpload: "s3:AbortMultipartUpload",
  GetReadPlan: "s3:GetObject",
  TransferShard: null,
  GetMetrics: null,
  Admin: null,
  NotImplemented: null,
};

const denied = () => new S3Error("AccessDenied", "Access Denied");

/** Whether `principal` holds `right` on `bucket` by its grants (the root key holds every right). */
export function holds(principal: Principal, bucket: string, right: "read" | "write" | "owner"): boolean {
  if (principal.kind === "root") return true;
  if (principal.kind === "anonymous") return false;
  return principal.grants.get(bucket)?.[right] === true;
}

/** Whether `principal` may see `bucket` at all (in ListBuckets): any right on it. */
export function sees(principal: Principal, bucket: string): boolean {
  return holds(principal, bucket, "read") || holds(principal, bucket, "write") || holds(principal, bucket, "owner");
}

/** Where authorization reads a bucket's policy from (services/bucket-policy.ts, cached). */
export type PolicyLookup = (bucket: string) => Promise<BucketPolicy | null>;

/**
 * Whether `principal` may do `action` on `bucket` (and `key`): a Deny of the bucket's policy
 * refuses whatever the grants say; otherwise the key's right, or an Allow of the policy, lets it.
 */
async function permitted(
  principal: Principal,
  right: "read" | "write" | "owner",
  action: PolicyAction | null,
  bucket: string,
  key: string | null,
  policyOf: PolicyLookup,
): Promise<boolean> {
  if (principal.kind === "root") return true;
  const verdict =
    action === null ? "silent" : evaluatePolicy(await policyOf(bucket), principal.kind === "key" ? principal.keyId : null, action, resourceOf(bucket, key));
  if (verdict === "deny") return false;
  return holds(principal, bucket, right) || verdict === "allow";
}

/** Throws AccessDenied unless `principal` may do `endpoint` (with `headers`, for a copy's source). */
export async function authorize(principal: Principal, endpoint: Endpoint, headers: Headers, policyOf: PolicyLookup): Promise<void> {
  if (principal.kind === "root") return;
  const need = NEEDS[endpoint.op];
  switch (need) {
    case "anyKey":
      if (principal.kind === "anonymous") throw denied();
      return;
    case "root":
      throw denied();
    case "createBucket":
      if (principal.kind !== "key" || !principal.createBucket) throw denied();
      return;
    default: {
      if (!("bucket" in endpoint)) throw denied();
      const key = "key" in endpoint ? endpoint.key : null;
      if (!(await permitted(principal, need, ACTIONS[endpoint.op], endpoint.bucket, key, policyOf))) throw denied();
    }
  }
  if (endpoint.op === "CopyObject" || endpoint.op === "UploadPartCopy") {
    const header = headers.get("x-amz-copy-source");
    if (header === null) return;
    const source = parseCopySource(header);
    if (!(await permitted(principal, "read", "s3:GetObject", source.bucket, source.key, policyOf))) throw denied();
  }
}
