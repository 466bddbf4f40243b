// A read plan's shard files as storage nodes, so that the gateway's own range reader
// (worker/src/shared/read-part.ts) decodes here exactly as it does in the Worker: data shards
// first, chunk checksums verified by the core, parity read around a node that is missing, fails,
// or is slow (hedged by the same node health), and a broken stream resumed from the last byte.
import type { Core, ManifestPart } from "../../worker/src/shared/core-api";
import type { DirectReadPart, DirectReadPlan } from "../../worker/src/shared/direct-protocol";
import { GuardedNode, type NodeHealth, nodeHealth } from "../../worker/src/shared/node-health";
import { type NodeListing, rangedBody, shardKey, type StorageNode } from "../../worker/src/shared/nodes";
import { type LossReason, openPartSource, type RangeSource, type ReadSetup } from "../../worker/src/shared/read-part";

/** One node of a plan: ranged GETs of the plan's shard files on it, by their keys. */
class PlanNode implements StorageNode {
  readonly kind = "s3" as const;
  readonly urls = new Map<string, string>();

  constructor(
    readonly id: string,
    private readonly send: (request: Request) => Promise<Response>,
    private readonly signal: AbortSignal | undefined,
  ) {}

  async get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    const url = this.urls.get(key);
    if (!url) return null;
    this.signal?.throwIfAborted();
    const res = await this.send(new Request(url, { headers: { range: `bytes=${start}-${end - 1}` }, signal: this.signal }));
    return rangedBody(res, this.id, key, start, end);
  }

  put(): Promise<void> {
    return Promise.reject(new Error("a read plan's node is read only"));
  }
  delete(): Promise<void> {
    return this.put();
  }
  head(): Promise<number | null> {
    return Promise.reject(new Error("a read plan's node is read only"));
  }
  list(): Promise<NodeListing> {
    return Promise.reject(new Error("a read plan's node is read only"));
  }
}

/**
 * The plan's nodes, guarded by this client's record of their health; `resolve` makes each URL
 * absolute. Once `signal` aborts, every request fails at once and what the reader then sees (failed
 * requests, cancelled streams) is not held against the nodes: the caller stopped, not they.
 */
export function planNodes(
  plan: Extract<DirectReadPlan, { mode: "direct" }>,
  resolve: (url: string) => string,
  send: (request: Request) => Promise<Response>,
  signal?: AbortSignal,
): StorageNode[] {
  const nodes = new Map<string, PlanNode>();
  for (const part of plan.parts) {
    part.placement.forEach((id, shard) => {
      let node = nodes.get(id);
      if (!node) {
        node = new PlanNode(id, send, signal);
        nodes.set(id, node);
      }
      node.urls.set(shardKey(part.storageId, shard), resolve(part.urls[shard]));
    });
  }
  // Health of its own, apart from the gateway's record of the same nodes (they share an isolate in tests).
  return [...nodes.values()].map((node) => new GuardedNode(node, quietOnceAborted(nodeHealth(`client:${node.id}`), signal)));
}

/** A node's shared health record, as one download sees it: once its signal aborts, failures and hedges are not recorded. */
function quietOnceAborted(health: NodeHealth, signal: AbortSignal | undefined): NodeHealth {
  if (!signal) return health;
  return new Proxy(health, {
    get(target, name) {
      const value: unknown = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      const method = value as (...args: unknown[]) => unknown;
      if (name === "failure" || name === "markSlow") return (...args: unknown[]) => (signal.aborted ? undefined : method.apply(target, args));
      return method.bind(target);
    },
  });
}

/** Bytes [start, end) of one part, decoded as they come. */
export function openPlanPart(
  setup: ReadSetup,
  core: Core,
  part: DirectReadPart,
  start: number,
  end: number,
  lost: (shard: number, why: LossReason) => void,
): Promise<RangeSource> {
  const { size, blockBytes, dataShards, parityShards, chunkBytes, storageId, placement } = part;
  const manifestPart: ManifestPart = {
    size,
    etag: "",
    layout: { type: "sharded", blockBytes, dataShards, parityShards, chunkBytes, storageId, placement, partChecksums: [] },
  };
  return openPartSource(setup, core, manifestPart, start, end, { shardLost: (_, shard, why) => lost(shard, why) });
}
