// Bucket policies, the subset people use (docs/access.md): statements that Allow or Deny actions
// (`s3:GetObject`, `s3:*`, `s3:Get*` …) on the bucket (`arn:aws:s3:::bucket`) or its objects
// (`arn:aws:s3:::bucket/prefix*`) to everyone (`*`) or to access keys by id. Parsing refuses what
// it cannot enforce (conditions, NotAction, other buckets) with the reason, rather than ignore it.
// Pure functions: no I/O.
import { S3Error } from "../s3-error";

export interface PolicyStatement {
  sid: string | null;
  effect: "Allow" | "Deny";
  /** "*" for everyone, else access key ids. */
  principals: "*" | string[];
  /** Action patterns, lower-cased (`s3:getobject`, `s3:*`). */
  actions: string[];
  /** Resource patterns: the bucket ARN or object ARNs, `*` and `?` as wildcards. */
  resources: string[];
}

export interface BucketPolicy {
  statements: PolicyStatement[];
}

/** Who asks: an access key's id, or nobody (an anonymous request). */
export type Requester = string | null;

/** Every action a policy may name (S3's names, as the permissions table maps operations to them). */
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
  "s3:PutObjectTagging",
  "s3:DeleteObjectTagging",
  "s3:GetObjectAttributes",
  "s3:GetObjectAcl",
  "s3:PutObjectAcl",
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
] as const;

export type PolicyAction = (typeof POLICY_ACTIONS)[number];

/** The largest policy S3 takes. */
export const MAX_POLICY_BYTES = 20 * 1024;

const malformed = (reason: string) => new S3Error("MalformedPolicy", reason);

/** `*` and `?` as in IAM: any run of characters, one character; everything else literal. */
function globMatch(pattern: string, value: string): boolean {
  const re = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")
      .replace(/\?/g, ".")}$`,
    "s",
  );
  return re.test(value);
}

const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

/** Parses and checks a policy document for `bucket`; throws MalformedPolicy with the reason. */
export function parsePolicy(text: string, bucket: string): BucketPolicy {
  if (new TextEncoder().encode(text).length > MAX_POLICY_BYTES) throw malformed(`Policies must be at most ${MAX_POLICY_BYTES} bytes.`);
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
  const statements = asList(root.Statement).map((s) => parseStatement(s, bucket));
  if (statements.length === 0) throw malformed("Could not parse the policy: Statement is empty!");
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

function parsePrincipal(raw: unknown): "*" | string[] {
  if (raw === undefined) throw malformed("Missing required field Principal");
  if (raw === "*") return "*";
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw malformed("Invalid principal in policy");
  const p = raw as Record<string, unknown>;
  if (Object.keys(p).length !== 1 || p.AWS === undefined)
    throw malformed("Invalid principal in policy: only AWS principals (access key ids or *) are supported");
  const ids = asList(p.AWS);
  if (ids.some((id) => typeof id !== "string" || id === "")) throw malformed("Invalid principal in policy");
  if (ids.includes("*")) return "*";
  return ids as string[];
}

function parseActions(raw: unknown): string[] {
  if (raw === undefined) throw malformed("Missing required field Action");
  const actions = asList(raw);
  if (actions.length === 0) throw malformed("Missing required field Action");
  return actions.map((a) => {
    if (typeof a !== "string") throw malformed("Policy has invalid action");
    const action = a.toLowerCase();
    if (action === "*") return "s3:*";
    if (!POLICY_ACTIONS.some((known) => globMatch(action, known.toLowerCase()))) throw malformed(`Policy has invalid action: ${a}`);
    return action;
  });
}

function parseResources(raw: unknown, bucket: string): string[] {
  if (raw === undefined) throw malformed("Missing required field Resource");
  const resources = asList(raw);
  if (resources.length === 0) throw malformed("Missing required field Resource");
  return resources.map((r) => {
    if (typeof r !== "string" || !r.startsWith("arn:aws:s3:::")) throw malformed("Policy has invalid resource");
    const path = r.slice("arn:aws:s3:::".length);
    const name = path.split("/", 1)[0];
    if (name !== bucket) throw malformed(`Policy has invalid resource: ${r} is not in bucket ${bucket}`);
    return path;
  });
}

/** The ARN path (bucket, or bucket/key) a request on `bucket` (and `key`) acts on. */
export function resourceOf(bucket: string, key: string | null): string {
  return key === null ? bucket : `${bucket}/${key}`;
}

function applies(s: PolicyStatement, who: Requester, action: PolicyAction, resource: string): boolean {
  if (s.principals !== "*" && (who === null || !s.principals.includes(who))) return false;
  const lower = action.toLowerCase();
  return s.actions.some((a) => globMatch(a, lower)) && s.resources.some((r) => globMatch(r, resource));
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

/** Whether the policy makes anything public (an Allow to everyone): GetBucketPolicyStatus. */
export function isPublic(policy: BucketPolicy): boolean {
  return policy.statements.some((s) => s.effect === "Allow" && s.principals === "*");
}
