// The objects of a bucket's index as its requests see them: a key's current object, a version
// looked up, a write checked against its conditions and object lock, a delete, a lock changed.
// BucketIndex calls these inside its events (a write and its checks in one transaction); the
// versions themselves are meta/versions.ts, the rules of object lock meta/object-lock.ts.
import * as quota from "./quota";
import * as heal from "./heal-queue";
import { defaultLock, deleteForbidden, type LockConfig, type ObjectLock, retained, retentionChangeForbidden } from "./object-lock";
import type { ConditionRefusal, DeleteOutcome, HeadResult, LockRefusal, ObjectRecord, WriteCondition } from "./types";
import * as versions from "./versions";

/** The key's current object. */
export function currentRecord(sql: SqlStorage, key: string): ObjectRecord | null {
  const current = versions.currentObject(sql, key);
  return current && versions.recordOf(current);
}

/** The key's current version (an object or a delete marker), with its place. */
function currentVersion(sql: SqlStorage, key: string): versions.StoredVersion | null {
  const current = versions.currentObject(sql, key);
  return current ? { ...current, marker: false } : versions.currentMarker(sql, key);
}

/**
 * The object under `key` (a GET's or HEAD's one lookup): its current version, or with `versionId`
 * (null: the null version) that version; else the delete marker in its place, if any. The current
 * object's expiry is the caller's to add.
 */
export function lookup(sql: SqlStorage, key: string, versionId: string | null | undefined, versioned: boolean): HeadResult {
  if (versionId === undefined) {
    const object = currentRecord(sql, key);
    const marker = object || !versioned ? null : versions.currentMarker(sql, key);
    return { object, marker: marker && { versionId: marker.versionId, lastModified: marker.lastModified }, versioned };
  }
  const found = versions.findVersion(sql, key, versionId);
  if (found?.marker) return { object: null, marker: { versionId: found.versionId, lastModified: found.lastModified }, versioned };
  return { object: found && versions.recordOf(found), marker: null, versioned };
}

/**
 * Makes `record` the current version of its key if `condition` holds and object lock allows it
 * (with `lock`, the bucket's configuration); `healReason` queues it for heal (null: it needs
 * none); `alongside` runs right after the write, within its quota check. Why it was refused, else
 * what the new version replaced.
 */
export function commit(
  sql: SqlStorage,
  record: ObjectRecord,
  condition: WriteCondition,
  lock: LockConfig | null,
  healReason: string | null,
  now: number,
  alongside?: () => void,
): { refused: ConditionRefusal | LockRefusal } | { refused: null; change: versions.VersionChange } {
  const refused = conditionRefusal(currentRecord(sql, record.key), condition);
  if (refused) return { refused };
  const locked = withLock(record, condition, lock);
  if (typeof locked === "string") return { refused: locked };
  // Over the bucket's quota (counting what `alongside` frees: a completion's parts), quota.withinQuota
  // throws: the caller's transaction rolls back.
  const change = quota.withinQuota(sql, () => {
    const put = versions.putVersion(sql, locked);
    alongside?.();
    return put;
  });
  heal.replace(sql, record.key, healReason, now);
  return { refused: null, change };
}

/**
 * Why `condition` refuses a write over `current` (the key's current object; null: none, or a
 * delete marker), or null when it holds. If-Match first: no object is NoSuchKey, another ETag
 * PreconditionFailed; then If-None-Match (* or an ETag) over an object is PreconditionFailed.
 */
export function conditionRefusal(current: Pick<ObjectRecord, "etag"> | null, condition: WriteCondition): ConditionRefusal | null {
  if (condition.ifMatch !== undefined) {
    if (current === null) return "NoSuchKey";
    if (!condition.ifMatch.some((t) => t === "*" || t === current.etag)) return "PreconditionFailed";
  }
  if (current === null) return null;
  if (condition.ifNoneMatch || condition.ifNoneMatchEtag?.includes(current.etag)) return "PreconditionFailed";
  return null;
}

/**
 * `record` with the lock it is written with: its own, or the bucket's default retention. A
 * string when object lock refuses the write.
 */
function withLock(record: ObjectRecord, condition: WriteCondition, config: LockConfig | null): ObjectRecord | LockRefusal {
  if (record.lock && !config) return "NoObjectLockConfiguration";
  const lock = record.lock?.mode !== undefined ? record.lock : { ...defaultLock(config, record.lastModified), ...record.lock };
  if ((retained(lock, record.lastModified) || lock.legalHold) && !condition.integrity) return "IntegrityRequired";
  return lock.mode !== undefined || lock.legalHold !== undefined ? { ...record, lock } : record;
}

/**
 * Deletes the current version of `key` (a delete marker in a versioned bucket) or, with
 * `versionId`, that version for good, unless object lock forbids it. Null: no such version.
 */
export function deleteOne(sql: SqlStorage, key: string, versionId: string | null | undefined, bypassGovernance: boolean, now: number): DeleteOutcome | null {
  if (versionId !== undefined) {
    // Deleting a version for good: object lock decides, in this transaction.
    const found = versions.findVersion(sql, key, versionId);
    const denied = found && !found.marker ? deleteForbidden(found.lock, now, bypassGovernance) : null;
    if (denied) return { versionId: versionId ?? "null", marker: false, freed: [], denied };
  }
  const before = currentRecord(sql, key);
  const outcome = versionId === undefined ? versions.deleteCurrent(sql, key, now) : versions.deleteVersion(sql, key, versionId);
  // The heal entry follows the current object: gone with it, or stale once another took its place.
  const after = currentRecord(sql, key);
  if (!after || !before || after.versionId !== before.versionId) heal.replace(sql, key, null, now);
  return outcome;
}

/** What a change of a version's retention or legal hold came to (BucketIndex.setVersionLock). */
export type LockChange = { result: "ok" | "no-lock" | "no-key" | "no-version" | "marker" } | { result: "denied"; reason: string };

/** A change of a version's lock: its retention (mode and date; both absent: none), or its legal hold. */
export type LockRequest = { retention: Pick<ObjectLock, "mode" | "until"> } | { legalHold: boolean };

/**
 * Sets a version's retention (mode and date; both absent: removes it) or legal hold, by S3's
 * rules (meta/object-lock.ts), on a bucket with object lock (`config`). `versionId` undefined:
 * the current version.
 */
export function changeLock(
  sql: SqlStorage,
  config: LockConfig | null,
  target: { key: string; versionId: string | null | undefined },
  change: LockRequest,
  bypassGovernance: boolean,
  now: number,
): LockChange {
  if (!config) return { result: "no-lock" };
  const { key, versionId } = target;
  const found = versionId === undefined ? currentVersion(sql, key) : versions.findVersion(sql, key, versionId);
  if (!found) return { result: versionId === undefined ? "no-key" : "no-version" };
  if (found.marker) return { result: "marker" };
  const current = found.lock ?? {};
  let next: ObjectLock;
  if ("legalHold" in change) next = { ...current, legalHold: change.legalHold };
  else {
    const reason = retentionChangeForbidden(current, change.retention, now, bypassGovernance);
    if (reason) return { result: "denied", reason };
    next = { ...(current.legalHold !== undefined ? { legalHold: current.legalHold } : {}), ...change.retention };
  }
  versions.setLock(sql, key, found.seq, next);
  return { result: "ok" };
}
