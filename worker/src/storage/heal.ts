// Healing: putting back shard files that are missing, truncated or rotten. The part's bytes are
// read from any k survivors (the ordinary read path, which reads around bad shard files) and
// encoded again; encoding is deterministic, so each rebuilt file is bit-identical to the one first
// written, and it goes back under the same key on the node the manifest names. Memory is a block
// plus the sinks' queues, whatever the part's size.
import type { GatewayConfig } from "../config";
import type { Core, ManifestPart, ShardedLayout } from "../core-api";
import { ExactReader } from "./exact-reader";
import { shardKey, type StorageNode } from "./nodes";
import { openPartRange } from "./read-part";
import { ShardSink } from "./shard-sink";

export type ShardedPart = ManifestPart & { layout: { type: "sharded" } & ShardedLayout };

export function isSharded(part: ManifestPart): part is ShardedPart {
  return part.layout.type === "sharded";
}

export interface HealResult {
  /** Shard indices written back. */
  rebuilt: number[];
  /** Shard indices that could not be written (their node refused or is not configured). */
  failed: number[];
}

/** The shard files of `part` that are missing or of the wrong length on their nodes (shallow check). */
export async function missingShards(config: GatewayConfig, core: Core, part: ShardedPart): Promise<number[]> {
  const { layout } = part;
  const geometry = core.geometry({ size: part.size, blockBytes: layout.blockBytes, dataShards: layout.dataShards, parityShards: layout.parityShards, chunkBytes: layout.chunkBytes });
  const expected = geometry.shardFileBytes;
  geometry.free();
  const nodes = nodeMap(config);
  const sizes = await Promise.all(
    layout.placement.map(async (nodeId, shard) => {
      const node = nodes.get(nodeId);
      return node ? await node.head(shardKey(layout.storageId, shard)).catch(() => null) : null;
    }),
  );
  return sizes.flatMap((size, shard) => (size === expected ? [] : [shard]));
}

/**
 * Rebuilds the given shard files of a part. A shard the rebuild's own read finds bad is rebuilt
 * too (in a second pass), so a heal started from one lost shard also fixes the ones it meets.
 */
export async function rebuildShards(config: GatewayConfig, core: Core, part: ShardedPart, shards: readonly number[]): Promise<HealResult> {
  const rebuilt: number[] = [];
  const failed: number[] = [];
  let todo = [...new Set(shards)];
  for (let pass = 0; pass < 2 && todo.length > 0; pass++) {
    const metAlongTheWay = new Set<number>();
    const result = await rebuildPass(config, core, part, todo, (shard) => metAlongTheWay.add(shard));
    rebuilt.push(...result.rebuilt);
    failed.push(...result.failed);
    todo = [...metAlongTheWay].filter((s) => !rebuilt.includes(s) && !failed.includes(s));
  }
  return { rebuilt, failed };
}

async function rebuildPass(config: GatewayConfig, core: Core, part: ShardedPart, shards: number[], lost: (shard: number) => void): Promise<HealResult> {
  const { layout } = part;
  const nodes = nodeMap(config);
  const geometry = core.geometry({ size: part.size, blockBytes: layout.blockBytes, dataShards: layout.dataShards, parityShards: layout.parityShards, chunkBytes: layout.chunkBytes });
  const sinks = new Map<number, ShardSink>();
  const failed: number[] = [];
  for (const shard of shards) {
    const node = nodes.get(layout.placement[shard]);
    if (node) sinks.set(shard, new ShardSink(node, shardKey(layout.storageId, shard), geometry.shardFileBytes, config.nodeStallMs));
    else failed.push(shard);
  }
  if (sinks.size === 0) {
    geometry.free();
    return { rebuilt: [], failed };
  }
  const encoder = core.encoder(geometry);
  try {
    // The shards being rebuilt are not read: they are the ones in doubt.
    const body = await openPartRange(config, core, part, 0, part.size, { shardLost: (_id, shard) => lost(shard) }, shards);
    const reader = new ExactReader(body);
    const block = new Uint8Array(Math.min(layout.blockBytes, part.size));
    for (let len = encoder.nextBlockLength; len > 0; len = encoder.nextBlockLength) {
      const bytes = block.subarray(0, len);
      await reader.fill(bytes);
      const writes: Promise<void>[] = [];
      // The encoder's output views are only valid during the callback: copy what is kept.
      encoder.encode(bytes, (shard, framed) => {
        const sink = sinks.get(shard);
        if (sink) writes.push(sink.write(framed.slice()));
      });
      await Promise.all(writes);
    }
  } catch (e) {
    for (const sink of sinks.values()) sink.abort(e);
    throw e;
  } finally {
    encoder.free();
    geometry.free();
  }
  const rebuilt: number[] = [];
  for (const [shard, sink] of sinks) ((await sink.close()) ? rebuilt : failed).push(shard);
  return { rebuilt, failed };
}

function nodeMap(config: GatewayConfig): Map<string, StorageNode> {
  return new Map(config.nodes.map((n) => [n.id, n]));
}
