// Bucket policies, the subset people use (docs/access.md): statements that Allow or Deny actions
// (`s3:GetObject`, `s3:*`, `s3:Get*` …) on the bucket (`arn:aws:s3:::bucket`, `arn:aws:s3:::*`) or
// its objects (`arn:aws:s3:::bucket/prefix*`) to everyone (`*`) or to access keys by id. Parsing
// refuses what it cannot enforce (conditions, NotAction, other buckets) with the reason, rather
// than ignore it, and what would make evaluation costly (POLICY_LIMITS); patterns are compiled
// once, then matched in linear time (auth/wildcard.ts). Pure functions: no I/O.
import { S3Error } from "../s3-error";
import { compileWildcard, type Wildcard, wildcardMatch } from "./wildcard";

export interface PolicyStatement {
  sid: string | null;
  effect: "Allow" | "Deny";
  /** "*" for everyone, else access key ids. */
  principals: "*" | ReadonlySet<string>;
  /** The actions its patterns (`s3:GetObject`, `s3:Get*`, `s3:*` …) name, resolved when parsed. */
  actions: ReadonlySet<PolicyAction>;
  /** Resource patterns without `arn:aws:s3:::` (`bucket`, `bucket/prefix*`), `*` and `?` as wildcards. */
  resources: Wildcard[];
}

export interface BucketPolicy {
  statements: PolicyStatement[];
}

/** Who asks: an access key's id, or nobody (an anonymous request). */
export type Requester = string | null;

/**
 * Every action a policy may name: S3's names, each enforced by the operations that the table of
 * api/operations.ts (OPERATIONS, each entry's permission) maps to it; a name no operation checks is not here, so a policy
 * naming it is refused rather than silently unenforced.
 */
export const POLICY_ACTIONS = [
  "s3:GetObject",
  "s3:PutObject",
  "s3:DeleteObject",
  "s3:ListBucket",
  "s3:ListBucketVersions",
  "s3:ListBucketMultipartUploads",
  "s3:ListMultipartUploadParts",
  "s3:AbortMultipartUpload",
  "s3:GetObjectVersion",
  "s3:DeleteObjectVersion",
  "s3:GetObjectTagging",
  "s3:GetObjectVersionTagging",
  "s3:PutObjectTagging",
  "s3:PutObjectVersionTagging",
  "s3:DeleteObjectTagging",
  "s3:DeleteObjectVersionTagging",
  "s3:GetObjectAttributes",
  "s3:GetObjectVersionAttributes",
  "s3:GetObjectAcl",
  "s3:GetObjectVersionAcl",
  "s3:PutObjectAcl",
  "s3:PutObjectVersionAcl",
  "s3:GetObjectRetention",
  "s3:PutObjectRetention",
  "s3:GetObjectLegalHold",
  "s3:PutObjectLegalHold",
  "s3:GetBucketLocation",
  "s3:GetBucketVersioning",
  "s3:PutBucketVersioning",
  "s3:GetBucketTagging",
  "s3:PutBucketTagging",
  "s3:GetLifecycleConfiguration",
  "s3:PutLifecycleConfiguration",
  "s3:GetBucketObjectLockConfiguration",
  "s3:PutBucketObjectLockConfiguration",
  "s3:GetBucketAcl",
  "s3:PutBucketAcl",
  "s3:GetBucketOwnershipControls",
  "s3:PutBucketOwnershipControls",
  "s3:GetBucketCORS",
  "s3:PutBucketCORS",
  "s3:GetEncryptionConfiguration",
  "s3:PutEncryptionConfiguration",
  "s3:GetBucketPolicy",
  "s3:PutBucketPolicy",
  "s3:DeleteBucketPolicy",
  "s3:GetBucketPolicyStatus",
  "s3:DeleteBucket",
  "s3:BypassGovernanceRetention",
  "s3:GetBucketWebsite",
  "s3:PutBucketWebsite",
  "s3:DeleteBucketWebsite",
  "s3:GetBucketNotification",
  "s3:PutBucketNotification",
  "s3:GetReplicationConfiguration",
] as const;

export type PolicyAction = (typeof POLICY_ACTIONS)[number];

/** The largest policy S3 takes. */
export const MAX_POLICY_BYTES = 20 * 1024;

/**
 * What a policy may hold, so that evaluating it stays cheap whatever its author wrote (a
 * DeleteObjects evaluates it once per key): beyond these it is MalformedPolicy.
 */
export const POLICY_LIMITS = {
  statements: 100,
  actionsPerStatement: 100,
  resourcesPerStatement: 100,
  /** `*` and `?` in one action or resource pattern. */
  wildcardsPerPattern: 10,
  /** An action pattern's length (the longest name is 35 characters). */
  actionChars: 128,
  /** What a resource pattern says after `arn:aws:s3:::bucket/`, in UTF-8 bytes: a key's limit. */
  keyPatternBytes: 1024,
  /**
   * Scans of a key that evaluating the whole policy may take (Wildcard.scans): each literal piece
   * between two `*`s of a resource pattern. `b/*`, `b/prefix/*`, `b/*.jpg` take none.
   */
  resourceScans: 20,
} as const;

const malformed = (reason: string) => new S3Error("MalformedPolicy", reason);

/** A pattern compiled, or MalformedPolicy when it has too many wildcards. */
function pattern(text: string, what: string): Wildcard {
  const w = compileWildcard(text);
  if (w.wildcards > POLICY_LIMITS.wildcardsPerPattern) {
    throw malformed(`Policy has invalid ${what}: at most ${POLICY_LIMITS.wildcardsPerPattern} wildcards (* and ?) per pattern`);
  }
  return w;
}

const KNOWN_ACTIONS = POLICY_ACTIONS.map((a) => [a.toLowerCase(), a] as const);
const encoder = new TextEncoder();

const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

/** Parses and checks a policy document for `bucket`; throws MalformedPolicy with the reason. */
export function parsePolicy(text: string, bucket: string): BucketPolicy {
  if (encoder.encode(text).length > MAX_POLICY_BYTES) throw malformed(`Policies must be at most ${MAX_POLICY_BYTES} bytes.`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw malformed("This policy contains invalid Json");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw malformed("This policy contains invalid Json");
  const root = doc as Record<string, unknown>;
  for (const field of Object.keys(root)) {
    if (!["Version", "Id", "Statement"].includes(field)) throw malformed(`Unknown field ${field}`);
  }
  if (root.Version !== undefined && root.Version !== "2012-10-17" && root.Version !== "2008-10-17") {
    throw malformed("The policy must contain a valid version string");
  }
  if (root.Statement === undefined) throw malformed("Missing required field Statement");
  const raw = asList(root.Statement);
  if (raw.length === 0) throw malformed("Could not parse the policy: Statement is empty!");
  if (raw.length > POLICY_LIMITS.statements) throw malformed(`Policies may have at most ${POLICY_LIMITS.statements} statements`);
  const statements = raw.map((s) => parseStatement(s, bucket));
  const scans = statements.reduce((n, s) => s.resources.reduce((m, r) => m + r.scans, n), 0);
  if (scans > POLICY_LIMITS.resourceScans) {
    throw malformed(
      `Policy is too costly to evaluate: its resource patterns have ${scans} pieces between two wildcards, at most ${POLICY_LIMITS.resourceScans} are allowed`,
    );
  }
  return { statements };
}

function parseStatement(raw: unknown, bucket: string): PolicyStatement {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw malformed("Statement must be an object");
  const s = raw as Record<string, unknown>;
  for (const field of Object.keys(s)) {
    if (field === "Condition") throw malformed("Conditions are not supported by this gateway");
    if (["NotAction", "NotResource", "NotPrincipal"].includes(field)) throw malformed(`${field} is not supported by this gateway`);
    if (!["Sid", "Effect", "Principal", "Action", "Resource"].includes(field)) throw malformed(`Unknown field ${field}`);
  }
  if (s.Effect !== "Allow" && s.Effect !== "Deny") throw malformed("Invalid effect: Effect must be Allow or Deny");
  if (s.Sid !== undefined && typeof s.Sid !== "string") throw malformed("Sid must be a string");
  return {
    sid: (s.Sid as string | undefined) ?? null,
    effect: s.Effect,
    principals: parsePrincipal(s.Principal),
    actions: parseActions(s.Action),
    resources: parseResources(s.Resource, bucket),
  };
}

function parsePrincipal(raw: unknown): "*" | ReadonlySet<string> {
  if (raw === undefined) throw malformed("Missing required field Principal");
  if (raw === "*") return "*";
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw malformed("Invalid principal in policy");
  const p = raw as Record<string, unknown>;
  if (Object.keys(p).length !== 1 || p.AWS === undefined)
    throw malformed("Invalid principal in policy: only AWS principals (access key ids or *) are supported");
  const ids = asList(p.AWS);
  if (ids.some((id) => typeof id !== "string" || id === "")) throw malformed("Invalid principal in policy");
  if (ids.includes("*")) return "*";
  return new Set(ids as string[]);
}

function parseActions(raw: unknown): ReadonlySet<PolicyAction> {
  if (raw === undefined) throw malformed("Missing required field Action");
  const actions = asList(raw);
  if (actions.length === 0) throw malformed("Missing required field Action");
  if (actions.length > POLICY_LIMITS.actionsPerStatement) throw malformed(`A statement may name at most ${POLICY_LIMITS.actionsPerStatement} actions`);
  const named = new Set<PolicyAction>();
  for (const a of actions) {
    if (typeof a !== "string") throw malformed("Policy has invalid action");
    if (a.length > POLICY_LIMITS.actionChars) throw malformed(`Policy has invalid action: longer than ${POLICY_LIMITS.actionChars} characters`);
    const action = pattern(a === "*" ? "s3:*" : a.toLowerCase(), "action");
    const matched = KNOWN_ACTIONS.filter(([lower]) => wildcardMatch(action, lower));
    if (matched.length === 0) throw malformed(`Policy has invalid action: ${a}`);
    for (const [, known] of matched) named.add(known);
  }
  return named;
}

function parseResources(raw: unknown, bucket: string): Wildcard[] {
  if (raw === undefined) throw malformed("Missing required field Resource");
  const resources = asList(raw);
  if (resources.length === 0) throw malformed("Missing required field Resource");
  if (resources.length > POLICY_LIMITS.resourcesPerStatement) throw malformed(`A statement may name at most ${POLICY_LIMITS.resourcesPerStatement} resources`);
  return resources.map((r) => {
    if (typeof r !== "string" || !r.startsWith("arn:aws:s3:::")) throw malformed("Policy has invalid resource");
    const path = r.slice("arn:aws:s3:::".length);
    // Its bucket part must name this bucket, as S3 requires, wildcards included (`arn:aws:s3:::*`):
    // the policy is only ever evaluated for this bucket's requests, so it grants nothing elsewhere.
    if (!wildcardMatch(pattern(path.split("/", 1)[0] as string, "resource"), bucket)) {
      throw malformed(`Policy has invalid resource: ${r} is not in bucket ${bucket}`);
    }
    const slash = path.indexOf("/");
    if (slash >= 0 && encoder.encode(path.slice(slash + 1)).length > POLICY_LIMITS.keyPatternBytes) {
      throw malformed(`Policy has invalid resource: an object pattern may be at most ${POLICY_LIMITS.keyPatternBytes} bytes after the bucket`);
    }
    return pattern(path, "resource");
  });
}

/** The ARN path (bucket, or bucket/key) a request on `bucket` (and `key`) acts on. */
export function resourceOf(bucket: string, key: string | null): string {
  return key === null ? bucket : `${bucket}/${key}`;
}

const namesBy = (s: PolicyStatement, who: Requester): boolean => s.principals === "*" || (who !== null && s.principals.has(who));

function applies(s: PolicyStatement, who: Requester, action: PolicyAction, resource: string): boolean {
  return namesBy(s, who) && s.actions.has(action) && s.resources.some((r) => wildcardMatch(r, resource));
}

/** What the policy says about `who` doing `action` on `resource`: a Deny wins over any Allow. */
export function evaluatePolicy(policy: BucketPolicy | null, who: Requester, action: PolicyAction, resource: string): "allow" | "deny" | "silent" {
  if (!policy) return "silent";
  let allowed = false;
  for (const s of policy.statements) {
    if (!applies(s, who, action, resource)) continue;
    if (s.effect === "Deny") return "deny";
    allowed = true;
  }
  return allowed ? "allow" : "silent";
}

/**
 * Whether some statement allows `who` one of `actions` on some resource: what lets a batch in
 * before each of its keys is evaluated (DeleteObjects).
 */
export function allowsSomewhere(policy: BucketPolicy | null, who: Requester, actions: readonly PolicyAction[]): boolean {
  return policy?.statements.some((s) => s.effect === "Allow" && namesBy(s, who) && actions.some((a) => s.actions.has(a))) ?? false;
}

/** Whether the policy makes anything public (an Allow to everyone): GetBucketPolicyStatus. */
export function isPublic(policy: BucketPolicy): boolean {
  return policy.statements.some((s) => s.effect === "Allow" && s.principals === "*");
}
