// Bucket replication's delivery (meta/replication-rules.ts): the bucket index's outbox rows whose
// target is "replica:REMOTE/BUCKET", run from the index's alarm (jobs/bucket-jobs.ts), so the index
// is their only deliverer and the order per key holds. A created version's bytes are read as a GET
// reads them (services/objects.ts openRange, decrypted when SSE-S3) and streamed, never held
// whole, as one PUT with its content headers, user metadata and tags: to a bucket of this gateway
// (written and committed as a copy is) or to a remote target of SHARDGATE_REPLICATION_TARGETS
// (storage/s3-remote.ts). A delete marker is a DELETE of the key there. Success sets the version
// COMPLETED once no other destination waits; a failure is retried with the outbox's backoff, and
// after its last attempt (or at once when it can never succeed: an SSE-C object, whose key the
// gateway does not hold) the row is a dead letter and the version FAILED. One run is bounded:
// at most ROUNDS batches of BATCH rows, CONCURRENCY at once, within BUDGET_MS.
import { type ReplicationTarget, parseReplicationTargets } from "../config-vars";
import type { Manifest } from "../shared/core-api";
import { bucketIndex } from "../meta/stubs";
import { type Outbox, type OutboxRow, type RetryPolicy, retryPolicy } from "../meta/outbox";
import { destinationOfTarget, REPLICA_PREFIX, type Replication } from "../meta/replication-rules";
import type { ObjectRecord } from "../meta/types";
import { metrics } from "../observability/metrics";
import { S3Remote } from "../storage/s3-remote";
import { newCipher, objectEtag, objectKeyOf, writeObjectPart, encryptionOf } from "./encryption";
import { commitObject, type NewObject, type ObjectContext, openRange, partOf, removeFreed } from "./objects";
import { mapBounded } from "./webhook-delivery";

const BATCH = 16;
const CONCURRENCY = 4;
const ROUNDS = 8;
const BUDGET_MS = 20_000;
/** The most one S3 PUT takes (5 GiB): a larger object cannot go to a remote endpoint as one. */
const MAX_PUT_BYTES = 5 * 1024 ** 3;

/** What the run reads and changes in the source bucket's index (its own, from inside it). */
export interface ReplicationSource {
  bucket: string;
  outbox: Outbox;
  replication: Replication;
  /** The version `versionId` of `key` as stored; null when it is gone (or a delete marker). */
  version(key: string, versionId: string): ObjectRecord | null;
  transact(f: () => void): void;
}

/** A row's outcome: done, to retry, or never to succeed. */
type Outcome = { ok: true } | { ok: false; error: string; final: boolean };

/** One replication run; how many rows were replicated, failed and given up. */
export async function replicateOutbox(ctx: ObjectContext, source: ReplicationSource): Promise<{ completed: number; failed: number; dead: number }> {
  const policy = retryPolicy(ctx.env);
  const remotes = parseReplicationTargets(ctx.env.SHARDGATE_REPLICATION_TARGETS) ?? {};
  const started = Date.now();
  const total = { completed: 0, failed: 0, dead: 0 };
  for (let round = 0; round < ROUNDS && Date.now() - started < BUDGET_MS; round++) {
    const rows = source.outbox.due(Date.now(), BATCH, REPLICA_PREFIX);
    if (rows.length === 0) break;
    const outcomes = await mapBounded(rows, CONCURRENCY, (row) => replicateRow(ctx, source, remotes, policy, row));
    source.transact(() => {
      for (const [i, row] of rows.entries()) {
        const outcome = outcomes[i] as Outcome;
        if (outcome.ok) total.completed += settleDone(source, row);
        else if (settleFailed(source, row, outcome, policy)) total.dead++;
        else total.failed++;
      }
    });
  }
  metrics.add("shardgate_replication_versions_total", total.completed, { result: "completed" });
  metrics.add("shardgate_replication_versions_total", total.failed, { result: "retried" });
  metrics.add("shardgate_replication_versions_total", total.dead, { result: "failed" });
  return total;
}

/** A row delivered: gone from the outbox; its version COMPLETED when no other destination waits or gave up. */
function settleDone(source: ReplicationSource, row: OutboxRow): number {
  source.outbox.delivered([row.seq]);
  if (row.versionId === null || !row.event.startsWith("ObjectCreated:")) return 1;
  if (source.replication.statusOf(row.key, row.versionId) !== null && !source.outbox.waiting(row.key, row.versionId, REPLICA_PREFIX)) {
    source.replication.setStatus(row.key, row.versionId, "COMPLETED", null);
  }
  return 1;
}

/** A failed attempt counted (outbox.failed); whether the row is now a dead letter (its version FAILED). */
function settleFailed(source: ReplicationSource, row: OutboxRow, outcome: { error: string; final: boolean }, policy: RetryPolicy): boolean {
  const counted = outcome.final ? { ...row, attempts: Math.max(row.attempts, policy.attempts - 1) } : row;
  const dead = source.outbox.failed([{ row: counted, error: outcome.error }], Date.now(), policy) > 0;
  if (dead && row.versionId !== null && row.event.startsWith("ObjectCreated:")) source.replication.setStatus(row.key, row.versionId, "FAILED", outcome.error);
  return dead;
}

/** Whether `key` has a path segment a URL would resolve: ".", "..", or those with %2E for a dot. */
export function hasDotSegment(key: string): boolean {
  return key.split("/").some((segment) => /^(\.|%2e){1,2}$/i.test(segment));
}

/** Replicates one row; never throws. */
async function replicateRow(
  ctx: ObjectContext,
  source: ReplicationSource,
  remotes: Record<string, ReplicationTarget>,
  policy: RetryPolicy,
  row: OutboxRow,
): Promise<Outcome> {
  const destination = destinationOfTarget(row.target);
  if (!destination) return { ok: false, error: `not a replication target: ${row.target}`, final: true };
  // A URL collapses "." and ".." segments (also written %2E): such a key would land outside the
  // destination bucket, or name the bucket itself, at a remote endpoint. Never sent.
  if (destination.remote !== "" && hasDotSegment(row.key)) {
    return { ok: false, error: 'a key with a "." or ".." path segment is not replicated to a remote endpoint', final: true };
  }
  const remote = destination.remote === "" ? null : (remotes[destination.remote] ?? null);
  if (destination.remote !== "" && !remote) return { ok: false, error: `no replication target ${destination.remote} is configured`, final: false };
  try {
    if (row.event === "ObjectRemoved:DeleteMarkerCreated") return await replicateMarker(ctx, remote, destination.bucket, row.key, policy);
    const record = row.versionId === null ? null : source.version(row.key, row.versionId);
    if (!record) return { ok: true }; // removed for good before it was replicated: nothing to copy
    return await replicateVersion(ctx, remote, destination.bucket, record, policy);
  } catch (e) {
    return { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e), final: false };
  }
}

async function replicateMarker(ctx: ObjectContext, remote: ReplicationTarget | null, bucket: string, key: string, policy: RetryPolicy): Promise<Outcome> {
  if (remote) {
    const error = await new S3Remote(remote).delete(bucket, key, AbortSignal.timeout(Math.max(policy.timeoutMs, 30_000)));
    return error === null ? { ok: true } : { ok: false, error, final: false };
  }
  const outcome = await bucketIndex(ctx.env, bucket).delete(key, undefined, false, true);
  if (outcome?.denied) return { ok: false, error: `the destination refused the delete: ${outcome.denied}`, final: false };
  if (outcome) removeFreed(ctx, outcome.freed);
  return { ok: true };
}

async function replicateVersion(
  ctx: ObjectContext,
  remote: ReplicationTarget | null,
  bucket: string,
  record: ObjectRecord,
  policy: RetryPolicy,
): Promise<Outcome> {
  const manifest = ctx.core.decodeManifest(record.manifest);
  if (manifest.encryption?.mode === "SSE-C") {
    return { ok: false, error: "an object encrypted with a customer's key (SSE-C) cannot be read without it, so it is not replicated", final: true };
  }
  if (remote && manifest.size > MAX_PUT_BYTES) {
    return { ok: false, error: `an object of more than 5 GiB is not replicated to a remote endpoint (one PUT each)`, final: true };
  }
  const objectKey = manifest.encryption ? await objectKeyOf(ctx.env, manifest.encryption, null) : null;
  const body = await openRange(ctx, manifest, 0, manifest.size, undefined, objectKey);
  if (!remote) {
    await writeLocal(ctx, bucket, record.key, manifest, body);
    return { ok: true };
  }
  // At least a minute, and a megabyte a second beyond it.
  const signal = AbortSignal.timeout(Math.max(policy.timeoutMs, 60_000) + Math.ceil(manifest.size / 1000));
  const error = await new S3Remote(remote).put(bucket, record.key, body, manifest.size, remoteHeaders(manifest), signal);
  return error === null ? { ok: true } : { ok: false, error, final: false };
}

/** The headers a replica is written with: content headers, x-amz-meta-*, x-amz-tagging. */
export function remoteHeaders(manifest: Pick<Manifest, "headers" | "userMetadata" | "tags">): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of manifest.headers) headers[name] = value;
  for (const [name, value] of manifest.userMetadata) headers[`x-amz-meta-${name}`] = value;
  if (manifest.tags.length > 0) headers["x-amz-tagging"] = new URLSearchParams(manifest.tags).toString();
  return headers;
}

/** Writes the bytes of `body` as a new version of `key` in `bucket` of this gateway, as a copy writes (its default encryption applies). */
async function writeLocal(ctx: ObjectContext, bucket: string, key: string, manifest: Manifest, body: ReadableStream<Uint8Array>): Promise<void> {
  const cipher = await newCipher(ctx.env, ctx.config, bucket, null);
  const part = await writeObjectPart(ctx.config, ctx.core, body, manifest.size, () => {}, cipher, "copy");
  const etag = objectEtag(cipher, part);
  const encryption = cipher ? { encryption: encryptionOf(cipher, [part.salt as string]) } : {};
  const object: NewObject = {
    key,
    size: manifest.size,
    etag,
    headers: manifest.headers,
    userMetadata: manifest.userMetadata,
    tags: manifest.tags,
    checksums: [],
    parts: [partOf(part.written, etag, [])],
    ...encryption,
  };
  await commitObject(ctx, bucket, object, { event: "Put", replica: true }, [part.written]);
}
