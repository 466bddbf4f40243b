// Reading a byte range of one object part as a stream (shared/design.md, "Reading a range").
//
// One metadata lookup has already happened; this is the single parallel wave of shard requests:
// one ranged GET per needed shard file, read round-robin as the core asks for more, verified
// chunk by chunk, and sent on as soon as bytes are ready. A shard file that is missing, fails,
// ends early or fails a checksum is dropped: the rest of the range is re-planned from the last
// byte sent, reading parity instead, so the client still gets exactly the right bytes.
import type { GatewayConfig } from "../config";
import { ChecksumMismatchError, type Core, type ManifestPart, type RangeAssembler, type ShardedLayout } from "../core-api";
import { S3Error } from "../s3-error";
import { shardKey, type StorageNode } from "./nodes";
import { fromBase64 } from "./write-part";

/** Events a read reports (for metrics and healing). */
export interface ReadEvents {
  /** A shard file was unusable (missing, failed, rotten) and parity served instead. */
  shardLost?(storageId: string, shard: number, why: "missing" | "error" | "checksum"): void;
}

/** Largest piece of output handed to the client stream at once. */
const OUTPUT_PIECE = 256 * 1024;

/**
 * Opens bytes [start, end) of a part; resolves once the shard requests have answered. Shards in
 * `avoid` are read around from the start (a heal rebuilding them).
 */
export async function openPartRange(
  config: GatewayConfig,
  core: Core,
  part: ManifestPart,
  start: number,
  end: number,
  events: ReadEvents = {},
  avoid: readonly number[] = [],
): Promise<ReadableStream<Uint8Array>> {
  if (part.layout.type === "inline") {
    const bytes = fromBase64(part.layout.data).subarray(start, end);
    return new ReadableStream({
      start(controller) {
        if (bytes.length > 0) controller.enqueue(bytes);
        controller.close();
      },
    });
  }
  const reader = new ShardedRangeReader(config, core, part.layout, part.size, end, events, avoid);
  await reader.open(start);
  return new ReadableStream<Uint8Array>(
    {
      pull: (controller) => reader.pull(controller),
      cancel: () => reader.close(),
    },
    { highWaterMark: 0 },
  );
}

interface Source {
  shard: number;
  node: StorageNode;
  reader: ReadableStreamDefaultReader<Uint8Array>;
  expected: number;
  received: number;
  pending: Promise<SourceEvent> | null;
}

type SourceEvent = { source: Source; value?: Uint8Array; done?: boolean; error?: unknown };

class ShardedRangeReader {
  private readonly unavailable = new Set<number>();
  private readonly nodes: Map<string, StorageNode>;
  private sources: Source[] = [];
  private assembler: RangeAssembler | null = null;
  private unconfiguredReported = false;

  constructor(
    private readonly config: GatewayConfig,
    private readonly core: Core,
    private readonly layout: ShardedLayout,
    private readonly size: number,
    private readonly end: number,
    private readonly events: ReadEvents,
    avoid: readonly number[],
  ) {
    this.nodes = new Map(config.nodes.map((n) => [n.id, n]));
    for (const shard of avoid) this.unavailable.add(shard);
  }

  /** Plans [start, end) around the unavailable shards and opens every shard request, re-planning
   *  until every needed shard file answered. */
  async open(start: number): Promise<void> {
    for (;;) {
      const geometry = this.core.geometry({
        size: this.size,
        blockBytes: this.layout.blockBytes,
        dataShards: this.layout.dataShards,
        parityShards: this.layout.parityShards,
        chunkBytes: this.layout.chunkBytes,
      });
      let plan;
      try {
        // A node no longer configured is read around; it is reported lost once a plan needs parity.
        const unconfigured = this.layout.placement.flatMap((nodeId, shard) => (this.nodes.has(nodeId) ? [] : [shard]));
        for (const shard of unconfigured) this.unavailable.add(shard);
        plan = this.core.planRead(geometry, start, this.end, [...this.unavailable]);
        if (plan.degraded && !this.unconfiguredReported) {
          this.unconfiguredReported = true;
          for (const shard of unconfigured) this.events.shardLost?.(this.layout.storageId, shard, "missing");
        }
      } catch {
        throw new S3Error(503, "ServiceUnavailable", "Too many storage nodes are unavailable to read this object right now.");
      } finally {
        geometry.free();
      }
      const answers = await Promise.all(
        plan.fetches.map(async (f) => {
          const node = this.nodes.get(this.layout.placement[f.shard]) as StorageNode;
          const body = await node.get(shardKey(this.layout.storageId, f.shard), f.start, f.end).catch(() => undefined);
          return { f, node, body };
        }),
      );
      const lost = answers.filter((a) => !a.body);
      if (lost.length === 0) {
        this.assembler = plan.assembler();
        plan.free();
        this.sources = answers.map(({ f, node, body }) => ({
          shard: f.shard,
          node,
          reader: (body as ReadableStream<Uint8Array>).getReader(),
          expected: f.end - f.start,
          received: 0,
          pending: null,
        }));
        return;
      }
      plan.free();
      for (const a of answers) a.body?.cancel().catch(() => {});
      for (const a of lost) this.lose(a.f.shard, a.body === null ? "missing" : "error");
    }
  }

  async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    try {
      for (;;) {
        const asm = this.assembler as RangeAssembler;
        const out = asm.pull(OUTPUT_PIECE);
        if (out) return controller.enqueue(out);
        if (asm.done) {
          this.close();
          return controller.close();
        }
        await this.feed(asm);
      }
    } catch (e) {
      this.close();
      controller.error(e);
    }
  }

  /** Waits for the next piece of any wanted shard stream and feeds it to the assembler. */
  private async feed(asm: RangeAssembler): Promise<void> {
    for (const s of this.sources) {
      if (!s.pending && s.received < s.expected && asm.wants(s.shard)) {
        s.pending = s.reader.read().then(
          (r) => ({ source: s, value: r.value, done: r.done }),
          (error: unknown) => ({ source: s, error }),
        );
      }
    }
    const waiting = this.sources.flatMap((s) => (s.pending ? [s.pending] : []));
    if (waiting.length === 0) throw new Error("read stalled: the assembler wants no shard data");
    const ev = await Promise.race(waiting);
    const s = ev.source;
    s.pending = null;
    if (ev.error !== undefined || (ev.done && s.received < s.expected)) return this.failover(s.shard, "error");
    if (!ev.value) return;
    s.received += ev.value.length;
    try {
      asm.push(s.shard, ev.value);
    } catch (e) {
      if (e instanceof ChecksumMismatchError) return this.failover(s.shard, "checksum");
      throw e;
    }
  }

  /** Drops a shard mid-read and continues from the last byte sent, without it. */
  private async failover(shard: number, why: "error" | "checksum"): Promise<void> {
    const position = (this.assembler as RangeAssembler).position;
    this.close();
    this.lose(shard, why);
    await this.open(position);
  }

  private lose(shard: number, why: "missing" | "error" | "checksum"): void {
    this.unavailable.add(shard);
    this.events.shardLost?.(this.layout.storageId, shard, why);
  }

  close(): void {
    for (const s of this.sources) s.reader.cancel().catch(() => {});
    this.sources = [];
    this.assembler?.free();
    this.assembler = null;
  }
}
