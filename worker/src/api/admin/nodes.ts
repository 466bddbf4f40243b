// The gateway's own view of its nodes and of an object's layout, for operators and the console:
//   GET  /_shardgate/admin/nodes                 every node's breaker state, latency, errors, where it
//                                                comes from (configured | added), its state and whether a
//                                                drain walk found it empty; and the block cache's hits,
//                                                misses and what its store holds
//   POST /_shardgate/admin/nodes/{id}/drain      move every shard file off a draining node, in batches
//   GET  /_shardgate/admin/object?bucket=B&key=K an object's erasure layout and each shard's health
// (Adding, marking and removing nodes: node-changes.ts.)
import { S3Error, noSuchKey } from "../../s3-error";
import { shardHealth } from "../../storage/rebuild-part";
import { isSharded, shardFileBytes } from "../../storage/layout";
import { GuardedNode, nodeHealth } from "../../shared/node-health";
import { bucketIndex, bucketRegistry, type RequestContext } from "../http/context";
import { emptyTally, type HealTally, healEach } from "../../services/heal";
import { freshGatewayConfig } from "../../config";
import { drainSettleWait, nodeFacts, noSuchNode, overlaySource, recordDrainBatch } from "../../services/node-overlay";
import { partsOnNode } from "../../services/orphans";
import { json } from "../http/json";
import { blockCacheStatus } from "../../services/cache-status";

export async function adminNodes(ctx: RequestContext): Promise<Response> {
  const [config, facts, cache] = await Promise.all([freshGatewayConfig(ctx.env, overlaySource(ctx.env)), nodeFacts(ctx.env), blockCacheStatus(ctx.env)]);
  const draining = new Set(config.nodes.filter((n) => !config.writableNodes.includes(n)).map((n) => n.id));
  const nodes = config.nodes.map((node) => {
    const health = node instanceof GuardedNode ? node.health : nodeHealth(node.id);
    const fact = facts.get(node.id);
    const added = fact?.source === "added" ? { endpoint: fact.endpoint, bucket: fact.bucket, region: fact.region } : {};
    const drainedAt = draining.has(node.id) && fact?.drainedAt ? new Date(fact.drainedAt).toISOString() : null;
    return { ...health.status(node.kind), draining: draining.has(node.id), source: fact?.source ?? "configured", ...added, drainedAt };
  });
  // The code new objects are written with: k data and m parity shards (a read needs any k nodes).
  const { dataShards, parityShards } = config;
  return json({ dataShards, parityShards, writableNodes: config.writableNodes.length, nodes, cache });
}

/** An object's parts, geometry and shard placement, with a HEAD of every shard file (shallow health). */
export async function adminObject(ctx: RequestContext, { bucket, key }: { bucket: string; key: string }): Promise<Response> {
  const { object } = await bucketIndex(ctx, bucket).head(key);
  if (!object) throw noSuchKey();
  const manifest = ctx.core.decodeManifest(object.manifest);
  const parts = await Promise.all(
    manifest.parts.map(async (part, i) => {
      if (!isSharded(part)) return { partNumber: i + 1, size: part.size, type: "inline" as const };
      const { layout } = part;
      const expected = shardFileBytes(ctx.core, part);
      const health = await shardHealth(ctx.config, ctx.core, part);
      const shards = layout.placement.map((node, index) => ({
        index,
        kind: index < layout.dataShards ? ("data" as const) : ("parity" as const),
        node,
        health: health[index],
      }));
      return {
        partNumber: i + 1,
        size: part.size,
        type: "sharded" as const,
        dataShards: layout.dataShards,
        parityShards: layout.parityShards,
        blockBytes: layout.blockBytes,
        chunkBytes: layout.chunkBytes,
        blocks: Math.ceil(part.size / layout.blockBytes),
        shardFileBytes: expected,
        storageId: layout.storageId,
        shards,
      };
    }),
  );
  return json({ bucket, key, size: object.size, etag: object.etag, lastModified: object.lastModified, parts });
}

/** Where a drain call begins (its query), and where the next one goes on. */
type DrainQuery = { bucket: string; "start-after": string | null; "max-objects": number };
type DrainNext = { bucket: string; startAfter: string };

/**
 * `POST /_shardgate/admin/nodes/{id}/drain[?bucket=B&start-after=K][&max-objects=N]`: rebuilds
 * every shard file the node holds onto other nodes and points the manifests at them, up to N
 * objects per call, walking the buckets in name order and their keys in order. The answer's
 * `next` ({bucket, startAfter}: send both back) is where the next call goes on; null when the walk
 * is over. The node is empty then unless objects failed (reported, passed, never retried from the
 * start: run the walk again) or multipart uploads still in progress placed parts on it.
 *
 * A walk that begins at the start (no bucket, no start-after) and ends with no failure, begun once
 * every isolate has seen the node draining (it waits for that, a few seconds at most), is counted:
 * at its end every manifest is checked for parts still placed on the node (noncurrent versions,
 * uploads in progress, garbage not yet collected: `partsLeft`), and with none the node is recorded
 * drained (`drained`), which is what removing an added node needs.
 */
export async function adminDrain(ctx: RequestContext, nodeId: string, q: DrainQuery): Promise<Response> {
  const config = await freshGatewayConfig(ctx.env, overlaySource(ctx.env));
  if (!config.nodes.some((n) => n.id === nodeId)) throw noSuchNode(nodeId);
  // Otherwise new writes would keep landing on the node while it is emptied.
  if (config.writableNodes.some((n) => n.id === nodeId)) {
    throw new S3Error(
      "NodeNotDraining",
      `Node ${nodeId} is not draining: mark it draining first (shardgate node drain does; or PATCH /_shardgate/admin/nodes/${nodeId} {"state":"draining"}, or SHARDGATE_DRAINING_NODES), so no new shard files go to it.`,
    );
  }
  const first = q.bucket === "" && q["start-after"] === null;
  if (first) await sleep(await drainSettleWait(ctx.env, nodeId));
  const walked = await drainWalk({ ...ctx, config }, nodeId, q);
  const failed = walked.tally.objectsFailed.length > 0 || walked.tally.shardsFailed > 0;
  const last = walked.next === null;
  const partsLeft = last && !failed ? await partsOnNode(ctx.env, ctx.core, nodeId) : null;
  const drainedAt = await recordDrainBatch(ctx.env, nodeId, { first, failed: failed || (partsLeft ?? 0) > 0, last });
  return json({ node: nodeId, ...walked.tally, next: walked.next, partsLeft, drained: drainedAt !== null });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function drainWalk(ctx: RequestContext, nodeId: string, q: DrainQuery): Promise<{ tally: HealTally; next: DrainNext | null }> {
  const budget = q["max-objects"];
  const fromBucket = q.bucket;
  let after = q["start-after"];
  const tally = emptyTally();
  let next: DrainNext | null = null;
  const buckets = (await bucketRegistry(ctx).list()).map((b) => b.name).filter((name) => name >= fromBucket);
  for (const [i, bucket] of buckets.entries()) {
    if (bucket !== fromBucket) after = null;
    const page = await bucketIndex(ctx, bucket).list({ prefix: "", delimiter: null, after, maxKeys: budget - tally.objectsChecked });
    const keys = page.objects.map((o) => o.key);
    await healEach(ctx, bucket, keys, { drain: nodeId }, tally);
    if (page.isTruncated && page.last !== null) {
      next = { bucket, startAfter: page.last };
      break;
    }
    if (tally.objectsChecked >= budget) {
      if (i + 1 < buckets.length) next = { bucket: buckets[i + 1], startAfter: "" };
      break;
    }
  }
  return { tally, next };
}
