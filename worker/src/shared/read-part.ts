// Reading a byte range of one object part as a stream (docs/architecture.md, "A ranged GET").
//
// One metadata lookup has already happened; this is the single parallel wave of shard requests:
// one ranged GET per needed shard file, read round-robin as the core asks for more, verified
// chunk by chunk, and sent on as soon as bytes are ready. A shard file that is missing, fails,
// ends early or fails a checksum is dropped: the rest of the range is re-planned from the last
// byte sent, reading parity instead, so the client still gets exactly the right bytes.
//
// Shared (docs/architecture.md, "Shared code"): the client library (client/src/plan-nodes.ts)
// downloads with this same reader, over nodes that fetch presigned shard ranges.
import {
  CHUNK_CHECKSUM_BYTES,
  ChecksumMismatchError,
  type Core,
  type ManifestPart,
  type RangeAssembler,
  type ReadPlan,
  type ShardedLayout,
  type ShardFetch,
  partGeometry,
} from "./core-api";
import { withinStall } from "./bounded";
import { PieceReader } from "./piece-reader";
import { NodesUnavailableError } from "./storage-errors";
import { GuardedNode, NodeUnavailableError } from "./node-health";
import { nodesById, shardKey, type StorageNode } from "./nodes";
import { fromBase64 } from "./bytes";

/** Events a read reports (for metrics and healing). */
export interface ReadEvents {
  /** A shard file was read around (see LossReason) and parity served instead. */
  shardLost?(storageId: string, shard: number, why: LossReason): void;
}

/**
 * Why a read went around a shard file: its node answered without it (missing) or with rotten
 * bytes (checksum), or the node failed or broke off (error), is down (breaker open: unavailable)
 * or slow (hedged).
 */
export type LossReason = "missing" | "error" | "checksum" | "unavailable" | "slow";

/** Largest piece of output handed to the client stream at once, unless the reader asks for more. */
const OUTPUT_PIECE = 256 * 1024;

/**
 * How much of a shard stream is read at once, in checksummed chunks: 64 of them (1 MiB at the
 * default chunk size), copied into the core in one piece. Against 16 (256 KiB) a 64 MiB GET took
 * about a tenth less CPU: a quarter of the reads, calls into the core and awaits, and the core keeps
 * each read as a segment of its own, so reading further ahead moves no bytes (core/src/assemble.rs).
 * A stream longer than that reads one chunk first, so the first byte of a large read goes out as
 * soon as its chunk is verified; a shorter one is read in one go.
 */
const CHUNKS_PER_PIECE = 64;

/** Bytes of a range, piece by piece. */
export interface RangeSource {
  /**
   * Hands the next piece (at most `max` bytes, when given) to `use` and resolves with what it
   * returned, or with null at the end.
   * The piece is lent, not given: a view of the core's memory, valid only during the call, so
   * `use` copies it, or writes it into a runtime stream, which copies it inside `write()`
   * (writeBorrowed in shared/bytes.ts). That saves a copy and an allocation per piece.
   */
  next<T extends object>(use: (piece: Uint8Array) => T, max?: number): Promise<T | null>;
  /** Stops early: frees what the read holds (its shard requests are cancelled). */
  close(): void;
}

/** What a read needs of the configuration (GatewayConfig has it): the nodes, found by id, and how
 *  long a silent shard stream is waited for (ms). A client reading on its own (client/) passes
 *  nodes that fetch shard ranges by URL. */
export interface ReadSetup {
  nodes: readonly StorageNode[];
  readStallMs: number;
  /**
   * false: read the shard files the plan names and wait for them, never around a node for being
   * slow (a check that must read particular files: services/direct-verify.ts). Default true.
   */
  hedge?: boolean;
}

/**
 * Opens bytes [start, end) of a part; resolves once the shard requests have answered. Shards in
 * `avoid` are read around from the start (a heal rebuilding them).
 */
export async function openPartSource(
  config: ReadSetup,
  core: Core,
  part: ManifestPart,
  start: number,
  end: number,
  events: ReadEvents = {},
  avoid: readonly number[] = [],
): Promise<RangeSource> {
  if (part.layout.type === "inline") {
    let bytes: Uint8Array | null = fromBase64(part.layout.data).subarray(start, end);
    if (bytes.length === 0) bytes = null;
    return {
      next: (use) => {
        const out = bytes;
        bytes = null;
        return Promise.resolve(out && use(out));
      },
      close: () => (bytes = null),
    };
  }
  const reader = new ShardedRangeReader(config, core, part.layout, part.size, end, events, avoid);
  await reader.open(start);
  return reader;
}

interface Source {
  shard: number;
  node: StorageNode;
  reader: PieceReader;
  expected: number;
  received: number;
  pending: Promise<SourceEvent> | null;
  /** When the pending read was asked for (ms): the oldest one is the stalled one. */
  since: number;
}

type SourceEvent = { source: Source; value?: Uint8Array; done?: boolean; error?: unknown };

/** One shard request of a plan, and what came of it. */
type Opened = { f: ShardFetch; node: StorageNode; body: ReadableStream<Uint8Array> };
type Answer = Opened | { f: ShardFetch; node: StorageNode; body?: undefined; lost: "missing" | "error" | "slow" | "unavailable" };

class ShardedRangeReader implements RangeSource {
  /** Shards this read goes around: lost, or on a node that is gone or refusing. */
  private readonly unavailable = new Set<number>();
  /** Shards this read gave up waiting for (hedged): read around when the code can spare them. */
  private readonly slow = new Set<number>();
  /** How many shards the current plan reads around. */
  private skipped = 0;
  /** Shards read around but not reported yet (no plan needed parity for them so far). */
  private readonly pending = new Map<number, LossReason>();
  private readonly nodes: ReadonlyMap<string, StorageNode>;
  /** One checksummed chunk as stored in a shard file: its bytes and their checksum. */
  private readonly framedChunk: number;
  private sources: Source[] = [];
  private assembler: RangeAssembler | null = null;
  /** The stall timer (armStallTimer), and how it wakes the feed waiting on shard reads. */
  private stallTimer: ReturnType<typeof setTimeout> | null = null;
  private wakeStalled: ((stalled: "stalled") => void) | null = null;

  constructor(
    private readonly config: ReadSetup,
    private readonly core: Core,
    private readonly layout: ShardedLayout,
    private readonly size: number,
    private readonly end: number,
    private readonly events: ReadEvents,
    avoid: readonly number[],
  ) {
    this.nodes = nodesById(config.nodes);
    this.framedChunk = layout.chunkBytes + CHUNK_CHECKSUM_BYTES;
    for (const shard of avoid) this.unavailable.add(shard);
  }

  /** Plans [start, end) around the unavailable shards and opens every shard request, re-planning
   *  until every needed shard file answered. Bodies that answered keep serving the next plan. */
  async open(start: number): Promise<void> {
    const spare = new Map<string, Opened>();
    try {
      for (;;) {
        const plan = this.plan(start);
        // Shards this plan may still give up on for being slow: never more than the code can lose.
        const room = { left: this.layout.parityShards - this.skipped };
        const answers = await Promise.all(plan.fetches.map((f) => this.fetch(f, spare, room)));
        const lost = answers.filter((a) => !a.body);
        if (lost.length === 0) {
          this.assembler = plan.assembler();
          plan.free();
          const now = Date.now();
          // Each piece is copied into the core before the next read: one reused buffer per stream.
          const piece = { pieceBytes: this.framedChunk * CHUNKS_PER_PIECE, reuse: true };
          this.sources = answers.map((a) => ({
            shard: a.f.shard,
            node: a.node,
            reader: new PieceReader(a.body as ReadableStream<Uint8Array>, piece),
            expected: a.f.end - a.f.start,
            received: 0,
            pending: null,
            since: now,
          }));
          return;
        }
        plan.free();
        for (const a of answers) if (a.body) spare.set(fetchKey(a.f), a);
        for (const a of lost) if (!a.body) this.lose(a.f.shard, a.lost);
      }
    } finally {
      for (const a of spare.values()) a.body.cancel().catch(() => {});
    }
  }

  /**
   * The read plan from `start`. Shard files this read lost (missing, failed, rotten, or on nodes
   * no longer configured or whose breaker is open) are always read around; those on slow nodes
   * (hedged by this read, or with a request another read gave up on still unanswered) only when
   * the code can spare them, otherwise they are waited for after all. 503 when even that fails.
   */
  private plan(start: number): ReadPlan {
    const geometry = this.core.geometry(partGeometry(this.size, this.layout));
    try {
      const others: number[] = []; // on nodes another read found slow just now
      this.layout.placement.forEach((nodeId, shard) => {
        if (this.unavailable.has(shard) || this.slow.has(shard)) return;
        const node = this.nodes.get(nodeId);
        if (!node) this.around(shard, "missing");
        else if (node instanceof GuardedNode && node.health.refusing) this.around(shard, "unavailable");
        else if (this.config.hedge !== false && node instanceof GuardedNode && (node.health.readAround || node.health.laggard())) others.push(shard);
      });
      // The most the code can spare first: lost, slow for this read, slow for others; then less.
      const attempt = (around: number[]): ReadPlan | null => {
        try {
          const plan = this.core.planRead(geometry, start, this.end, around);
          this.skipped = around.length;
          return plan;
        } catch {
          return null;
        }
      };
      let plan = attempt([...this.unavailable, ...this.slow, ...others]);
      if (plan) for (const shard of others) this.pending.set(shard, "slow");
      plan ??= attempt([...this.unavailable, ...this.slow]) ?? attempt([...this.unavailable]);
      if (!plan) throw new Error("more shards lost than the code can spare"); // the 503 below
      // Shards read around are reported (for metrics and heal) once a plan needs parity for them.
      if (plan.degraded) {
        for (const [shard, why] of this.pending) this.events.shardLost?.(this.layout.storageId, shard, why);
        this.pending.clear();
      }
      return plan;
    } catch {
      throw new NodesUnavailableError("Too many storage nodes are unavailable to read this object right now.");
    } finally {
      geometry.free();
    }
  }

  /** A shard file this read goes around from now on, reported once a plan needs parity for it. */
  private around(shard: number, why: LossReason): void {
    this.unavailable.add(shard);
    this.pending.set(shard, why);
  }

  /**
   * One shard request of a plan: a body an earlier plan already opened for exactly these bytes,
   * or a new ranged GET. A hedged read: when the node has not answered within its hedge delay
   * (a few times its recent latency) and the plan still has room to lose a shard, the request is
   * abandoned as slow, so the next plan reads parity instead of waiting on a stalled node.
   */
  private async fetch(f: ShardFetch, spare: Map<string, Opened>, room: { left: number }): Promise<Answer> {
    const node = this.nodes.get(this.layout.placement[f.shard]) as StorageNode;
    const reused = spare.get(fetchKey(f));
    if (reused) {
      spare.delete(fetchKey(f));
      return reused;
    }
    const request = node.get(shardKey(this.layout.storageId, f.shard), f.start, f.end).then(
      (body): Answer => (body ? { f, node, body } : { f, node, lost: "missing" }),
      (e: unknown): Answer => ({ f, node, lost: e instanceof NodeUnavailableError ? "unavailable" : "error" }),
    );
    if (!(node instanceof GuardedNode) || this.config.hedge === false) return request;
    const health = node.health;
    const first = await withinStall(request, health.hedgeAfterMs());
    if (first !== undefined) return first;
    if (room.left <= 0) return request; // no parity to spare: wait for it after all
    room.left -= 1;
    health.markSlow();
    void request.then((a) => a.body?.cancel().catch(() => {}));
    return { f, node, lost: "slow" };
  }

  async next<T extends object>(use: (piece: Uint8Array) => T, max = OUTPUT_PIECE): Promise<T | null> {
    try {
      for (;;) {
        const asm = this.assembler;
        if (!asm) return null; // closed
        const out = asm.pull(max, use);
        if (out !== null) return out;
        if (asm.done) {
          this.close();
          return null;
        }
        await this.feed(asm);
      }
    } catch (e) {
      this.close();
      throw e;
    }
  }

  /** Waits for the next piece of any wanted shard stream and feeds it to the assembler. A stream
   *  that sends nothing for the stall limit is dropped like one that broke (armStallTimer). */
  private async feed(asm: RangeAssembler): Promise<void> {
    for (const s of this.sources) {
      if (!s.pending && s.received < s.expected && asm.wants(s.shard)) {
        s.since = Date.now();
        const max = s.received === 0 && s.expected > s.reader.pieceBytes ? this.framedChunk : s.expected - s.received;
        s.pending = s.reader.read(max).then(
          (value) => ({ source: s, value: value ?? undefined, done: value === null }),
          (error: unknown) => ({ source: s, error }),
        );
      }
    }
    const waiting = this.sources.filter((s) => s.pending);
    if (waiting.length === 0) throw new Error("read stalled: the assembler wants no shard data");
    const stalled = new Promise<"stalled">((resolve) => {
      this.wakeStalled = resolve;
    });
    this.armStallTimer();
    const ev = await Promise.race([...waiting.map((s) => s.pending as Promise<SourceEvent>), stalled]);
    this.wakeStalled = null;
    if (ev === "stalled") {
      const oldest = this.oldestPending() as Source;
      if (oldest.node instanceof GuardedNode) oldest.node.health.failure(new Error(`stream stalled for ${this.config.readStallMs} ms`));
      return this.failover(oldest.shard, "error");
    }
    const s = ev.source;
    s.pending = null;
    if (ev.error !== undefined || (ev.done && s.received < s.expected)) {
      if (s.node instanceof GuardedNode) s.node.health.failure(ev.error ?? new Error("stream ended early"));
      return this.failover(s.shard, "error");
    }
    if (!ev.value) return;
    s.received += ev.value.length;
    try {
      asm.push(s.shard, ev.value);
    } catch (e) {
      if (e instanceof ChecksumMismatchError) return this.failover(s.shard, "checksum");
      throw e;
    }
  }

  /** The shard stream waited on longest: the one that may have stalled, even while others flow. */
  private oldestPending(): Source | null {
    let oldest: Source | null = null;
    for (const s of this.sources) if (s.pending && (!oldest || s.since < oldest.since)) oldest = s;
    return oldest;
  }

  /**
   * One timer per read, not one per piece (a timer each costs more than the piece's bookkeeping):
   * due when the oldest pending shard read reaches the stall limit, it wakes the waiting feed if
   * that read is still pending, or moves on to the next oldest. Disarmed when nothing is pending.
   */
  private armStallTimer(): void {
    if (this.stallTimer !== null) return;
    const check = (): void => {
      this.stallTimer = null;
      const oldest = this.oldestPending();
      if (!oldest) return;
      const left = oldest.since + this.config.readStallMs - Date.now();
      if (left > 0) this.stallTimer = setTimeout(check, left);
      else this.wakeStalled?.("stalled"); // no feed waiting: the next one arms a due timer
    };
    const oldest = this.oldestPending();
    if (oldest) this.stallTimer = setTimeout(check, Math.max(0, oldest.since + this.config.readStallMs - Date.now()));
  }

  /** Drops a shard mid-read and continues from the last byte sent, without it. */
  private async failover(shard: number, why: "error" | "checksum"): Promise<void> {
    const position = (this.assembler as RangeAssembler).position;
    this.close();
    this.lose(shard, why);
    await this.open(position);
  }

  private lose(shard: number, why: LossReason): void {
    if (why === "slow") this.slow.add(shard);
    else {
      this.slow.delete(shard);
      this.unavailable.add(shard);
    }
    this.pending.delete(shard);
    this.events.shardLost?.(this.layout.storageId, shard, why);
  }

  close(): void {
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
    for (const s of this.sources) {
      s.reader.release(); // every piece read went into the assembler (a copy)
      void s.reader.cancel();
    }
    this.sources = [];
    this.assembler?.free();
    this.assembler = null;
  }
}

function fetchKey(f: ShardFetch): string {
  return `${f.shard}:${f.start}:${f.end}`;
}
