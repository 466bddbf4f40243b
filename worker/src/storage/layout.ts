// How a part lies on the nodes, as the data path, heal, scrub and the direct path all need it: a
// part coded into shard files (not inline in its manifest), and how long each of its shard files is.
import { type Core, type ManifestPart, partGeometry, type ShardedLayout } from "../shared/core-api";

export type ShardedPart = ManifestPart & { layout: { type: "sharded" } & ShardedLayout };

export function isSharded(part: ManifestPart): part is ShardedPart {
  return part.layout.type === "sharded";
}

/** The exact length of each of a part's shard files (framed chunks included), from its size and geometry. */
export function shardFileBytes(core: Core, part: { size: number; layout: Parameters<typeof partGeometry>[1] }): number {
  const geometry = core.geometry(partGeometry(part.size, part.layout));
  const bytes = geometry.shardFileBytes;
  geometry.free();
  return bytes;
}
