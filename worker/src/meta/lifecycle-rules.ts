// Lifecycle rules: their stored form, which versions they select and when, and a pass that applies
// them to a bucket's index a bounded batch at a time (BucketIndex calls it inside a transaction, so
// every decision is made on the state it changes). The clock rules are judged by is an argument
// (tests and an operator catching up move it); object lock is judged by the real clock, never later.
import { core } from "../core";
import type { ManifestPart } from "../shared/core-api";
import * as queue from "./heal-queue";
import { deleteForbidden } from "./object-lock";
import { currentRecord } from "./object-records";
import { carries } from "./replication-rules";
import * as stored from "./stored-parts";
import type { Expiry, ObjectRecord } from "./types";
import * as uploads from "./uploads";
import * as versions from "./versions";

type Tags = [string, string][];

export const DAY_MS = 24 * 3600 * 1000;
/** Uploads one call aborts per rule at most (the next pass takes the rest). */
const MAX_ABORTS = 1000;

export interface LifecycleFilter {
  prefix: string;
  tags: Tags;
  /** Only objects strictly larger / smaller than this many bytes. */
  sizeGreaterThan?: number;
  sizeLessThan?: number;
}

export interface LifecycleRule {
  id: string;
  enabled: boolean;
  filter: LifecycleFilter;
  /** S3's older form put the prefix on the rule itself; it is answered back the way it came. */
  legacyPrefix?: boolean;
  expiration?: { days?: number; date?: number; expiredObjectDeleteMarker?: boolean };
  noncurrentExpiration?: { days: number; newerVersions?: number };
  abortUploadDays?: number;
}

/** What one call of the pass did. */
export interface LifecycleCounts {
  /** Current objects expired: deleted, or given a delete marker in a versioned bucket. */
  current: number;
  /** Noncurrent versions (and noncurrent delete markers) deleted for good. */
  noncurrent: number;
  /** Delete markers left with no other version, removed. */
  deleteMarkers: number;
  /** Multipart uploads aborted. */
  uploads: number;
}

/** When a version's age reaches `days`: S3 rounds up to the next midnight UTC. */
export function afterDays(since: number, days: number): number {
  return Math.ceil((since + days * DAY_MS) / DAY_MS) * DAY_MS;
}

function matches(filter: LifecycleFilter, key: string, size: number | null, tags: () => Tags): boolean {
  if (!key.startsWith(filter.prefix)) return false;
  if (filter.sizeGreaterThan !== undefined && (size === null || size <= filter.sizeGreaterThan)) return false;
  if (filter.sizeLessThan !== undefined && (size === null || size >= filter.sizeLessThan)) return false;
  return filter.tags.length === 0 || carries(tags(), filter.tags);
}

/** When the current object `record` expires under `rules`, and by which rule (x-amz-expiration). */
export function currentExpiry(rules: readonly LifecycleRule[], record: ObjectRecord, tags: () => Tags): Expiry | null {
  let best: Expiry | null = null;
  for (const rule of rules) {
    const e = rule.expiration;
    if (!rule.enabled || !e || (e.days === undefined && e.date === undefined)) continue;
    if (!matches(rule.filter, record.key, record.size, tags)) continue;
    const at = e.date ?? afterDays(record.lastModified, e.days as number);
    if (best === null || at < best.at) best = { at, ruleId: rule.id };
  }
  return best;
}

/** x-amz-expiration's value. */
export function expirationHeader(expiry: Expiry): string {
  return `expiry-date="${new Date(expiry.at).toUTCString()}", rule-id="${expiry.ruleId.replace(/["\\]/g, "\\$&")}"`;
}

/** Where the pass goes on: after this key (null: a new pass starts with the uploads). */
export type LifecycleCursor = string | null;

/**
 * One step of a lifecycle pass: applies `rules` as of `now` to the keys after `cursor`, visiting
 * about `budget` versions (a key's versions are never split); `next` is null when the pass reached
 * the last key. What follows from it goes in the same transaction: the shard files of versions
 * deleted for good and of aborted uploads go to the garbage queue, and the heal queue entry of a
 * key whose current object went goes with it.
 */
export function lifecycleStep(sql: SqlStorage, rules: readonly LifecycleRule[], now: number, cursor: LifecycleCursor, budget: number) {
  const active = rules.filter((r) => r.enabled);
  const counts: LifecycleCounts = { current: 0, noncurrent: 0, deleteMarkers: 0, uploads: 0 };
  const freed: ObjectRecord[] = [];
  const abortedParts: ManifestPart[] = [];
  if (cursor === null) {
    for (const rule of active) {
      if (rule.abortUploadDays === undefined) continue;
      // Initiated at least `days` before the last midnight: due by S3's rounding.
      const cutoff = Math.floor(now / DAY_MS) * DAY_MS - rule.abortUploadDays * DAY_MS;
      for (const id of uploads.uploadsInitiatedBy(sql, rule.filter.prefix, cutoff, MAX_ABORTS)) {
        abortedParts.push(...uploads.deleteUpload(sql, id).map((p) => p.part));
        counts.uploads++;
      }
    }
  }
  let visited = 0;
  let next: LifecycleCursor = null;
  for (const key of versions.keysAfter(sql, cursor ?? "", cursor === null, budget)) {
    const stack = versions.allVersions(sql, key);
    visited += stack.length;
    applyToKey(sql, active, now, stack, counts, freed);
    if (visited >= budget) {
      next = key;
      break;
    }
  }
  for (const key of new Set(freed.map((r) => r.key))) if (!currentRecord(sql, key)) queue.replace(sql, key, null, Date.now());
  stored.addGarbage(sql, [...freed.flatMap((r) => core.decodeManifest(r.manifest).parts), ...abortedParts], Date.now());
  return { counts, next };
}

function tagsOf(manifest: Uint8Array): Tags {
  return core.decodeManifest(manifest).tags;
}

/** One key's versions, newest first: the current one (an object, or a delete marker) first. */
function applyToKey(
  sql: SqlStorage,
  rules: readonly LifecycleRule[],
  now: number,
  stack: readonly versions.StoredVersion[],
  counts: LifecycleCounts,
  freed: ObjectRecord[],
): void {
  const latest = stack[0];
  if (!latest) return;
  const key = latest.key;
  if (!latest.marker) {
    const expiry = currentExpiry(rules, latest, () => tagsOf(latest.manifest));
    if (expiry && expiry.at <= now) {
      // The rest of the key waits for the next pass: what is noncurrent has just changed.
      const change = versions.deleteCurrent(sql, key, now);
      freed.push(...change.freed);
      counts.current++;
      return;
    }
  } else if (stack.length === 1) {
    const rule = rules.find((r) => r.expiration?.expiredObjectDeleteMarker && key.startsWith(r.filter.prefix) && r.filter.tags.length === 0);
    if (rule) {
      versions.deleteVersion(sql, key, latest.versionId);
      counts.deleteMarkers++;
      return;
    }
  }
  // Noncurrent versions: each became noncurrent when the next newer one was written.
  for (let i = 1; i < stack.length; i++) {
    const v = stack[i] as versions.StoredVersion;
    const since = (stack[i - 1] as versions.StoredVersion).lastModified;
    const newerNoncurrent = i - 1;
    const due = rules.some((r) => {
      const n = r.noncurrentExpiration;
      if (!n || newerNoncurrent < (n.newerVersions ?? 0) || afterDays(since, n.days) > now) return false;
      return matches(r.filter, key, v.marker ? null : v.size, () => (v.marker ? [] : tagsOf(v.manifest)));
    });
    // Object lock outranks lifecycle: a retained or held version stays. Retention is judged by the
    // real clock (or `now`, if earlier): no caller's clock ends a retention early.
    if (!due || (!v.marker && deleteForbidden(v.lock, Math.min(now, Date.now()), false))) continue;
    const gone = versions.deleteVersion(sql, key, v.versionId);
    if (gone) freed.push(...gone.freed);
    counts.noncurrent++;
  }
}
