// Deleting parts' shard files: after an overwrite or delete committed, after a failed write, or
// when a multipart upload is completed (unused parts), aborted or expires. Best effort: a file
// left behind wastes space but is never referenced again. Their block cache entries go too.
import type { ManifestPart } from "../shared/core-api";
import { nodesById, shardKey, type StorageNode } from "../shared/nodes";
import { forgetParts } from "./block-cache";

/**
 * Deletes the shard files of `parts`, except those of storage ids in `keep` (parts that a new
 * manifest still references, e.g. after a copy onto itself that only replaced metadata).
 */
export async function removeParts(nodes: readonly StorageNode[], parts: readonly ManifestPart[], keep: ReadonlySet<string> = new Set()): Promise<void> {
  const byId = nodesById(nodes);
  const gone = parts.filter((p) => p.layout.type === "sharded" && !keep.has(p.layout.storageId));
  const deletions: Promise<unknown>[] = [forgetParts(gone)];
  for (const part of gone) {
    if (part.layout.type !== "sharded") continue;
    const { storageId, placement } = part.layout;
    deletions.push(...placement.map((nodeId, shard) => byId.get(nodeId)?.delete([shardKey(storageId, shard)]) ?? Promise.resolve()));
  }
  await Promise.allSettled(deletions);
}

/** The storage ids a set of parts keeps its shard files under. */
export function storageIds(parts: readonly ManifestPart[]): Set<string> {
  return new Set(parts.flatMap((p) => (p.layout.type === "sharded" ? [p.layout.storageId] : [])));
}

/**
 * Deletes one part's shard files: null when every file is gone (a node no longer configured
 * counts as gone), else why not (the first failure; files already deleted stay deleted).
 */
export async function removePart(nodes: readonly StorageNode[], part: ManifestPart): Promise<string | null> {
  if (part.layout.type !== "sharded") return null;
  const byId = nodesById(nodes);
  const { storageId, placement } = part.layout;
  // Its cache entries go beside the files (lifecycle expiry frees parts through here too), never before them.
  const [, ...results] = await Promise.allSettled([
    forgetParts([part]),
    ...placement.map((nodeId, shard) => byId.get(nodeId)?.delete([shardKey(storageId, shard)])),
  ]);
  const failed = results.find((r) => r.status === "rejected");
  return failed ? String(failed.reason) : null;
}
