// Bucket replication's delivery (meta/replication-rules.ts): the bucket index's outbox rows whose
// target is "replica:REMOTE/BUCKET", run from the index's alarm (jobs/bucket-jobs.ts), so the index
// is their only deliverer and the order per key holds. A created version's bytes are read as a GET
// reads them (services/objects.ts openRange, decrypted when SSE-S3) and streamed, never held
// whole, with its content headers, user metadata and tags: to a bucket of this gateway as one
// write (written and committed as a copy is) or to a remote target of SHARDGATE_REPLICATION_TARGETS
// (storage/s3-remote.ts). A delete marker is a DELETE of the key there. Success sets the version
// COMPLETED once no other destination waits; a failure is retried with the outbox's backoff, and
// after its last attempt (or at once when it can never succeed: an SSE-C object, whose key the
// gateway does not hold) the row is a dead letter and the version FAILED. One run is bounded:
// at most ROUNDS batches of BATCH rows, CONCURRENCY at once, within BUDGET_MS (checked between
// batches: a row's attempt, once begun, runs to its end or its timeouts).
//
// To a remote target, a version written in one PUT goes as one PUT. A version uploaded in parts
// (its ETag "<md5 of md5s>-N" with N its manifest's parts) goes as S3's replication sends it: a
// multipart upload with the same part boundaries, so the replica's ETag is the source's and an
// object over 5 GiB replicates. Within the one attempt: CreateMultipartUpload with the PUT's
// headers, then each part in turn (one in flight per row, streamed from the source's range of
// that part, with its Content-MD5 and a timeout of its own: a minute at least plus a second per
// MB, the whole attempt at most MAX_ATTEMPT_MS), then CompleteMultipartUpload (a 200 carrying an
// <Error> fails; its ETag must equal the source's, or, when every part went with its Content-MD5,
// which the remote checked, be a multipart ETag of as many parts: a remote that encrypts with KMS
// makes other ETags). A failure aborts the upload (best effort) and the row is retried as any
// other; the upload is noted in the index (Replication.uploadBegun) until completed or aborted, so
// one whose abort failed (the remote down) or whose run was cut off is aborted at the start of a
// later run (the alarm wakes for it; at most LEFT_BATCH a run, backing off as a row's retries do,
// given up after 20 tries and counted in shardgate_replication_uploads_abandoned_total);
// while MAX_LEFT_UPLOADS are noted, no new upload begins. SSE-S3 objects are sent decrypted, as the single PUT sends them; their
// parts' ETags are their plaintext's MD5s, so their ETag is checked the same. A version whose
// parts S3 would refuse (a part but the last under 5 MiB, one over 5 GiB, more than 10,000: a
// direct-path commit with small parts) goes as one PUT when it can (up to 5 GiB; its replica's
// ETag then differs), else it is FAILED. To a bucket of this gateway every version is one write
// and a multipart source's ETag is not kept. The upload is not resumed across runs: an attempt
// takes at most MAX_ATTEMPT_MS (10 minutes, within Cloudflare's 15 for an alarm), and a row not
// begun within the run's budget waits for the next run, so a run lasts at most about one attempt;
// an object the remote cannot take in 10 minutes (5 GiB below ~9 MB/s) ends FAILED after its
// retries.
import { errorText } from "../errors";
import type { ReplicationTarget } from "../config-vars";
import type { Manifest } from "../shared/core-api";
import { bucketIndex } from "../meta/stubs";
import type { Outbox, OutboxRow, RetryPolicy } from "../meta/outbox";
import { destinationOfTarget, MAX_LEFT_UPLOADS, REPLICA_HEADER, REPLICA_PREFIX, type RemoteUpload, type Replication } from "../meta/replication-rules";
import type { ObjectRecord } from "../meta/types";
import { metrics } from "../observability/metrics";
import { MAX_PART_NUMBER, MAX_PUT_BYTES, MIN_PART_BYTES } from "../s3-limits";
import { S3Remote } from "../storage/s3-remote";
import { newCipher, objectEtag, objectKeyOf, writeObjectPart, encryptionOf } from "./encryption";
import { commitObject, type NewObject, type ObjectContext, openRange, partOf, partOffsets, type PartSpan, removeFreed } from "./objects";
import { mapBounded } from "../shared/bounded";

const BATCH = 16;
const CONCURRENCY = 4;
const ROUNDS = 8;
const BUDGET_MS = 20_000;
/** Uploads whose abort failed that one run tries to abort again. */
const LEFT_BATCH = 16;

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
  const policy = ctx.config.notify;
  const remotes = ctx.config.replicationTargets;
  const started = Date.now();
  const total = { completed: 0, failed: 0, dead: 0 };
  // First the uploads left behind (a run cut off mid-upload, an abort that failed) whose abort is due.
  await abortLeftUploads(source, remotes, policy);
  for (let round = 0; round < ROUNDS && Date.now() - started < BUDGET_MS; round++) {
    const rows = source.outbox.due(Date.now(), BATCH, REPLICA_PREFIX);
    if (rows.length === 0) break;
    // A row not begun within the budget waits for the next run, unsettled (so a batch of large
    // objects one after another cannot hold the run past one attempt's MAX_ATTEMPT_MS).
    const outcomes = await mapBounded(rows, CONCURRENCY, (row) =>
      Date.now() - started < BUDGET_MS ? replicateRow(ctx, source, remotes, policy, row) : Promise.resolve(null),
    );
    source.transact(() => {
      for (const [i, row] of rows.entries()) {
        const outcome = outcomes[i];
        if (!outcome) continue;
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
    return await replicateVersion(ctx, source, remote, row.target, destination.bucket, record, policy);
  } catch (e) {
    return { ok: false, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e), final: false };
  }
}

async function replicateMarker(ctx: ObjectContext, remote: ReplicationTarget | null, bucket: string, key: string, policy: RetryPolicy): Promise<Outcome> {
  if (remote) {
    const error = await new S3Remote(remote).delete(bucket, key, REPLICA_MARK, AbortSignal.timeout(Math.max(policy.timeoutMs, 30_000)));
    return error === null ? { ok: true } : { ok: false, error, final: false };
  }
  const outcome = await bucketIndex(ctx.env, bucket).delete(key, undefined, false, true);
  if (outcome?.denied) return { ok: false, error: `the destination refused the delete: ${outcome.denied}`, final: false };
  if (outcome) removeFreed(ctx, outcome.freed);
  return { ok: true };
}

async function replicateVersion(
  ctx: ObjectContext,
  source: ReplicationSource,
  remote: ReplicationTarget | null,
  target: string,
  bucket: string,
  record: ObjectRecord,
  policy: RetryPolicy,
): Promise<Outcome> {
  const manifest = ctx.core.decodeManifest(record.manifest);
  if (manifest.encryption?.mode === "SSE-C") {
    return { ok: false, error: "an object encrypted with a customer's key (SSE-C) cannot be read without it, so it is not replicated", final: true };
  }
  const objectKey = manifest.encryption ? await objectKeyOf(ctx.config.masterKey, manifest.encryption, null) : null;
  if (remote) {
    const spans = multipartSpans(manifest);
    if (spans) return replicateMultipart({ ctx, bucket, manifest, spans, objectKey }, source, remote, { target, key: record.key }, policy);
    if (manifest.size > MAX_PUT_BYTES) {
      return {
        ok: false,
        error: "an object of more than 5 GiB whose parts S3 would not take as they are is not replicated to a remote endpoint",
        final: true,
      };
    }
  }
  const body = await openRange(ctx, manifest, 0, manifest.size, undefined, objectKey);
  if (!remote) {
    await writeLocal(ctx, bucket, record.key, manifest, body);
    return { ok: true };
  }
  const error = await new S3Remote(remote).put(bucket, record.key, body, manifest.size, remoteHeaders(manifest), sendTimeout(policy, manifest.size));
  return error === null ? { ok: true } : { ok: false, error, final: false };
}

/**
 * The parts of a version uploaded in parts (its ETag "…-N", N its parts), with their plaintext
 * offsets and sizes, when S3 takes them as they are; null for one written whole, or with parts S3
 * would refuse.
 */
export function multipartSpans(manifest: Manifest): PartSpan[] | null {
  const count = /^[0-9a-f]{32}-(\d+)$/i.exec(manifest.etag)?.[1];
  if (count === undefined || Number(count) !== manifest.parts.length || manifest.parts.length > MAX_PART_NUMBER) return null;
  const spans = partOffsets(manifest);
  const fits = spans.every((span, i) => span.size <= MAX_PUT_BYTES && (i === spans.length - 1 || span.size >= MIN_PART_BYTES));
  return fits ? spans : null;
}

/**
 * The most one attempt (a PUT, or a multipart upload whole) takes, whatever its size: it ends (its upload aborted, the row
 * retried) well before a Durable Object's alarm is cut off (15 minutes on Cloudflare), so every
 * attempt is settled and counted, and the bucket's alarm (its webhooks too) is never held longer.
 */
const MAX_ATTEMPT_MS = 10 * 60_000;

/** A timeout for sending `bytes`: the outbox's, a minute at least, and a second per MB beyond it; never past MAX_ATTEMPT_MS. */
function sendTimeout(policy: RetryPolicy, bytes: number): AbortSignal {
  return AbortSignal.timeout(Math.min(MAX_ATTEMPT_MS, Math.max(policy.timeoutMs, 60_000) + Math.ceil(bytes / 1000)));
}

/** An abort's timeout: the outbox's, 10 s at least (a remote that hangs holds the run no longer). */
function abortTimeout(policy: RetryPolicy): AbortSignal {
  return AbortSignal.timeout(Math.max(policy.timeoutMs, 10_000));
}

/**
 * A version uploaded in parts as a multipart upload at `remote` with the same parts (see the top
 * comment): its ETag checked against the source's; on failure the upload aborted, best effort
 * (noted in the index until it is).
 */
async function replicateMultipart(
  version: PartsToSend,
  source: ReplicationSource,
  remote: ReplicationTarget,
  at: { target: string; key: string },
  policy: RetryPolicy,
): Promise<Outcome> {
  const { bucket, manifest } = version;
  if (source.replication.uploadsLeftCount() >= MAX_LEFT_UPLOADS)
    return { ok: false, error: `${MAX_LEFT_UPLOADS} multipart uploads at remotes wait for their abort: none begins until fewer do`, final: false };
  const s3 = new S3Remote(remote);
  // One deadline for the whole attempt: the single PUT's for its size (never past MAX_ATTEMPT_MS).
  const deadline = sendTimeout(policy, manifest.size);
  const within = (signal: AbortSignal) => AbortSignal.any([deadline, signal]);
  const created = await s3.createUpload(bucket, at.key, remoteHeaders(manifest), within(sendTimeout(policy, 0)));
  if ("error" in created) return { ok: false, error: `CreateMultipartUpload: ${created.error}`, final: false };
  const upload: RemoteUpload = { ...at, uploadId: created.uploadId };
  source.replication.uploadBegun(upload, Date.now());
  let error: string;
  try {
    error = await sendParts(version, s3, upload, (bytes) => within(sendTimeout(policy, bytes)));
  } catch (e) {
    error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  }
  if (error === "") {
    source.replication.uploadEnded(upload);
    return { ok: true };
  }
  // Best effort: when it fails the upload stays noted, and a later run aborts it (after a backoff).
  await abortOrNote(source, s3, bucket, upload, policy);
  return { ok: false, error, final: false };
}

/** A version sent in parts: where it is read from (its object key, when encrypted), its parts, the bucket it goes to. */
interface PartsToSend {
  ctx: ObjectContext;
  bucket: string;
  manifest: Manifest;
  spans: readonly PartSpan[];
  objectKey: Uint8Array | null;
}

/** The parts one at a time, then the complete; "" when the remote holds the object with the source's ETag, else why not. */
async function sendParts(version: PartsToSend, s3: S3Remote, upload: RemoteUpload, timeout: (bytes: number) => AbortSignal): Promise<string> {
  const { ctx, bucket, manifest, spans, objectKey } = version;
  const etags: string[] = [];
  let everyPartChecked = true;
  for (const span of spans) {
    const body = await openRange(ctx, manifest, span.offset, span.offset + span.size, undefined, objectKey);
    // The part's ETag is the MD5 of its plaintext (plain and SSE-S3; SSE-C never comes here).
    const md5 = /^[0-9a-f]{32}$/i.test(span.part.etag) ? span.part.etag : null;
    if (md5 === null) everyPartChecked = false;
    const sent = await s3.uploadPart(bucket, upload.key, upload.uploadId, span.index + 1, body, span.size, md5, timeout(span.size));
    if ("error" in sent) return `UploadPart ${span.index + 1} of ${spans.length}: ${sent.error}`;
    etags.push(sent.etag);
  }
  const done = await s3.completeUpload(bucket, upload.key, upload.uploadId, etags, REPLICA_MARK, timeout(0));
  if ("error" in done) return `CompleteMultipartUpload: ${done.error}`;
  if (done.etag.toLowerCase() === manifest.etag.toLowerCase()) return "";
  // A remote that checked every part's Content-MD5 holds the bytes, whatever multipart ETag it makes
  // (one that encrypts with KMS makes others), as long as it is one of N parts; only without those
  // checks must the ETag be the source's.
  if (everyPartChecked && done.etag.endsWith(`-${spans.length}`)) return "";
  return `the replica's ETag ${done.etag} is not the source's ${manifest.etag}`;
}

/**
 * Aborts multipart uploads whose abort failed when their attempt did (the remote was down), at most
 * LEFT_BATCH a run, CONCURRENCY at once; never throws. One whose target is no longer configured is
 * forgotten (nothing can reach it).
 */
async function abortLeftUploads(source: ReplicationSource, remotes: Record<string, ReplicationTarget>, policy: RetryPolicy): Promise<void> {
  const left = source.replication.uploadsLeft(LEFT_BATCH, Date.now());
  await mapBounded(left, CONCURRENCY, async (upload) => {
    const destination = destinationOfTarget(upload.target);
    const remote = destination ? remotes[destination.remote] : undefined;
    if (!destination || !remote) source.replication.uploadEnded(upload);
    else await abortOrNote(source, new S3Remote(remote), destination.bucket, upload, policy);
  });
}

/** Aborts `upload`: forgotten once gone, else its next abort put off (or, after the last, given up and counted). Never throws. */
async function abortOrNote(source: ReplicationSource, s3: S3Remote, bucket: string, upload: RemoteUpload, policy: RetryPolicy): Promise<void> {
  let error: string | null;
  try {
    error = await s3.abortUpload(bucket, upload.key, upload.uploadId, abortTimeout(policy));
  } catch (e) {
    error = errorText(e);
  }
  if (error === null) source.replication.uploadEnded(upload);
  else if (source.replication.uploadAbortFailed(upload, Date.now(), policy)) metrics.add("shardgate_replication_uploads_abandoned_total", 1);
}

/**
 * What marks the writes and deletes of a replication run at a remote as replicas: a gateway like
 * this one never replicates them again (meta/replication-rules.ts REPLICA_HEADER); another S3
 * server ignores the header.
 */
const REPLICA_MARK: Record<string, string> = { [REPLICA_HEADER]: "true" };

/** The headers a replica is written with: content headers, x-amz-meta-*, x-amz-tagging, and REPLICA_MARK. */
export function remoteHeaders(manifest: Pick<Manifest, "headers" | "userMetadata" | "tags">): Record<string, string> {
  const headers: Record<string, string> = { ...REPLICA_MARK };
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
