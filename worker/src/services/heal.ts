// Healing, as a service of plain functions. One object is healed by `healObject`: its bad shard files are
// rebuilt onto their nodes or, when a node is gone, onto a replacement whose id then replaces
// the old one in the manifest (a compare-and-swap, so a concurrent overwrite wins). Intact shard
// files that belong elsewhere (a node drained, or placement choosing another node now: rebalancing)
// are copied there the same way. It runs:
//   - after a read that had to go around shard files (heal on read);
//   - over the bucket's heal queue (writes that missed nodes, reads that could not heal at once):
//     `POST /_shardgate/admin/heal` without a bucket, and the scheduler (jobs/scheduler.ts);
//   - over a bucket or a prefix of it: `POST /_shardgate/admin/heal?bucket=B`, in bounded batches
//     that resume from the key they stopped at, so a failed object never restarts the walk;
//   - from the scrub's walk (services/scrub.ts), which also rebalances.
import { errorText } from "../errors";
import { mapBounded } from "../shared/bounded";
import { equalBytes } from "../shared/bytes";
import type { Env, GatewayConfig } from "../config";
import type { Core, Manifest, ManifestPart } from "../shared/core-api";
import { bucketIndex as indexOf, orNullWithoutBucket, bucketRegistry as registryOf } from "../meta/stubs";
import type { HealQueueEntry, ObjectRecord } from "../meta/types";
import { metrics } from "../observability/metrics";
import { HEAL_NOW, isBad, misplacedShards, moveShards, rebuildShards, shardHealth, type HealResult } from "../storage/rebuild-part";
import { isSharded, shardFileBytes } from "../storage/layout";
import { nodesById, shardKey } from "../shared/nodes";
import type { LossReason } from "../shared/read-part";

/** Shard files a read went around, by the storage id of their part, with why. */
export type LostShards = Map<string, Map<number, LossReason>>;

/** What healing needs: no request, so background jobs can heal too. */
export interface HealContext {
  env: Env;
  config: GatewayConfig;
  core: Core;
  /** The request a heal on read follows, for its log line. */
  requestId?: string;
}

const bucketIndex = (ctx: HealContext, bucket: string) => indexOf(ctx.env, bucket);
const bucketRegistry = (ctx: HealContext) => registryOf(ctx.env);
/** The object under `key` (its current version, or version `versionId`), null also when its bucket is gone: nothing to heal. */
const objectOf = async (ctx: HealContext, bucket: string, key: string, versionId?: string | null) =>
  (await orNullWithoutBucket(bucketIndex(ctx, bucket).head(key, versionId)))?.object ?? null;

export interface ObjectHeal {
  rebuilt: number;
  failed: number;
  /** Shard files rebuilt on another node than before (node lost or drained). */
  moved: number;
  /** Bytes of shard files written. */
  bytes: number;
  /** Shard files left alone because their node did not answer (heal them when it does). */
  deferred: number;
}

const NOTHING: ObjectHeal = { rebuilt: 0, failed: 0, moved: 0, bytes: 0, deferred: 0 };

export interface HealOptions {
  /** Shard files known bad, by storage id. */
  known?: ReadonlyMap<string, Iterable<number>>;
  /** Also check every shard file's presence and length on its node (shallow). */
  check?: boolean;
  /** With `check`: shard files on a node that does not answer are left for later ("defer": the
   *  queue, the node may come back with them) or rebuilt elsewhere now ("heal": an operator's walk). */
  unreachable?: "defer" | "heal";
  /** Move every shard file off this node (drain). */
  drain?: string;
  /** Also move shard files that placement would put elsewhere today (storage/rebuild-part.ts misplacedShards). */
  rebalance?: boolean;
  /** The version to heal (null: the null version); absent: the current one. */
  versionId?: string | null;
}

/**
 * Heals the object under `key` as it is now. Throws when the object cannot be read (too many
 * shard files unavailable) or its manifest could not be updated; shard files that no node would
 * take count as failed.
 */
export async function healObject(ctx: HealContext, bucket: string, key: string, opts: HealOptions): Promise<ObjectHeal> {
  const object = await objectOf(ctx, bucket, key, opts.versionId);
  if (!object) return NOTHING;
  const manifest = ctx.core.decodeManifest(object.manifest);
  const avoid = new Set(opts.drain ? [opts.drain] : []);
  const total = { ...NOTHING };
  const moves = new Map<string, [number, string][]>();
  try {
    for (const part of manifest.parts) {
      if (!isSharded(part)) continue;
      const { storageId, placement } = part.layout;
      const want = new Set(opts.known?.get(storageId) ?? []);
      if (opts.check) {
        const health = await shardHealth(ctx.config, ctx.core, part);
        health.forEach((h, shard) => {
          if (isBad(h) || (h === "node-unreachable" && opts.unreachable === "heal")) want.add(shard);
          else if (h === "node-unreachable" && want.delete(shard)) total.deferred += 1;
        });
      }
      // Intact shard files that belong elsewhere (on the node being drained, or misplaced) are
      // copied to their new node; those that cannot be join the bad ones in a rebuild. Their old
      // nodes are never targets, and stay readable until the manifest no longer names them.
      const movable = new Set<number>();
      if (opts.drain) placement.forEach((node, shard) => node === opts.drain && movable.add(shard));
      if (opts.rebalance) for (const shard of await misplacedShards(ctx.config, part)) movable.add(shard);
      for (const shard of want) movable.delete(shard);
      const away = new Set([...avoid, ...[...movable].map((shard) => placement[shard])]);
      const fileBytes = shardFileBytes(ctx.core, part);
      const copied = movable.size > 0 ? await moveShards(ctx.config, ctx.core, part, [...movable], away) : { moved: [], left: [] };
      total.bytes += copied.moved.length * fileBytes;
      // At most m shard files of a part are rebuilt at once (the rest need k to read from): moves
      // beyond that wait for the next pass.
      for (const shard of copied.left) if (want.size < part.layout.parityShards) want.add(shard);
      const result = want.size > 0 ? await rebuildShards(ctx.config, ctx.core, part, [...want], away) : { rebuilt: [], failed: [], moved: [] };
      count(result);
      total.rebuilt += result.rebuilt.length;
      total.failed += result.failed.length;
      total.bytes += result.rebuilt.length * fileBytes;
      const partMoves = [...copied.moved, ...result.moved];
      if (partMoves.length > 0) moves.set(storageId, partMoves);
    }
  } finally {
    // Files already moved for earlier parts are recorded (or removed) even if a later part failed.
    if (moves.size > 0) await recordMoves(ctx, bucket, object, manifest, moves);
  }
  total.moved = [...moves.values()].reduce((n, m) => n + m.length, 0);
  return total;
}

/**
 * Points the manifest at the shard files' new nodes, if the object is still the version healed;
 * then removes the old files (best effort: their node may be gone). If the object changed
 * meanwhile, the new files are removed instead and the heal fails.
 */
async function recordMoves(ctx: HealContext, bucket: string, object: ObjectRecord, manifest: Manifest, moves: Map<string, [number, string][]>): Promise<void> {
  const parts = manifest.parts.map((part): ManifestPart => {
    if (!isSharded(part) || !moves.has(part.layout.storageId)) return part;
    const placement = [...part.layout.placement];
    for (const [shard, node] of moves.get(part.layout.storageId) ?? []) placement[shard] = node;
    return { ...part, layout: { ...part.layout, placement } };
  });
  const next = ctx.core.encodeManifest({ ...manifest, parts });
  const index = bucketIndex(ctx, bucket);
  const outcome = await index.replace(object.manifest, { ...object, manifest: next });
  // Placements the object has now: a heal that lost the race to another one that moved the same
  // shard file to the same node (same key) must not delete the winner's file.
  const current = new Set<string>();
  if (outcome !== "replaced") {
    const now = await objectOf(ctx, bucket, object.key);
    for (const part of now ? ctx.core.decodeManifest(now.manifest).parts : []) {
      if (isSharded(part)) part.layout.placement.forEach((node, shard) => current.add(`${node} ${shardKey(part.layout.storageId, shard)}`));
    }
  }
  const nodes = nodesById(ctx.config.nodes);
  const removals: Promise<void>[] = [];
  for (const part of manifest.parts) {
    if (!isSharded(part)) continue;
    for (const [shard, node] of moves.get(part.layout.storageId) ?? []) {
      const stale = outcome === "replaced" ? part.layout.placement[shard] : node;
      const file = shardKey(part.layout.storageId, shard);
      const holder = nodes.get(stale);
      if (holder && !current.has(`${stale} ${file}`)) removals.push(holder.delete([file]).catch(() => {}));
    }
  }
  await Promise.all(removals);
  if (outcome !== "replaced") throw new Error("the object changed while it was healed");
}

function count(result: HealResult): void {
  metrics.add("shardgate_heal_shards_total", result.rebuilt.length, { result: "rebuilt" });
  metrics.add("shardgate_heal_shards_total", result.failed.length, { result: "failed" });
}

/**
 * Heal on read, after the response: shard files that were missing or rotten are rebuilt now (if
 * the object is still the version read); shard files on a node that failed, is down or was slow
 * are only queued (the node may come back with them), and so is anything the rebuild could not
 * fix. Never throws.
 */
export async function healAfterRead(ctx: HealContext, bucket: string, key: string, read: ObjectRecord, lost: LostShards): Promise<void> {
  const now = new Map<string, number[]>();
  const later = new Map<string, number[]>();
  for (const [storageId, shards] of lost) {
    for (const [shard, why] of shards) {
      if (why === "slow") continue; // hedged: the node answers, late
      const into = HEAL_NOW.has(why) ? now : later;
      into.set(storageId, [...(into.get(storageId) ?? []), shard]);
    }
  }
  if (now.size + later.size === 0) return;
  const index = bucketIndex(ctx, bucket);
  // The queue holds current objects (a noncurrent version read around a node is left to the scrub).
  const queue = (reason: string, shards: Map<string, number[]>) => index.queueHeal(key, read.manifest, reason, Object.fromEntries(shards));
  try {
    if (later.size > 0) await queue("read around a failed or unavailable node", later);
    if (now.size === 0) return;
    // An overwrite or delete since removes these shard files on purpose: do not put them back.
    const object = await objectOf(ctx, bucket, key, read.versionId);
    if (!object || !equalBytes(object.manifest, read.manifest)) return;
    const result = await healObject(ctx, bucket, key, { known: now, versionId: read.versionId });
    if (result.failed > 0) await queue("read found shard files it could not rebuild", now);
  } catch (e) {
    console.error(JSON.stringify({ requestId: ctx.requestId, heal: `${bucket}/${key}`, error: errorText(e) }));
    await queue(`heal on read failed: ${errorText(e)}`, now).catch(() => {});
  }
}

/**
 * Heals one queued object and updates its entry: null when healed, else why not. The attempt is
 * counted before the work, so an entry whose heal never returns (a CPU limit) sorts behind the
 * others next time instead of blocking the queue.
 */
async function healQueued(ctx: HealContext, bucket: string, entry: HealQueueEntry): Promise<string | null> {
  const index = bucketIndex(ctx, bucket);
  await index.healStarted(entry.key);
  let error: string | null;
  try {
    const known = new Map(Object.entries(entry.shards ?? {}));
    const result = await healObject(ctx, bucket, entry.key, { known, check: true });
    if (result.failed > 0) error = `${result.failed} shard files could not be rebuilt (no node took them)`;
    else if (result.deferred > 0) error = `${result.deferred} shard files wait for their node to answer`;
    else error = null;
  } catch (e) {
    error = errorText(e);
  }
  await index.healed(entry.key, error, entry.since);
  return error;
}

/** Wall time after which a pass over the heal queues starts no further object (ms). */
const QUEUE_PASS_MS = 20_000;

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
  const started = Date.now();
  let budget = limit;
  for (const { name } of await bucketRegistry(ctx).list()) {
    const index = bucketIndex(ctx, name);
    const spent = budget <= 0 || Date.now() - started > QUEUE_PASS_MS;
    const { entries, pending } = await index.healQueue(spent ? 0 : budget);
    if (spent || pending === 0) {
      report.pending += pending;
      continue;
    }
    report.bucketsVisited += 1;
    for (const entry of entries) {
      if (Date.now() - started > QUEUE_PASS_MS) break;
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
  await mapBounded(keys, HEAL_CONCURRENCY, async (key) => {
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
  });
}
