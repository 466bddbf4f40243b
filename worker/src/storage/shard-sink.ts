// One shard file's upload to its node, written block by block (PUT and heal share it). A node
// that fails, or stalls for longer than `stallMs` without taking the next block or finishing,
// marks the sink failed instead of throwing or hanging: the writer decides what a quorum is.
import { withinStall } from "../shared/bounded";
import { writeBorrowed } from "../shared/bytes";
import type { StorageNode } from "../shared/nodes";

/** One write into a sink's stream, and whether the node has taken it (or failed). */
interface Queued {
  promise: Promise<void>;
  settled: boolean;
}

const TAKEN: Queued = { promise: Promise.resolve(), settled: true };

/**
 * One shard file's upload: a stream into the node's PUT, written block by block. A block waits
 * while the node consumes the one before, so the next block is read from the client meanwhile.
 * Writers of several sinks use `writeAll`/`closeAll`: one stall timer per block for all of them
 * (none at all when every node already took the previous block), not one per shard.
 */
export class ShardSink {
  private readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  /** Whether the node stored the file; false for a failed or stalled node (then aborted). */
  readonly done: Promise<boolean>;
  /** The block written last, until the node has taken it. */
  private last: Queued = TAKEN;
  failed = false;

  constructor(
    node: StorageNode,
    key: string,
    length: number,
    readonly stallMs: number,
  ) {
    // The runtime's own fixed-length stream, straight into the node's request: no stream in JS
    // between (a TransformStream per shard costs more than the rest of the write path).
    const pipe = new FixedLengthStream(length);
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
    await ShardSink.writeAll([[this, bytes]]);
  }

  async close(): Promise<boolean> {
    return (await ShardSink.closeAll([this]))[0];
  }

  /**
   * Writes each sink's bytes, then waits until every node took the block before (within the
   * stall limit): a sink whose node fails or stalls is aborted, never thrown from. Every write is
   * handed to its stream before anything is awaited, and the runtime copies it there: the bytes
   * may be views the caller reuses right after the call (writeBorrowed).
   */
  static async writeAll(writes: readonly (readonly [ShardSink, Uint8Array])[]): Promise<void> {
    const waiting: [ShardSink, Queued][] = [];
    for (const [sink, bytes] of writes) {
      if (sink.failed) continue;
      const previous = sink.last;
      sink.last = sink.queue(bytes);
      if (!previous.settled) waiting.push([sink, previous]);
    }
    if (waiting.length === 0) return;
    const all = Promise.all(waiting.map(([, q]) => q.promise.catch(() => {})));
    await withinStall(all, Math.min(...waiting.map(([s]) => s.stallMs)));
    for (const [sink, q] of waiting) if (!q.settled) sink.abort(new Error("node stalled"));
  }

  /** Ends every sink's upload; whether each node stored its file (within the stall limit). */
  static async closeAll(sinks: readonly ShardSink[]): Promise<boolean[]> {
    const open = sinks.filter((s) => !s.failed);
    const results = new Map<ShardSink, boolean>();
    const all = Promise.all(
      open.map(async (sink) => {
        const ok = await sink.finish().catch(() => false);
        results.set(sink, ok);
      }),
    );
    if (open.length > 0) await withinStall(all, Math.min(...open.map((s) => s.stallMs)));
    return sinks.map((sink) => {
      const ok = results.get(sink) === true;
      if (!ok && !sink.failed) sink.abort(new Error("node stalled or failed"));
      return ok;
    });
  }

  /** Aborts the upload: with a plain Error when the node stalled or failed, with a
   *  WriteAbandoned when the write is given up for another reason. */
  abort(reason: Error): void {
    this.failed = true;
    this.writer.abort(reason).catch(() => {});
  }

  private queue(bytes: Uint8Array): Queued {
    const queued: Queued = { promise: writeBorrowed(this.writer, bytes), settled: false };
    queued.promise.then(
      () => (queued.settled = true),
      () => {
        queued.settled = true;
        if (!this.failed) this.abort(new Error("node failed"));
      },
    );
    return queued;
  }

  private async finish(): Promise<boolean> {
    await this.last.promise;
    await this.writer.close();
    return this.done;
  }
}
