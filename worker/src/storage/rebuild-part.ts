// Healing: putting back shard files that are missing, truncated or rotten. The part's bytes are
// read from any k survivors (the ordinary read path, which reads around bad shard files) and
// encoded again; encoding is deterministic, so each rebuilt file is bit-identical to the one first
// written. It goes back under the same key on the node the manifest names or, when that node is
// gone, refusing or does not take it, on a replacement (the caller records the move in the
// manifest). Memory is a block plus the sinks' queues, whatever the part's size.
import { errorText } from "../errors";
import type { GatewayConfig } from "../config";
import { partGeometry, type Core } from "../shared/core-api";
import { ExactReader } from "./exact-reader";
import { type ShardedPart, shardFileBytes } from "./layout";
import { GuardedNode } from "../shared/node-health";
import { NodeAnswerError, nodesById, shardKey, type StorageNode } from "../shared/nodes";
import type { LossReason } from "../shared/read-part";
import { placeShards } from "./placement";
import { openPartRange } from "./range-stream";
import { ShardSink } from "./shard-sink";
import { storeCodedShard } from "./coded-shard";
import { WriteAbandoned } from "../shared/storage-errors";

/**
 * The reasons to rebuild a shard file at once: its node answered, without the file or with rotten
 * bytes. A node that failed, is down or slow likely still has its file when it comes back: such
 * objects are queued instead, and the queue's heal looks again later (services/heal.ts).
 */
export const HEAL_NOW: ReadonlySet<LossReason> = new Set(["missing", "checksum"]);

export interface HealResult {
  /** Shard indices written back. */
  rebuilt: number[];
  /** Shard indices that could not be written (no node would take them). */
  failed: number[];
  /** Shards written to another node than the one the manifest names: [shard, node id]. The
   *  caller records the new placement in the manifest (or deletes them if it cannot). */
  moved: [number, string][];
}

/** What a HEAD of a shard file on its node says (shallow check). */
export type ShardHealth = "ok" | "missing" | "wrong-size" | "node-unconfigured" | "node-unreachable";

/** The health of every shard file of `part`: one HEAD each, in parallel. */
export async function shardHealth(config: GatewayConfig, core: Core, part: ShardedPart): Promise<ShardHealth[]> {
  const expected = shardFileBytes(core, part);
  const nodes = nodesById(config.nodes);
  return Promise.all(
    part.layout.placement.map(async (nodeId, shard): Promise<ShardHealth> => {
      const node = nodes.get(nodeId);
      if (!node) return "node-unconfigured";
      // A node that answers 4xx has lost the file (e.g. its bucket); one that does not answer, or
      // answers 5xx, may still have it.
      const size = await node
        .head(shardKey(part.layout.storageId, shard))
        .catch((e: unknown) => (e instanceof NodeAnswerError && e.status < 500 ? null : undefined));
      if (size === undefined) return "node-unreachable";
      return size === null ? "missing" : size === expected ? "ok" : "wrong-size";
    }),
  );
}

/** Shard files known bad by a HEAD: missing, of the wrong length, or on a node no longer configured. */
export function isBad(health: ShardHealth): boolean {
  return health === "missing" || health === "wrong-size" || health === "node-unconfigured";
}

/** The shard files of `part` a HEAD finds bad (a node that does not answer proves nothing). */
export async function missingShards(config: GatewayConfig, core: Core, part: ShardedPart): Promise<number[]> {
  return (await shardHealth(config, core, part)).flatMap((h, shard) => (isBad(h) ? [shard] : []));
}

/**
 * Shard files of `part` on nodes its placement would not choose today: a node being drained (not
 * writable), one no longer configured, or one that a node added since outranks in the part's
 * rendezvous order. Moving these onto the nodes placement does choose (rebuildShards' replacements
 * come in that same order) spreads data evenly over the writable nodes and empties drained ones.
 * Parts written while a node was refusing stand out too, and go back once it takes writes again.
 */
export async function misplacedShards(config: GatewayConfig, part: ShardedPart): Promise<number[]> {
  const { placement, storageId, dataShards, parityShards } = part.layout;
  const chosen = new Set((await placeShards(config.writableNodes, storageId, dataShards + parityShards)).map((n) => n.id));
  return placement.flatMap((node, shard) => (chosen.has(node) ? [] : [shard]));
}

/**
 * Rebuilds the given shard files of a part: onto the node the manifest names when it is
 * configured, reachable and not in `avoid` (nodes being drained), otherwise, or when that node
 * refuses the write, onto a replacement chosen by placement among the nodes the part does not
 * use yet. A shard the rebuild's own read finds bad is rebuilt too (in a later pass), so a heal
 * started from one lost shard also fixes the ones it meets.
 */
export async function rebuildShards(
  config: GatewayConfig,
  core: Core,
  part: ShardedPart,
  shards: readonly number[],
  avoid: ReadonlySet<string> = new Set(),
): Promise<HealResult> {
  const result: HealResult = { rebuilt: [], failed: [], moved: [] };
  const placement = [...part.layout.placement];
  const nodes = nodesById(config.nodes);
  let todo = [...new Set(shards)];
  // Pass 1 writes where the manifest says (when it can); pass 2 moves what that node refused;
  // pass 3 catches shards met along the way.
  let moveAll = false;
  for (let pass = 0; pass < 3 && todo.length > 0; pass++) {
    const targets = new Map<number, StorageNode>();
    const spares = await replacements(config, part.layout.storageId, placement, avoid);
    for (const shard of todo) {
      const home = nodes.get(placement[shard]);
      const usable = home && !avoid.has(home.id) && !(home instanceof GuardedNode && home.health.refusing);
      const target = usable && !moveAll ? home : spares.shift();
      if (target) targets.set(shard, target);
      else result.failed.push(shard);
    }
    const metAlongTheWay = new Set<number>();
    const written = await rebuildPass(config, core, part, targets, todo, (shard) => metAlongTheWay.add(shard));
    const refused: number[] = [];
    for (const [shard, node] of targets) {
      if (!written.has(shard)) {
        if (node.id === placement[shard] && !moveAll) refused.push(shard);
        else result.failed.push(shard);
        continue;
      }
      result.rebuilt.push(shard);
      if (node.id !== part.layout.placement[shard]) {
        placement[shard] = node.id;
        result.moved = result.moved.filter(([s]) => s !== shard);
        result.moved.push([shard, node.id]);
      }
    }
    const done = new Set([...result.rebuilt, ...result.failed]);
    moveAll = refused.length > 0;
    todo = moveAll ? refused : [...metAlongTheWay].filter((s) => !done.has(s));
  }
  return result;
}

/**
 * Moves intact shard files of a part (a drain, a rebalance) by copying each one from its node to
 * the next replacement (below), every chunk checked on the way (storage/coded-shard.ts): one file
 * read per file moved, where a rebuild reads k. Resolves with the files copied ([shard, node]: the
 * caller records them in the manifest, then removes the old ones) and those that could not be (a
 * node that fails, a file that does not check out): rebuild those instead.
 */
export async function moveShards(
  config: GatewayConfig,
  core: Core,
  part: ShardedPart,
  shards: readonly number[],
  avoid: ReadonlySet<string>,
): Promise<{ moved: [number, string][]; left: number[] }> {
  const { layout } = part;
  const nodes = nodesById(config.nodes);
  const spares = await replacements(config, layout.storageId, layout.placement, avoid);
  const moved: [number, string][] = [];
  const left: number[] = [];
  const geometry = core.geometry(partGeometry(part.size, layout));
  try {
    for (const shard of shards) {
      const from = nodes.get(layout.placement[shard]);
      const target = spares.shift();
      const key = shardKey(layout.storageId, shard);
      const body = from && target ? await from.get(key, 0, geometry.shardFileBytes).catch(() => null) : null;
      if (!body || !target) {
        left.push(shard);
        continue;
      }
      const verifier = core.shardVerifier(geometry, shard);
      try {
        await storeCodedShard(target, key, body, verifier);
        moved.push([shard, target.id]);
      } catch {
        left.push(shard);
        spares.unshift(target); // it took nothing: the next file may go there
      } finally {
        verifier.free();
      }
    }
  } finally {
    geometry.free();
  }
  return { moved, left };
}

/**
 * Nodes a part's shard files can move to: writable, not in `avoid`, holding none of the part's
 * shard files, those with a closed breaker first, each group in the part's rendezvous order.
 */
async function replacements(config: GatewayConfig, storageId: string, placement: readonly string[], avoid: ReadonlySet<string>): Promise<StorageNode[]> {
  const used = new Set(placement);
  const candidates = config.writableNodes.filter((n) => !used.has(n.id) && !avoid.has(n.id));
  const ordered = await placeShards(candidates, storageId, candidates.length);
  const up = ordered.filter((n) => !(n instanceof GuardedNode && n.health.refusing));
  return [...up, ...ordered.filter((n) => !up.includes(n))];
}

/** Re-encodes the part from k survivors (never reading `avoid`) into the target of each shard. */
async function rebuildPass(
  config: GatewayConfig,
  core: Core,
  part: ShardedPart,
  targets: ReadonlyMap<number, StorageNode>,
  avoid: readonly number[],
  lost: (shard: number) => void,
): Promise<Set<number>> {
  const { layout } = part;
  if (targets.size === 0) return new Set();
  const geometry = core.geometry(partGeometry(part.size, layout));
  const sinks = new Map(
    [...targets].map(([shard, node]) => [shard, new ShardSink(node, shardKey(layout.storageId, shard), geometry.shardFileBytes, config.nodeStallMs)]),
  );
  const encoder = core.encoder(geometry);
  let body: ReadableStream<Uint8Array> | undefined;
  try {
    // The shards being rebuilt are not read: they are the ones in doubt.
    // Files found missing or rotten on the way are rebuilt too; a slow or failing node's are not
    // (its file is likely intact).
    const events = { shardLost: (_id: string, shard: number, why: LossReason) => HEAL_NOW.has(why) && lost(shard) };
    body = await openPartRange(config, core, part, 0, part.size, events, avoid);
    const reader = new ExactReader(body);
    const block = new Uint8Array(Math.min(layout.blockBytes, part.size));
    for (let len = encoder.nextBlockLength; len > 0; len = encoder.nextBlockLength) {
      const bytes = block.subarray(0, len);
      await reader.fill(bytes);
      const writes: Promise<void>[] = [];
      // The encoder's output views are only valid during the callback: each goes into its
      // sink's stream (which copies it) before the callback returns.
      encoder.encode(bytes, (shard, framed) => {
        const sink = sinks.get(shard);
        if (sink) writes.push(sink.write(framed));
      });
      await Promise.all(writes);
    }
  } catch (e) {
    const abandoned = new WriteAbandoned(errorText(e));
    for (const sink of sinks.values()) sink.abort(abandoned);
    await body?.cancel().catch(() => {});
    throw e;
  } finally {
    encoder.free();
    geometry.free();
  }
  const closed = await Promise.all([...sinks].map(async ([shard, sink]) => [shard, await sink.close()] as const));
  return new Set(closed.flatMap(([shard, ok]) => (ok ? [shard] : [])));
}
