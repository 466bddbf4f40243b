// One shard file's upload to its node, written block by block (PUT and heal share it). A node
// that fails, or stalls for longer than `stallMs` without taking the next block or finishing,
// marks the sink failed instead of throwing or hanging: the writer decides what a quorum is.
import type { StorageNode } from "./nodes";

/**
 * Why a sink is aborted when its node did nothing wrong (the write as a whole failed or was given
 * up): the node's breaker must not count it (node-health.ts).
 */
export class WriteAbandoned extends Error {
  constructor(why: string) {
    super(`write abandoned: ${why}`);
  }
}

/** One shard file's upload: a stream into the node's PUT, written block by block. */
export class ShardSink {
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  private readonly settled: Promise<boolean>;
  /** The block written last, until the node has taken it. */
  private previous: Promise<void> = Promise.resolve();
  failed = false;

  constructor(
    node: StorageNode,
    key: string,
    length: number,
    private readonly stallMs: number,
  ) {
    // The runtime's own fixed-length stream, straight into the node's request: no stream in JS
    // between (a TransformStream per shard costs more than the rest of the write path).
    const pipe = new FixedLengthStream(length);
    this.writer = pipe.writable.getWriter();
    this.settled = node.put(key, pipe.readable, length).then(
      () => !this.failed,
      () => {
        this.failed = true;
        return false;
      },
    );
  }

  /** Whether the node stored the file; false for a failed or stalled node (then aborted). */
  get done(): Promise<boolean> {
    return this.settled;
  }

  async write(bytes: Uint8Array): Promise<void> {
    if (this.failed) return;
    // A write resolves once the node took the bytes: one block waits while the node consumes
    // the one before, so the next block is read from the client meanwhile.
    const previous = this.previous;
    const current = this.writer.write(bytes);
    current.catch(() => {}); // awaited by the next write or close
    this.previous = current;
    const ok = await this.withinStall(() => previous);
    if (ok === false) this.abort(new Error("node stalled or failed"));
  }

  async close(): Promise<boolean> {
    if (this.failed) return false;
    const ok = await this.withinStall(async () => {
      await this.previous;
      await this.writer.close();
      return this.settled;
    });
    if (ok !== true) {
      this.abort(new Error("node stalled or failed"));
      return false;
    }
    return true;
  }

  /** Aborts the upload: with a plain Error when the node stalled or failed, with a
   *  WriteAbandoned when the write is given up for another reason. */
  abort(reason: Error): void {
    this.failed = true;
    this.writer.abort(reason).catch(() => {});
  }

  /** Runs `step`; false if it fails or takes longer than stallMs. */
  private async withinStall<T>(step: () => Promise<T>): Promise<T | false> {
    let timer = 0;
    const stalled = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), this.stallMs);
    });
    try {
      return await Promise.race([step().catch(() => false as const), stalled]);
    } finally {
      clearTimeout(timer);
    }
  }
}
