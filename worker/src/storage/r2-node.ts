// A node that is an R2 bucket binding (on Cloudflare, and miniflare's R2 in development and tests).
import type { NodeListing, ShardBody, StorageNode } from "../shared/nodes";

export class R2Node implements StorageNode {
  readonly kind = "r2";

  constructor(
    readonly id: string,
    private readonly bucket: R2Bucket,
  ) {}

  async put(key: string, body: ShardBody): Promise<void> {
    // Bytes are the caller's again once put returns (shared/nodes.ts): copied, whatever the binding keeps.
    const stored = await this.bucket.put(key, body instanceof Uint8Array ? body.slice() : body);
    if (!stored) throw new Error(`node ${this.id} refused ${key}`);
  }

  async get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    const object = await this.bucket.get(key, { range: { offset: start, length: end - start } });
    return object ? object.body : null;
  }

  async delete(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) await this.bucket.delete(keys.slice(i, i + 1000));
  }

  async head(key: string): Promise<number | null> {
    return (await this.bucket.head(key))?.size ?? null;
  }

  async list(cursor: string | null): Promise<NodeListing> {
    const page = await this.bucket.list({ limit: 1000, ...(cursor ? { cursor } : {}) });
    return { files: page.objects.map((o) => ({ key: o.key, modified: o.uploaded.getTime() })), cursor: page.truncated ? page.cursor : null };
  }
}
