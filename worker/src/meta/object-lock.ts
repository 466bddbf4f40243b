// Object lock (WORM): a version's retention (GOVERNANCE or COMPLIANCE until a date) and legal hold,
// the bucket's lock configuration with its default retention, and S3's rules for what they forbid.
// BucketIndex applies these inside the transaction that would delete a version or change its
// retention, so no interleaving of requests (the lifecycle pass included) gets around them.

export type RetentionMode = "GOVERNANCE" | "COMPLIANCE";

/** A version's lock, stored with it. */
export interface ObjectLock {
  mode?: RetentionMode;
  /** Retain until (ms since the epoch); with `mode`. */
  until?: number;
  legalHold?: boolean;
}

/** A bucket's object lock configuration (only buckets created with object lock, or versioned ones, have one). */
export interface LockConfig {
  enabled: true;
  /** Retention every new version gets unless its write names one. */
  defaultRetention?: { mode: RetentionMode; days?: number; years?: number };
}

const DAY_MS = 24 * 3600 * 1000;

/** The retention a version written at `now` gets from the bucket's default, if any. */
export function defaultLock(config: LockConfig | null, now: number): ObjectLock | undefined {
  const d = config?.defaultRetention;
  if (!d) return undefined;
  const until = d.years !== undefined ? addYears(now, d.years) : now + (d.days ?? 0) * DAY_MS;
  return { mode: d.mode, until };
}

function addYears(ms: number, years: number): number {
  const date = new Date(ms);
  date.setUTCFullYear(date.getUTCFullYear() + years);
  return date.getTime();
}

/** Whether a retention is in force at `now`. */
export function retained(lock: ObjectLock | undefined, now: number): boolean {
  return lock?.mode !== undefined && lock.until !== undefined && lock.until > now;
}

/**
 * Why a version with `lock` may not be deleted for good at `now`, or null when it may: a legal
 * hold always stops it; a COMPLIANCE retention until it ends; a GOVERNANCE one unless bypassed.
 */
export function deleteForbidden(lock: ObjectLock | undefined, now: number, bypassGovernance: boolean): string | null {
  if (lock?.legalHold) return "Object is under legal hold";
  if (!retained(lock, now)) return null;
  if (lock?.mode === "GOVERNANCE" && bypassGovernance) return null;
  return "Object is WORM protected and cannot be overwritten";
}

/**
 * Why `next` may not replace a version's retention `current` at `now`, or null when it may.
 * Extending (a later date, or GOVERNANCE to COMPLIANCE) is always allowed; shortening, removing or
 * weakening a COMPLIANCE retention never is; a GOVERNANCE one only with the bypass.
 */
export function retentionChangeForbidden(current: ObjectLock | undefined, next: ObjectLock, now: number, bypassGovernance: boolean): string | null {
  if (!retained(current, now)) return null;
  const stronger =
    next.mode !== undefined &&
    next.until !== undefined &&
    next.until >= (current?.until ?? 0) &&
    (next.mode === "COMPLIANCE" || current?.mode === "GOVERNANCE");
  if (stronger) return null;
  if (current?.mode === "GOVERNANCE" && bypassGovernance) return null;
  return current?.mode === "COMPLIANCE"
    ? "A COMPLIANCE retention cannot be shortened, removed or changed to GOVERNANCE"
    : "A GOVERNANCE retention can be shortened or removed only with x-amz-bypass-governance-retention";
}
