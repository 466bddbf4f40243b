// One shard file's upload to its node, written block by block (PUT and heal share it). A node
// that fails marks the sink failed instead of throwing: the writer decides what a quorum is.
import type { StorageNode } from "./nodes";

/** One shard file's upload: a stream into the node's PUT, written block by block. */
export class ShardSink {
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly done: Promise<boolean>;
  failed = false;

  constructor(node: StorageNode, key: string, length: number) {
    // One block may wait in the stream while the node consumes the previous one.
    const pipe = new TransformStream<Uint8Array, Uint8Array>(undefined, undefined, { highWaterMark: 1 });
    this.writer = pipe.writable.getWriter();
    this.done = node.put(key, pipe.readable, length).then(
      () => !this.failed,
      () => {
        this.failed = true;
        return false;
      },
    );
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (this.failed) return;
    try {
      await this.writer.ready;
      await this.writer.write(bytes);
    } catch {
      this.failed = true;
    }
  }

  async close(): Promise<boolean> {
    if (!this.failed) await this.writer.close().catch(() => (this.failed = true));
    return this.done;
  }

  abort(reason: unknown): void {
    this.failed = true;
    this.writer.abort(reason).catch(() => {});
  }
}
