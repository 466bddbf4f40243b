// Deleting a manifest's shard files: after an overwrite or delete committed, or after a failed
// write. Best effort: a file left behind wastes space but is never referenced again.
import type { RequestContext } from "../api/context";
import type { Manifest } from "../core-api";
import { shardKey } from "./nodes";

export async function removePartData(ctx: Pick<RequestContext, "config">, manifest: Pick<Manifest, "parts">): Promise<void> {
  const nodes = new Map(ctx.config.nodes.map((n) => [n.id, n]));
  const deletions = manifest.parts.flatMap((part) => {
    if (part.layout.type !== "sharded") return [];
    const { storageId, placement } = part.layout;
    return placement.map((nodeId, shard) => nodes.get(nodeId)?.delete([shardKey(storageId, shard)]));
  });
  await Promise.allSettled(deletions);
}
