// Who may do what (docs/access.md): the shape of an operation's permission (the right it needs and
// the action a bucket policy names it by, declared with each operation in api/operations.ts), and
// the check every request passes after authentication. The root key may do everything; another key has, per bucket, any of read, write
// and owner, and may be allowed to create buckets; a bucket policy can allow more (to keys or to
// everyone) and deny, per object where the operation acts on one.
import { allowsSomewhere, type BucketPolicy, evaluatePolicy, type PolicyAction, resourceOf } from "../../auth/policy";
import { S3Error } from "../../s3-error";
import type { Principal } from "../../services/access-keys";
import { REPLICA_HEADER } from "../../meta/replication-rules";
import { parseCopySource } from "../format/copy-source";

/**
 * What an operation needs: a right on its bucket (read, write, owner); to create a bucket; nothing
 * beyond a valid key (listing buckets shows only those the key has a right on; a 501 needs no
 * right); or the root key (metrics, the admin API).
 */
export type Need = Right | "createBucket" | "anyKey" | "root";

/** A right a key's grants give on a bucket; "none": no grant gives it (the root key has it, and a policy's Allow of its action when it has one). */
export type Right = "read" | "write" | "owner" | "none";

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
  /** What `x-amz-bypass-governance-retention: true` takes, per object (api/format/object-lock-headers.ts). */
  bypass?: Check;
  /** What a write's headers take besides, when present: tags, a lock set on upload (as S3 asks). */
  headers?: readonly HeaderCheck[];
}

/** Headers that make a write do what another action names, and that action's check. */
export interface HeaderCheck {
  names: readonly string[];
  check: Check;
  /** What they make outlasts temporary credentials (a retention, the replica mark): refused to them (api/operations.ts sessionsMay). */
  refusedToSessions?: true;
}

/** Reading an object (GET, HEAD, a read plan; a copy reads its source so). */
export const READ_OBJECT: Check = { need: "read", action: "s3:GetObject", versioned: "s3:GetObjectVersion" };
/** Writing an object (PUT, a copy's target, multipart, the direct path's sessions and forms). */
export const WRITE_OBJECT: Check = { need: "write", action: "s3:PutObject" };
/** Deleting an object or a version (DeleteObject, and each key of a DeleteObjects). */
export const DELETE_OBJECT: Check = { need: "write", action: "s3:DeleteObject", versioned: "s3:DeleteObjectVersion" };
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
 * owner-only ACLs exist, api/format/acls.ts).
 */
export const WRITE_OBJECT_HEADERS: readonly HeaderCheck[] = [
  { names: ["x-amz-tagging"], check: { need: "write", action: "s3:PutObjectTagging" } },
  {
    names: ["x-amz-object-lock-mode", "x-amz-object-lock-retain-until-date"],
    check: { need: "write", action: "s3:PutObjectRetention" },
    refusedToSessions: true,
  },
  { names: ["x-amz-object-lock-legal-hold"], check: { need: "write", action: "s3:PutObjectLegalHold" } },
];

/**
 * If-Match on a write learns the object's ETag (and whether it exists): S3 asks for s3:GetObject
 * besides, by grants the read right. If-None-Match: * needs nothing more, as in S3.
 */
export const IF_MATCH_READS: HeaderCheck = { names: ["if-match"], check: { need: "read", action: "s3:GetObject" } };

/** A PUT's and a copy's headers: those of WRITE_OBJECT_HEADERS, and If-Match. */
export const CONDITIONAL_WRITE_HEADERS: readonly HeaderCheck[] = [...WRITE_OBJECT_HEADERS, IF_MATCH_READS];

/**
 * A write or delete that says it is another gateway's replica (REPLICA_HEADER) is never replicated
 * again, so the mark is the root key's alone: no grant and no bucket policy gives it (an owner
 * writes its bucket's policy, and an `s3:*` Allow would give it to anyone), else a bucket's writes
 * could opt out of the replication the root key set. The header must be signed (auth/sigv4.ts;
 * SigV2 refuses it), and an anonymous request never passes.
 */
export const REPLICA_MARK: HeaderCheck = { names: [REPLICA_HEADER], check: { need: "none", action: null }, refusedToSessions: true };

const denied = () => new S3Error("AccessDenied", "Access Denied");

/** Whether `principal` holds `right` on `bucket` by its grants (the root key holds every right). */
export function holds(principal: Principal, bucket: string, right: Right): boolean {
  if (principal.kind === "root") return true;
  if (principal.kind === "anonymous" || right === "none") return false;
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

/** Where an operation acts, as authorization sees it. */
export interface Acting {
  bucket: string | null;
  key: string | null;
}

/**
 * Throws AccessDenied unless `principal` has `permission` on `at`, with the request's `headers` (a
 * copy's source, a write's tags and lock) and `query` (`versionId`: the version-specific action). An
 * operation evaluated per key (DeleteObjects) is let in here by the right or by an Allow of its
 * action anywhere in the policy, and checks each key itself (`passes` with DELETE_OBJECT).
 */
export async function authorize(
  principal: Principal,
  permission: Permission,
  at: Acting,
  headers: Headers,
  policyOf: PolicyLookup,
  query: URLSearchParams = new URLSearchParams(),
): Promise<void> {
  if (principal.kind === "root") return;
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
  const { bucket, key } = at;
  if (bucket === null) throw denied();
  const check = { ...permission, need };
  if (permission.perKey) {
    const actions = [check.action, check.versioned].filter((a): a is PolicyAction => a !== null && a !== undefined);
    if (!holds(principal, bucket, need) && !allowsSomewhere(await policyOf(bucket), requester(principal), actions)) throw denied();
  } else if (!(await passes(principal, check, bucket, key, query.has("versionId"), policyOf))) throw denied();
  for (const extra of permission.headers ?? []) {
    if (!extra.names.some((name) => headers.has(name))) continue;
    if (!(await passes(principal, extra.check, bucket, key, false, policyOf))) throw denied();
  }
  const header = permission.source ? headers.get("x-amz-copy-source") : null;
  if (permission.source && header !== null) {
    const source = parseCopySource(header);
    if (!(await passes(principal, permission.source, source.bucket, source.key, source.versionId !== undefined, policyOf))) throw denied();
  }
}
