// The POST policy of a browser form upload (docs/s3-compatibility.md, "Browser form uploads"): a
// base64 JSON document with an expiration and conditions that every form field must meet, signed
// by the key that made it. Pure functions: no I/O.
import { S3Error } from "../s3-error";

export type PostCondition =
  | { kind: "eq"; field: string; value: string }
  | { kind: "starts-with"; field: string; prefix: string }
  | { kind: "content-length-range"; min: number; max: number };

export interface PostPolicy {
  /** ms since epoch; null when the document has none (only unsigned forms may leave it out). */
  expiration: number | null;
  conditions: PostCondition[];
}

/** Fields the conditions need not name (S3's rule: the signature, the file, the policy itself). */
const EXEMPT = new Set(["policy", "x-amz-signature", "signature", "awsaccesskeyid", "file"]);

const invalidPolicy = (reason: string) => new S3Error("InvalidPolicyDocument", `Invalid Policy: ${reason}`);
const failed = (reason: string) => new S3Error("AccessDenied", `Invalid according to Policy: ${reason}`);

/** Parses a policy field (base64 JSON); throws InvalidPolicyDocument with the reason. */
export function parsePostPolicy(base64: string): PostPolicy {
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))));
  } catch {
    throw invalidPolicy("the policy is not base64-encoded JSON");
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) throw invalidPolicy("the policy must be a JSON object");
  const { expiration, conditions } = doc as Record<string, unknown>;
  let expires: number | null = null;
  if (expiration !== undefined) {
    expires = typeof expiration === "string" ? Date.parse(expiration) : Number.NaN;
    if (Number.isNaN(expires)) throw invalidPolicy("Invalid 'expiration' value");
  }
  if (!Array.isArray(conditions)) throw invalidPolicy("Invalid Policy: 'conditions' must be a list");
  return { expiration: expires, conditions: conditions.flatMap(parseCondition) };
}

function parseCondition(raw: unknown): PostCondition[] {
  if (Array.isArray(raw)) {
    const [op, a, b] = raw as unknown[];
    const name = typeof op === "string" ? op.toLowerCase() : "";
    if (name === "content-length-range") {
      const min = Number(a);
      const max = Number(b);
      if (raw.length !== 3 || !Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min < 0 || max < min) {
        throw invalidPolicy("Invalid content-length-range condition");
      }
      return [{ kind: "content-length-range", min, max }];
    }
    if ((name === "eq" || name === "starts-with") && raw.length === 3 && typeof a === "string" && a.startsWith("$") && typeof b === "string") {
      const field = a.slice(1).toLowerCase();
      return [name === "eq" ? { kind: "eq", field, value: b } : { kind: "starts-with", field, prefix: b }];
    }
  } else if (typeof raw === "object" && raw !== null && Object.values(raw).every((v) => typeof v === "string")) {
    return Object.entries(raw as Record<string, string>).map(([field, value]) => ({ kind: "eq" as const, field: field.toLowerCase(), value }));
  }
  throw invalidPolicy(`Invalid condition ${JSON.stringify(raw)}`);
}

/**
 * Checks the form's fields (lower-cased names; `bucket` and `key` as the upload will use them)
 * against the policy at `now`: not expired, every condition met, every field named by a
 * condition. The file's size is checked separately (checkPostLength), before a byte is stored.
 */
export function checkPostPolicy(policy: PostPolicy, fields: ReadonlyMap<string, string>, now: number): void {
  if (policy.expiration === null) throw invalidPolicy("Policy missing expiration");
  if (now > policy.expiration) throw failed("Policy expired.");
  for (const c of policy.conditions) {
    if (c.kind === "content-length-range") continue;
    const value = fields.get(c.field) ?? "";
    if (c.kind === "eq" ? value !== c.value : !value.startsWith(c.prefix)) {
      throw failed(`Policy Condition failed: ["${c.kind}", "$${c.field}", "${c.kind === "eq" ? c.value : c.prefix}"]`);
    }
  }
  const named = new Set(policy.conditions.flatMap((c) => (c.kind === "content-length-range" ? [] : [c.field])));
  for (const field of fields.keys()) {
    if (field === "bucket" || EXEMPT.has(field) || field.startsWith("x-ignore-")) continue;
    if (!named.has(field)) throw failed(`Extra input fields: ${field}`);
  }
}

/** The size limits of the policy, checked once the file's size is known and before it is stored. */
export function checkPostLength(policy: PostPolicy | null, size: number): void {
  for (const c of policy?.conditions ?? []) {
    if (c.kind !== "content-length-range") continue;
    if (size > c.max) throw new S3Error("EntityTooLarge", "Your proposed upload exceeds the maximum allowed size");
    if (size < c.min) throw new S3Error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size");
  }
}
