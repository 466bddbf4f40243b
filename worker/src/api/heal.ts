// Healing from the request side. One object is healed by `healObject`: its bad shard files are
// rebuilt onto their nodes or, when a node is gone, onto a replacement whose id then replaces
// the old one in the manifest (a compare-and-swap, so a concurrent overwrite wins). It runs:
//   - after a read that had to go around shard files (heal on read);
//   - over the bucket's heal queue (writes that missed nodes, reads that could not heal at once):
//     `POST /_shardgate/admin/heal` without a bucket, and the cron (worker/src/index.ts);
//   - over a bucket or a prefix of it: `POST /_shardgate/admin/heal?bucket=B`, in bounded batches
//     that resume from the key they stopped at, so a failed object never restarts the walk.
import { loadConfig, type Env } from "../config";
import { core } from "../core";
import type { Manifest, ManifestPart } from "../core-api";
import type { HealQueueEntry } from "../meta/types";
import { metrics } from "../observability/metrics";
import { S3Error } from "../s3-error";
import { isSharded, missingShards, rebuildShards, shardFileBytes, type HealResult } from "../storage/heal";
import { shardKey } from "../storage/nodes";
import type { LossReason } from "../storage/read-part";
import { noSuchBucket } from "./bucket";
import { bucketIndex, bucketRegistry, type RequestContext } from "./context";

/** Shard files a read went around, by the storage id of their part, with why. */
export type LostShards = Map<string, Map<number, LossReason>>;

/** What healing needs: no request, so the cron can heal too. */
export type HealContext = Pick<RequestContext, "env" | "config" | "core">;

export interface ObjectHeal {
  rebuilt: number;
  failed: number;
  /** Shard files rebuilt on another node than before (node lost or drained). */
  moved: number;
  /** Bytes of shard files written. */
  bytes: number;
}

const NOTHING: ObjectHeal = { rebuilt: 0, failed: 0, moved: 0, bytes: 0 };

/**
 * Reasons worth rebuilding at once: a node that answered without the file, or with rotten bytes.
 * A node that failed, is down (breaker open) or slow likely still has its file when it comes
 * back: those objects are queued, and the queue's heal (cron or admin) checks them later.
 */
const HEAL_NOW: ReadonlySet<LossReason> = new Set(["missing", "checksum"]);

export interface HealOptions {
  /** Shard files known bad, by storage id. */
  known?: ReadonlyMap<string, Iterable<number>>;
  /** Also check every shard file's presence and length on its node (shallow). */
  check?: boolean;
  /** Move every shard file off this node (drain). */
  drain?: string;
}

/**
 * Heals the object under `key` as it is now. Throws when the object cannot be read (too many
 * shard files unavailable) or its manifest could not be updated; shard files that no node would
 * take count as failed.
 */
export async function healObject(ctx: HealContext, bucket: string, key: string, opts: HealOptions): Promise<ObjectHeal> {
  const index = bucketIndex(ctx, bucket);
  const { object } = await index.head(key);
  if (!object) return NOTHING;
  const manifest = ctx.core.decodeManifest(object.manifest);
  const avoid = new Set(opts.drain ? [opts.drain] : []);
  const total = { ...NOTHING };
  const moves = new Map<string, [number, string][]>();
  for (const part of manifest.parts) {
    if (!isSharded(part)) continue;
    const { storageId, placement } = part.layout;
    const want = new Set(opts.known?.get(storageId) ?? []);
    if (opts.check) for (const shard of await missingShards(ctx.config, ctx.core, part)) want.add(shard);
    if (opts.drain) placement.forEach((node, shard) => node === opts.drain && want.add(shard));
    if (want.size === 0) continue;
    const result = await rebuildShards(ctx.config, ctx.core, part, [...want], avoid);
    count(result);
    total.rebuilt += result.rebuilt.length;
    total.failed += result.failed.length;
    total.bytes += result.rebuilt.length * shardFileBytes(ctx.core, part);
    if (result.moved.length > 0) moves.set(storageId, result.moved);
  }
  if (moves.size > 0) await recordMoves(ctx, bucket, object, manifest, moves);
  total.moved = [...moves.values()].reduce((n, m) => n + m.length, 0);
  return total;
}

/**
 * Points the manifest at the shard files' new nodes, if the object is still the version healed;
 * then removes the old files (best effort: their node may be gone). If the object changed
 * meanwhile, the new files are removed instead and the heal fails.
 */
async function recordMoves(
  ctx: HealContext,
  bucket: string,
  object: { key: string; size: number; etag: string; lastModified: number; manifest: Uint8Array },
  manifest: Manifest,
  moves: Map<string, [number, string][]>,
): Promise<void> {
  const parts = manifest.parts.map((part): ManifestPart => {
    if (!isSharded(part) || !moves.has(part.layout.storageId)) return part;
    const placement = [...part.layout.placement];
    for (const [shard, node] of moves.get(part.layout.storageId) ?? []) placement[shard] = node;
    return { ...part, layout: { ...part.layout, placement } };
  });
  const next = ctx.core.encodeManifest({ ...manifest, parts });
  const outcome = await bucketIndex(ctx, bucket).replace(object.manifest, { ...object, manifest: next });
  const nodes = new Map(ctx.config.nodes.map((n) => [n.id, n]));
  const removals: Promise<void>[] = [];
  for (const part of manifest.parts) {
    if (!isSharded(part)) continue;
    for (const [shard, node] of moves.get(part.layout.storageId) ?? []) {
      const stale = outcome === "replaced" ? nodes.get(part.layout.placement[shard]) : nodes.get(node);
      if (stale) removals.push(stale.delete([shardKey(part.layout.storageId, shard)]).catch(() => {}));
    }
  }
  await Promise.all(removals);
  if (outcome !== "replaced") throw new Error("the object changed while it was healed");
}

function count(result: HealResult): void {
  metrics.add("shardgate_heal_shards_total", result.rebuilt.length, { result: "rebuilt" });
  metrics.add("shardgate_heal_shards_total", result.failed.length, { result: "failed" });
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Heal on read, after the response: shard files that were missing, failed or rotten are rebuilt
 * now; shard files on a node that is down or slow are only queued (the node may come back with
 * them), and so is anything the rebuild could not fix. Never throws.
 */
export async function healAfterRead(ctx: RequestContext, bucket: string, key: string, read: Uint8Array, lost: LostShards): Promise<void> {
  if (lost.size === 0) return;
  const known = new Map<string, number[]>();
  let now = false;
  for (const [storageId, shards] of lost) {
    const bad = [...shards].filter(([, why]) => why !== "slow");
    if (bad.length > 0) known.set(storageId, bad.map(([shard]) => shard));
    if (bad.some(([, why]) => HEAL_NOW.has(why))) now = true;
  }
  if (known.size === 0) return;
  const index = bucketIndex(ctx, bucket);
  try {
    if (now) {
      // An overwrite or delete since removes these shard files on purpose: do not put them back.
      const { object } = await index.head(key);
      if (!object || !equalBytes(object.manifest, read)) return;
      const result = await healObject(ctx, bucket, key, { known });
      if (result.failed === 0) return;
    }
    await index.queueHeal(key, read, now ? "read found shard files it could not rebuild" : "read around a failed or unavailable node", Object.fromEntries(known));
  } catch (e) {
    console.error(JSON.stringify({ requestId: ctx.requestId, heal: `${bucket}/${key}`, error: errorText(e) }));
    await index.queueHeal(key, read, `heal on read failed: ${errorText(e)}`, Object.fromEntries(known)).catch(() => {});
  }
}

/** Heals one queued object and updates its entry: null when healed, else why not. */
async function healQueued(ctx: HealContext, bucket: string, entry: HealQueueEntry): Promise<string | null> {
  let error: string | null;
  try {
    const known = new Map(Object.entries(entry.shards ?? {}));
    const result = await healObject(ctx, bucket, entry.key, { known, check: true });
    error = result.failed > 0 ? `${result.failed} shard files could not be rebuilt` : null;
  } catch (e) {
    error = errorText(e);
  }
  await bucketIndex(ctx, bucket).healed(entry.key, error);
  return error;
}

export interface QueueReport {
  bucketsVisited: number;
  objectsHealed: number;
  objectsFailed: { bucket: string; key: string; error: string }[];
  /** Entries still queued, over all buckets, after this run. */
  pending: number;
}

/**
 * Works through every bucket's heal queue, at most `limit` objects in all (entries that keep
 * failing sort after the others, so they never block the queue).
 */
export async function healQueues(ctx: HealContext, limit: number): Promise<QueueReport> {
  const report: QueueReport = { bucketsVisited: 0, objectsHealed: 0, objectsFailed: [], pending: 0 };
  let budget = limit;
  for (const { name } of await bucketRegistry(ctx).list()) {
    report.bucketsVisited += 1;
    const index = bucketIndex(ctx, name);
    const { entries } = await index.healQueue(Math.max(budget, 0));
    for (const entry of entries) {
      budget -= 1;
      const error = await healQueued(ctx, name, entry);
      if (error === null) report.objectsHealed += 1;
      else report.objectsFailed.push({ bucket: name, key: entry.key, error });
    }
    report.pending += (await index.healQueue(0)).pending;
  }
  return report;
}

/** The heal queue as `GET /_shardgate/admin/heal` shows it: its size and its oldest entries. */
export async function healQueueStatus(ctx: HealContext, shown = 50): Promise<{ pending: number; objects: (HealQueueEntry & { bucket: string })[] }> {
  let pending = 0;
  const objects: (HealQueueEntry & { bucket: string })[] = [];
  for (const { name } of await bucketRegistry(ctx).list()) {
    const queue = await bucketIndex(ctx, name).healQueue(Math.max(shown - objects.length, 0));
    pending += queue.pending;
    objects.push(...queue.entries.map((e) => ({ ...e, bucket: name })));
  }
  return { pending, objects };
}

/** Queued objects the Cron Trigger heals per run, before its scrub step. */
const CRON_HEAL_OBJECTS = 200;

/** The Cron Trigger's first job: work through the heal queues (bounded), logged as one JSON line. Never throws. */
export async function scheduledHeal(env: Env): Promise<void> {
  try {
    console.log(JSON.stringify({ healQueue: await healQueues({ env, config: loadConfig(env), core }, CRON_HEAL_OBJECTS) }));
  } catch (e) {
    console.error(JSON.stringify({ healQueue: { error: errorText(e) } }));
  }
}

const DEFAULT_BATCH = 100;
const MAX_BATCH = 1000;

function batchSize(params: URLSearchParams): number {
  return Math.min(Math.max(Number(params.get("max-objects") ?? DEFAULT_BATCH) || DEFAULT_BATCH, 1), MAX_BATCH);
}

/** What a batch of heals did: the walk's and the drain's reports. */
export interface HealTally {
  objectsChecked: number;
  shardsRebuilt: number;
  shardsMoved: number;
  shardsFailed: number;
  bytesRebuilt: number;
  /** Objects that could not be healed (whole), and why; the batch went on past them. */
  objectsFailed: { bucket: string; key: string; error: string }[];
}

export function emptyTally(): HealTally {
  return { objectsChecked: 0, shardsRebuilt: 0, shardsMoved: 0, shardsFailed: 0, bytesRebuilt: 0, objectsFailed: [] };
}

/** Objects healed at once by a batch: a few parts' reads and writes overlap, memory stays bounded. */
const HEAL_CONCURRENCY = 4;

/** Heals `keys` of a bucket, HEAL_CONCURRENCY at a time, adding to `tally`. A fully checked and healed object leaves the heal queue. */
export async function healEach(ctx: HealContext, bucket: string, keys: readonly string[], opts: HealOptions, tally: HealTally): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++];
      tally.objectsChecked += 1;
      try {
        const result = await healObject(ctx, bucket, key, opts);
        tally.shardsRebuilt += result.rebuilt;
        tally.shardsMoved += result.moved;
        tally.shardsFailed += result.failed;
        tally.bytesRebuilt += result.bytes;
        if (result.failed > 0) tally.objectsFailed.push({ bucket, key, error: `${result.failed} shard files could not be rebuilt (no node took them)` });
        else if (opts.check) await bucketIndex(ctx, bucket).healed(key, null);
      } catch (e) {
        tally.objectsFailed.push({ bucket, key, error: errorText(e) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(HEAL_CONCURRENCY, keys.length) }, worker));
}

/**
 * `POST /_shardgate/admin/heal?bucket=B[&prefix=P][&start-after=K][&max-objects=N]`: checks that
 * every shard file of up to N objects is on its node at its full length, rebuilds those that are
 * not, and answers a JSON report with the key to continue after. Without `bucket`: works through
 * the heal queues of every bucket (up to N objects).
 */
export async function adminHeal(ctx: RequestContext): Promise<Response> {
  const params = ctx.url.searchParams;
  const bucket = params.get("bucket");
  if (bucket === null) return json(await healQueues(ctx, batchSize(params)));
  if (bucket === "") throw new S3Error(400, "InvalidArgument", "Name the bucket to heal (?bucket=NAME), or none to work through the heal queues.");
  const prefix = params.get("prefix") ?? "";
  const index = bucketIndex(ctx, bucket);
  const [info, page] = await Promise.all([index.info(), index.list({ prefix, delimiter: null, after: params.get("start-after") || null, maxKeys: batchSize(params) })]);
  if (!info) throw noSuchBucket(bucket);
  const tally = emptyTally();
  await healEach(ctx, bucket, page.objects.map((o) => o.key), { check: true }, tally);
  // `next`: where the next batch starts (the `start-after` to send), or null when the walk is done.
  return json({ bucket, prefix, ...tally, next: page.isTruncated ? page.last : null });
}

/** The admin endpoints' answers: JSON, never cached (they show live state). */
export function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value, null, 2), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } });
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
