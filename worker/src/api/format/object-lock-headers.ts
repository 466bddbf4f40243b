// Object lock on the wire, for the operations that write, read or delete versions: the
// x-amz-object-lock-* headers of PutObject, CopyObject and CreateMultipartUpload (checked by S3's
// rules before any byte is stored), those GET and HEAD answer, and the governance bypass.
import type { ObjectLock, RetentionMode } from "../../meta/object-lock";
import { S3Error } from "../../s3-error";
import { bucketPolicy } from "../../services/bucket-policy";
import type { RequestContext } from "../http/context";
import { BYPASS_GOVERNANCE, type PolicyLookup, passes } from "../http/permissions";

const MODES = new Set<string>(["GOVERNANCE", "COMPLIANCE"]);

export function parseMode(value: string | undefined): RetentionMode {
  if (value === undefined || !MODES.has(value)) throw new S3Error("InvalidArgument", "Unknown wormMode directive.");
  return value as RetentionMode;
}

/** A retain-until date: ISO 8601, in the future. */
export function parseRetainUntil(value: string | undefined, now: number): number {
  const ms = value === undefined ? Number.NaN : Date.parse(value);
  if (Number.isNaN(ms)) throw new S3Error("InvalidArgument", "The retain until date must be provided in ISO 8601 format");
  if (ms <= now) throw new S3Error("InvalidArgument", "The retain until date must be in the future!");
  return ms;
}

/** The lock a write asks for in its headers, or undefined when it names none. */
export function lockFromHeaders(headers: Headers, now = Date.now()): ObjectLock | undefined {
  const mode = headers.get("x-amz-object-lock-mode")?.trim();
  const until = headers.get("x-amz-object-lock-retain-until-date")?.trim();
  const hold = headers.get("x-amz-object-lock-legal-hold")?.trim();
  if (mode === undefined && until === undefined && hold === undefined) return undefined;
  if ((mode === undefined) !== (until === undefined)) {
    throw new S3Error("InvalidArgument", "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied");
  }
  const lock: ObjectLock = {};
  if (mode !== undefined) {
    lock.mode = parseMode(mode);
    lock.until = parseRetainUntil(until, now);
  }
  if (hold !== undefined) {
    if (hold !== "ON" && hold !== "OFF") throw new S3Error("InvalidArgument", "Legal Hold must be either of 'ON' or 'OFF'");
    lock.legalHold = hold === "ON";
  }
  return lock;
}

/** What GET and HEAD say about a version's lock. */
export function lockHeaders(lock: ObjectLock | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (lock?.mode !== undefined && lock.until !== undefined) {
    out["x-amz-object-lock-mode"] = lock.mode;
    out["x-amz-object-lock-retain-until-date"] = new Date(lock.until).toISOString();
  }
  if (lock?.legalHold) out["x-amz-object-lock-legal-hold"] = "ON";
  return out;
}

/**
 * Whether the request bypasses GOVERNANCE retention on `key`: it asks to, and may (S3's
 * s3:BypassGovernanceRetention on the object: a policy's Deny refuses it, an Allow grants it; by
 * grants, the owner right on the bucket, which the root key has). Without it the lock holds and
 * the operation answers AccessDenied where the lock forbids it, as S3 does.
 */
export async function bypassGovernance(
  ctx: Pick<RequestContext, "request" | "principal" | "env">,
  bucket: string,
  key: string,
  policyOf: PolicyLookup = (b) => bucketPolicy(ctx.env, b),
): Promise<boolean> {
  const asked = ctx.request.headers.get("x-amz-bypass-governance-retention")?.trim().toLowerCase() === "true";
  return asked && (await passes(ctx.principal, BYPASS_GOVERNANCE, bucket, key, false, policyOf));
}
