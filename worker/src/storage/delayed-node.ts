// A node with latency added before every request: how benchmarks and tests make one node slow
// (SHARDGATE_NODE_DELAY_MS, docs/operations.md). Nothing else changes: the node's own answers,
// its health record and its hedged reads are those of a node that is simply far away or busy.
import { type NodeListing, type ShardBody, type StorageNode, WrappedNode } from "../shared/nodes";

export class DelayedNode extends WrappedNode {
  constructor(
    inner: StorageNode,
    private readonly delayMs: number,
  ) {
    super(inner);
  }

  async put(key: string, body: ShardBody, length: number): Promise<void> {
    // Bytes are the caller's again once put returns (shared/nodes.ts): kept across the delay, they are copied.
    const kept = body instanceof Uint8Array ? body.slice() : body;
    return this.delayed(() => this.inner.put(key, kept, length));
  }

  get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    return this.delayed(() => this.inner.get(key, start, end));
  }

  delete(keys: string[]): Promise<void> {
    return this.delayed(() => this.inner.delete(keys));
  }

  head(key: string): Promise<number | null> {
    return this.delayed(() => this.inner.head(key));
  }

  list(cursor: string | null): Promise<NodeListing> {
    return this.delayed(() => this.inner.list(cursor));
  }

  private async delayed<T>(request: () => Promise<T>): Promise<T> {
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    return request();
  }
}
