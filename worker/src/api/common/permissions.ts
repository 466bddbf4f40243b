// Who may do what (docs/access.md): the one table from each S3 operation to the right it needs and
// the action a bucket policy names it by (PERMISSIONS), and the check every request passes after
// authentication. The root key may do everything; another key has, per bucket, any of read, write
// and owner, and may be allowed to create buckets; a bucket policy can allow more (to keys or to
// everyone) and deny, per object where the operation acts on one.
import { allowsSomewhere, type BucketPolicy, evaluatePolicy, type PolicyAction, resourceOf } from "../../auth/policy";
import { S3Error } from "../../s3-error";
import type { Principal } from "../../services/access-keys";
import { parseCopySource } from "./copy-source";
import type { Endpoint } from "./router";

/**
 * What an operation needs: a right on its bucket (read, write, owner); to create a bucket; nothing
 * beyond a valid key (listing buckets shows only those the key has a right on; a 501 needs no
 * right); or the root key (metrics, the admin API).
 */
export type Need = Right | "createBucket" | "anyKey" | "root";

export type Right = "read" | "write" | "owner";

/** One check: the right that lets a key through by its grants, or a policy's Allow of the action. */
export interface Check<N extends Need = Right> {
  need: N;
  /** The action a bucket policy names it by (null: no policy applies). */
  action: PolicyAction | null;
  /** The action instead when the request names a version (`?versionId`; a DeleteObjects entry's VersionId). */
  versioned?: PolicyAction;
}

export interface Permission extends Check<Need> {
  /** A copy's source, checked on the source object in its own bucket (versioned: the copy source names a versionId). */
  source?: Check;
  /** The operation evaluates each object it acts on (DeleteObjects: every key of the batch, as S3 does). */
  perKey?: true;
  /** What `x-amz-bypass-governance-retention: true` takes, per object (api/common/object-lock-headers.ts). */
  bypass?: Check;
  /** What a write's headers take besides, when present: tags, a lock set on upload (as S3 asks). */
  headers?: readonly HeaderCheck[];
}

/** Headers that make a write do what another action names, and that action's check. */
export interface HeaderCheck {
  names: readonly string[];
  check: Check;
}

/** A copy reads its source as a GET would. */
const READ_SOURCE: Check = { need: "read", action: "s3:GetObject", versioned: "s3:GetObjectVersion" };
/**
 * A copy that keeps its source's tags (tagging directive COPY) reads them as GetObjectTagging does
 * and writes them as PutObjectTagging does: a policy denying either refuses it.
 */
export const COPY_TAGS: { source: Check; target: Check } = {
  source: { need: "read", action: "s3:GetObjectTagging", versioned: "s3:GetObjectVersionTagging" },
  target: { need: "write", action: "s3:PutObjectTagging" },
};
/** S3's s3:BypassGovernanceRetention; by grants, the owner right (which the root key has). */
export const BYPASS_GOVERNANCE: Check = { need: "owner", action: "s3:BypassGovernanceRetention" };

/**
 * A write that tags or locks what it writes does what PutObjectTagging, PutObjectRetention and
 * PutObjectLegalHold do: a policy denying those refuses it (ACL headers need nothing more: only
 * owner-only ACLs exist, api/common/acl-policy.ts).
 */
const WRITE_HEADERS: readonly HeaderCheck[] = [
  { names: ["x-amz-tagging"], check: { need: "write", action: "s3:PutObjectTagging" } },
  { names: ["x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date"], check: { need: "write", action: "s3:PutObjectRetention" } },
  { names: ["x-amz-object-lock-legal-hold"], check: { need: "write", action: "s3:PutObjectLegalHold" } },
];

/** The one table: every operation, what it needs, and what a policy calls it. */
export const PERMISSIONS: Record<Endpoint["op"], Permission> = {
  ListBuckets: { need: "anyKey", action: null },
  GetSessionToken: { need: "anyKey", action: null }, // temporary credentials with the signing key's own rights (api/s3/sts.ts)
  CreateBucket: { need: "createBucket", action: null },
  HeadBucket: { need: "read", action: "s3:ListBucket" },
  DeleteBucket: { need: "owner", action: "s3:DeleteBucket" },
  GetBucketLocation: { need: "read", action: "s3:GetBucketLocation" },
  GetBucketVersioning: { need: "read", action: "s3:GetBucketVersioning" },
  PutBucketVersioning: { need: "owner", action: "s3:PutBucketVersioning" },
  ListObjectsV2: { need: "read", action: "s3:ListBucket" },
  ListObjects: { need: "read", action: "s3:ListBucket" },
  ListObjectVersions: { need: "read", action: "s3:ListBucketVersions" },
  GetObject: { need: "read", action: "s3:GetObject", versioned: "s3:GetObjectVersion" },
  HeadObject: { need: "read", action: "s3:GetObject", versioned: "s3:GetObjectVersion" },
  PutObject: { need: "write", action: "s3:PutObject", headers: WRITE_HEADERS },
  PostObject: { need: "write", action: "s3:PutObject" }, // checked by the operation, with the key that signed the form
  DeleteObject: { need: "write", action: "s3:DeleteObject", versioned: "s3:DeleteObjectVersion", bypass: BYPASS_GOVERNANCE },
  DeleteObjects: { need: "write", action: "s3:DeleteObject", versioned: "s3:DeleteObjectVersion", perKey: true, bypass: BYPASS_GOVERNANCE },
  CopyObject: { need: "write", action: "s3:PutObject", source: READ_SOURCE, headers: WRITE_HEADERS },
  GetObjectAttributes: { need: "read", action: "s3:GetObjectAttributes", versioned: "s3:GetObjectVersionAttributes" },
  CreateMultipartUpload: { need: "write", action: "s3:PutObject", headers: WRITE_HEADERS },
  UploadPart: { need: "write", action: "s3:PutObject" },
  UploadPartCopy: { need: "write", action: "s3:PutObject", source: READ_SOURCE },
  CompleteMultipartUpload: { need: "write", action: "s3:PutObject" },
  AbortMultipartUpload: { need: "write", action: "s3:AbortMultipartUpload" },
  ListParts: { need: "write", action: "s3:ListMultipartUploadParts" },
  ListMultipartUploads: { need: "write", action: "s3:ListBucketMultipartUploads" },
  GetObjectTagging: { need: "read", action: "s3:GetObjectTagging", versioned: "s3:GetObjectVersionTagging" },
  PutObjectTagging: { need: "write", action: "s3:PutObjectTagging", versioned: "s3:PutObjectVersionTagging" },
  DeleteObjectTagging: { need: "write", action: "s3:DeleteObjectTagging", versioned: "s3:DeleteObjectVersionTagging" },
  GetBucketTagging: { need: "read", action: "s3:GetBucketTagging" },
  PutBucketTagging: { need: "owner", action: "s3:PutBucketTagging" },
  DeleteBucketTagging: { need: "owner", action: "s3:PutBucketTagging" },
  GetBucketLifecycleConfiguration: { need: "read", action: "s3:GetLifecycleConfiguration" },
  PutBucketLifecycleConfiguration: { need: "owner", action: "s3:PutLifecycleConfiguration" },
  DeleteBucketLifecycle: { need: "owner", action: "s3:PutLifecycleConfiguration" },
  GetObjectLockConfiguration: { need: "read", action: "s3:GetBucketObjectLockConfiguration" },
  PutObjectLockConfiguration: { need: "owner", action: "s3:PutBucketObjectLockConfiguration" },
  GetObjectRetention: { need: "read", action: "s3:GetObjectRetention" },
  PutObjectRetention: { need: "write", action: "s3:PutObjectRetention", bypass: BYPASS_GOVERNANCE },
  GetObjectLegalHold: { need: "read", action: "s3:GetObjectLegalHold" },
  PutObjectLegalHold: { need: "write", action: "s3:PutObjectLegalHold" },
  GetBucketAcl: { need: "read", action: "s3:GetBucketAcl" },
  PutBucketAcl: { need: "owner", action: "s3:PutBucketAcl" },
  GetObjectAcl: { need: "read", action: "s3:GetObjectAcl", versioned: "s3:GetObjectVersionAcl" },
  PutObjectAcl: { need: "write", action: "s3:PutObjectAcl", versioned: "s3:PutObjectVersionAcl" },
  GetBucketCors: { need: "read", action: "s3:GetBucketCORS" },
  PutBucketCors: { need: "owner", action: "s3:PutBucketCORS" },
  DeleteBucketCors: { need: "owner", action: "s3:PutBucketCORS" },
  GetBucketEncryption: { need: "read", action: "s3:GetEncryptionConfiguration" },
  PutBucketEncryption: { need: "owner", action: "s3:PutEncryptionConfiguration" },
  DeleteBucketEncryption: { need: "owner", action: "s3:PutEncryptionConfiguration" },
  GetBucketPolicy: { need: "owner", action: "s3:GetBucketPolicy" },
  PutBucketPolicy: { need: "owner", action: "s3:PutBucketPolicy" },
  DeleteBucketPolicy: { need: "owner", action: "s3:DeleteBucketPolicy" },
  GetBucketPolicyStatus: { need: "owner", action: "s3:GetBucketPolicyStatus" },
  PreflightCors: { need: "anyKey", action: null }, // answered before authentication, from the bucket's CORS rules
  CreateDirectUpload: { need: "write", action: "s3:PutObject" },
  CompleteDirectUpload: { need: "write", action: "s3:PutObject" },
  AbortDirectUpload: { need: "write", action: "s3:AbortMultipartUpload" },
  GetReadPlan: { need: "read", action: "s3:GetObject", versioned: "s3:GetObjectVersion" },
  TransferShard: { need: "anyKey", action: null }, // authorized by the grant in its URL alone (services/direct-shards.ts)
  GetMetrics: { need: "root", action: null },
  Admin: { need: "root", action: null },
  NotImplemented: { need: "anyKey", action: null },
};

/** The right (or other need) of each operation, from PERMISSIONS. */
export const NEEDS = Object.fromEntries(Object.entries(PERMISSIONS).map(([op, p]) => [op, p.need])) as Record<Endpoint["op"], Need>;

const denied = () => new S3Error("AccessDenied", "Access Denied");

/** Whether `principal` holds `right` on `bucket` by its grants (the root key holds every right). */
export function holds(principal: Principal, bucket: string, right: Right): boolean {
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

const requester = (principal: Principal) => (principal.kind === "key" ? principal.keyId : null);

/**
 * Whether `principal` may do `action` on `bucket` (and `key`): a Deny of the bucket's policy
 * refuses whatever the grants say; otherwise the key's right, or an Allow of the policy, lets it.
 */
export async function permitted(
  principal: Principal,
  right: Right,
  action: PolicyAction | null,
  bucket: string,
  key: string | null,
  policyOf: PolicyLookup,
): Promise<boolean> {
  if (principal.kind === "root") return true;
  const verdict = action === null ? "silent" : evaluatePolicy(await policyOf(bucket), requester(principal), action, resourceOf(bucket, key));
  if (verdict === "deny") return false;
  return holds(principal, bucket, right) || verdict === "allow";
}

/** Whether `principal` passes `check` on `bucket` (and `key`), naming a version or not. */
export function passes(principal: Principal, check: Check, bucket: string, key: string | null, versioned: boolean, policyOf: PolicyLookup): Promise<boolean> {
  return permitted(principal, check.need, (versioned && check.versioned) || check.action, bucket, key, policyOf);
}

/**
 * Throws AccessDenied unless `principal` may do `endpoint`, with the request's `headers` (a copy's
 * source) and `query` (`versionId`: the version-specific action). An operation evaluated per key
 * (DeleteObjects) is let in here by the right or by an Allow of its action anywhere in the policy,
 * and checks each key itself (objectPermitted).
 */
export async function authorize(
  principal: Principal,
  endpoint: Endpoint,
  headers: Headers,
  policyOf: PolicyLookup,
  query: URLSearchParams = new URLSearchParams(),
): Promise<void> {
  if (principal.kind === "root") return;
  const permission = PERMISSIONS[endpoint.op];
  const need = permission.need;
  switch (need) {
    case "anyKey":
      if (principal.kind === "anonymous") throw denied();
      return;
    case "root":
      throw denied();
    case "createBucket":
      if (principal.kind !== "key" || !principal.createBucket) throw denied();
      return;
  }
  if (!("bucket" in endpoint)) throw denied();
  const check = { ...permission, need };
  if (permission.perKey) {
    const actions = [check.action, check.versioned].filter((a): a is PolicyAction => a !== null && a !== undefined);
    if (!holds(principal, endpoint.bucket, need) && !allowsSomewhere(await policyOf(endpoint.bucket), requester(principal), actions)) throw denied();
  } else {
    const key = "key" in endpoint ? endpoint.key : null;
    if (!(await passes(principal, check, endpoint.bucket, key, query.has("versionId"), policyOf))) throw denied();
  }
  for (const extra of permission.headers ?? []) {
    if (!extra.names.some((name) => headers.has(name))) continue;
    if (!(await passes(principal, extra.check, endpoint.bucket, "key" in endpoint ? endpoint.key : null, false, policyOf))) throw denied();
  }
  const header = permission.source ? headers.get("x-amz-copy-source") : null;
  if (permission.source && header !== null) {
    const source = parseCopySource(header);
    if (!(await passes(principal, permission.source, source.bucket, source.key, source.versionId !== undefined, policyOf))) throw denied();
  }
}

/**
 * Whether `principal` may do `op` on one object of `bucket` (a DeleteObjects entry, `versioned`
 * when it names a version): the operation's own check, evaluated on `bucket/key`.
 */
export function objectPermitted(
  principal: Principal,
  op: Endpoint["op"],
  bucket: string,
  key: string,
  versioned: boolean,
  policyOf: PolicyLookup,
): Promise<boolean> {
  const { need, action, versioned: versionAction } = PERMISSIONS[op];
  if (need !== "read" && need !== "write" && need !== "owner") return Promise.resolve(false);
  return passes(principal, { need, action, versioned: versionAction }, bucket, key, versioned, policyOf);
}
