// A node that counts every request and the bytes it moves (shardgate_node_* metrics): the Worker
// wraps each configured node in one (config.ts). Worker-only: the client library counts nothing.
import type { Metrics } from "../observability/metrics";
import { type NodeListing, type ShardBody, type StorageNode, WrappedNode } from "../shared/nodes";

export class CountedNode extends WrappedNode {
  constructor(
    inner: StorageNode,
    private readonly metrics: Metrics,
  ) {
    super(inner);
  }

  async put(key: string, body: ShardBody, length: number): Promise<void> {
    await this.count("PUT", 200, () => this.inner.put(key, body, length));
    this.metrics.add("shardgate_node_bytes_written_total", length, { node: this.id });
  }

  async get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    const body = await this.count("GET", 206, () => this.inner.get(key, start, end));
    // What the node was asked to serve: an upper bound on what it sent when a read stops early.
    if (body) this.metrics.add("shardgate_node_bytes_read_total", end - start, { node: this.id });
    return body;
  }

  delete(keys: string[]): Promise<void> {
    return this.count("DELETE", 204, () => this.inner.delete(keys));
  }

  list(cursor: string | null): Promise<NodeListing> {
    return this.count("LIST", 200, () => this.inner.list(cursor));
  }

  head(key: string): Promise<number | null> {
    return this.count("HEAD", 200, () => this.inner.head(key));
  }

  /** Counts `request` by its outcome: `ok`, 404 when it found nothing (null), 500 when it failed. */
  private async count<T>(method: string, ok: number, request: () => Promise<T>): Promise<T> {
    try {
      const result = await request();
      this.metrics.add("shardgate_node_requests_total", 1, { node: this.id, method, status: result === null ? 404 : ok });
      return result;
    } catch (e) {
      this.metrics.add("shardgate_node_requests_total", 1, { node: this.id, method, status: 500 });
      throw e;
    }
  }
}
