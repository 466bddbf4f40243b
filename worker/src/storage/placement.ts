// Where a part's shard files go: which nodes, in which order.
import type { StorageNode } from "../shared/nodes";

/**
 * Rendezvous (highest-random-weight) placement: the `count` nodes with the highest hash of
 * (object identity, node id), in that order. Stable when nodes come and go: only the shards on a
 * removed node move. The manifest records the result, so later changes never lose data.
 */
export async function placeShards(nodes: readonly StorageNode[], identity: string, count: number): Promise<StorageNode[]> {
  const scored = await Promise.all(
    nodes.map(async (node) => {
      const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(`${identity}\u0000${node.id}`));
      return { node, score: new DataView(digest).getBigUint64(0) };
    }),
  );
  scored.sort((a, b) => (a.score > b.score ? -1 : a.score < b.score ? 1 : 0));
  return scored.slice(0, count).map((s) => s.node);
}
