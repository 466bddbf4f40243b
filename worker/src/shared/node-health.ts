// Node health, per isolate: a circuit breaker per node and what it has seen (latency, errors).
//
// Consecutive failures open a node's breaker: while it is open, requests to the node fail at once
// (reads plan around it from the start, writes count it as a missed shard) instead of each one
// waiting for a dead or stalled node. After a cool-down one request is let through as a probe
// (half-open); its success closes the breaker, its failure opens it again. The recent latency
// also tells a read when to stop waiting for a node and hedge with parity.
import { type NodeKind, type NodeListing, type ShardBody, type StorageNode, WrappedNode } from "./nodes";
import { WriteAbandoned } from "./storage-errors";

export type BreakerState = "closed" | "open" | "half-open";

export interface BreakerSettings {
  /** Consecutive failures that open the breaker. */
  failures: number;
  /** How long an open breaker refuses requests before it lets a probe through (ms). */
  coolDownMs: number;
}

export const DEFAULT_BREAKER: BreakerSettings = { failures: 3, coolDownMs: 5_000 };

/** What `GET /_shardgate/admin/nodes` shows of one node. */
export interface NodeStatus {
  id: string;
  kind: NodeKind;
  state: BreakerState;
  /** Moving average of the time to a response's headers (ms), null before the first answer. */
  latencyMs: number | null;
  requests: number;
  errors: number;
  consecutiveFailures: number;
  lastError: string | null;
  lastErrorAt: number | null;
  /** A read gave up waiting for the node (hedged) and it has not answered since: reads go around it. */
  slow: boolean;
}

/** A request refused because the node's breaker is open. */
export class NodeUnavailableError extends Error {
  constructor(readonly node: string) {
    super(`node ${node} is unavailable (circuit breaker open)`);
  }
}

/** Weight of the newest sample in the latency average. */
const EWMA_WEIGHT = 0.2;
/** Hedge bounds (ms): never hedge sooner than the floor, never wait longer than the cap. */
const HEDGE_FLOOR_MS = 25;
const HEDGE_CAP_MS = 1_000;
/** How long reads go around a node after one of them hedged it, unless it answers first (ms). */
const SLOW_HOLD_MS = 2_000;
/** A node with no latency sample yet gets this long before a read hedges. */
const HEDGE_UNKNOWN_MS = 300;
/** A node this many times slower than the median node (and slower than the hedge floor) is a laggard. */
const LAGGARD_FACTOR = 4;

export class NodeHealth {
  state: BreakerState = "closed";
  latencyMs: number | null = null;
  requests = 0;
  errors = 0;
  consecutiveFailures = 0;
  lastError: string | null = null;
  lastErrorAt: number | null = null;
  private openedAt = 0;
  /** When the half-open breaker's probe left (0: none out). A probe that never answers (its
   *  request was abandoned) frees the slot after another cool-down. */
  private probeAt = 0;
  /** Until when reads go around the node after one of them gave up waiting for it (ms). */
  private slowUntil = 0;
  /** When a read last went to the node although it lags (to measure it again). */
  private laggardProbeAt = 0;

  constructor(
    readonly id: string,
    private readonly settings: BreakerSettings = DEFAULT_BREAKER,
  ) {}

  /** Whether a request may go to the node now; in half-open state, only one probe at a time. */
  allow(now = Date.now()): boolean {
    if (this.state === "closed") return true;
    if (this.state === "open" && now - this.openedAt >= this.settings.coolDownMs) this.state = "half-open";
    if (this.state === "half-open" && !this.probeOut(now)) {
      this.probeAt = now;
      return true;
    }
    return false;
  }

  /** Whether the breaker refuses requests right now (without taking the probe slot). */
  get refusing(): boolean {
    if (this.state === "closed") return false;
    if (this.state === "open") return Date.now() - this.openedAt < this.settings.coolDownMs;
    return this.probeOut(Date.now());
  }

  private probeOut(now: number): boolean {
    return this.probeAt !== 0 && now - this.probeAt < this.settings.coolDownMs;
  }

  success(latencyMs?: number): void {
    this.requests += 1;
    this.consecutiveFailures = 0;
    this.probeAt = 0;
    this.slowUntil = 0;
    this.state = "closed";
    if (latencyMs === undefined) return;
    if (this.latencyMs === null) this.latencyMs = latencyMs;
    else {
      // One answer that comes back from a long pause must not make every later hedge wait for
      // seconds; a node that really got slower still raises the average over a few answers.
      const sample = Math.min(latencyMs, 2 * this.hedgeAfterMs());
      this.latencyMs += EWMA_WEIGHT * (sample - this.latencyMs);
    }
  }

  /**
   * A read gave up waiting for the node (hedged). Not a failure: a busy node answers late, and
   * the breaker also guards writes. Until the node answers anything, or for SLOW_HOLD_MS, other
   * reads go around it from the start, so a stalled node costs one hedge, not one per read. (A
   * timer rather than the abandoned request's answer: the runtime may drop that request with the
   * response it belonged to.)
   */
  markSlow(now = Date.now()): void {
    this.slowUntil = now + SLOW_HOLD_MS;
  }

  /** Whether reads should go around the node from the start: its breaker refuses, or it was slow just now. */
  get readAround(): boolean {
    return this.refusing || Date.now() < this.slowUntil;
  }

  /**
   * Whether the node answers far slower than its peers (LAGGARD_FACTOR × their median latency).
   * Its own hedge delay follows its own latency, so a node that is always slow never makes a read
   * hedge: every read of it just waits. Reads plan around a laggard when the code can spare it,
   * except one every SLOW_HOLD_MS, whose answer measures it again (it may have recovered).
   */
  laggard(now = Date.now()): boolean {
    if (this.latencyMs === null || this.latencyMs <= Math.max(HEDGE_FLOOR_MS, LAGGARD_FACTOR * peerLatencyMs(now))) return false;
    if (now - this.laggardProbeAt < SLOW_HOLD_MS) return true;
    this.laggardProbeAt = now;
    return false;
  }

  failure(error: unknown, now = Date.now()): void {
    this.requests += 1;
    this.errors += 1;
    this.consecutiveFailures += 1;
    this.lastError = error instanceof Error ? error.message : String(error);
    this.lastErrorAt = now;
    if (this.state === "half-open" || this.consecutiveFailures >= this.settings.failures) {
      this.state = "open";
      this.openedAt = now;
    }
    this.probeAt = 0;
  }

  /** How long a read waits for this node's answer before it also reads parity (ms). */
  hedgeAfterMs(): number {
    if (this.latencyMs === null) return HEDGE_UNKNOWN_MS;
    return Math.min(HEDGE_CAP_MS, Math.max(HEDGE_FLOOR_MS, 4 * this.latencyMs));
  }

  status(kind: NodeKind): NodeStatus {
    return {
      id: this.id,
      kind,
      state: this.refusing ? "open" : this.state === "open" ? "half-open" : this.state,
      latencyMs: this.latencyMs === null ? null : Math.round(this.latencyMs * 10) / 10,
      requests: this.requests,
      errors: this.errors,
      consecutiveFailures: this.consecutiveFailures,
      lastError: this.lastError,
      lastErrorAt: this.lastErrorAt,
      slow: Date.now() < this.slowUntil,
    };
  }
}

// One record per node id for the isolate's lifetime: health outlives a request's configuration.
const registry = new Map<string, NodeHealth>();

/** The median latency of the nodes measured so far (ms), recomputed at most once a second. */
let peers = { at: 0, ms: 0 };
function peerLatencyMs(now: number): number {
  if (now - peers.at < 1_000) return peers.ms;
  const all = [...registry.values()].flatMap((h) => (h.latencyMs === null ? [] : [h.latencyMs])).sort((a, b) => a - b);
  peers = { at: now, ms: all.length === 0 ? 0 : all[Math.floor(all.length / 2)] };
  return peers.ms;
}

export function nodeHealth(id: string, settings?: BreakerSettings): NodeHealth {
  let health = registry.get(id);
  if (!health) {
    health = new NodeHealth(id, settings);
    registry.set(id, health);
  }
  return health;
}

/** Forgets every node's health (tests start each case from healthy nodes). */
export function resetNodeHealth(): void {
  registry.clear();
  peers = { at: 0, ms: 0 };
}

/**
 * Guards a node with its breaker and records what it answers: requests fail fast while the
 * breaker is open; GET and HEAD feed the latency average (time to headers). A GET's 404 is an
 * answer, not a failure. Failures met later, mid-stream, are reported by the reader itself.
 */
export class GuardedNode extends WrappedNode {
  constructor(
    inner: StorageNode,
    readonly health: NodeHealth,
  ) {
    super(inner);
  }

  put(key: string, body: ShardBody, length: number): Promise<void> {
    return this.guard(
      () => this.inner.put(key, body, length),
      false,
      () => (body instanceof ReadableStream ? body.cancel().catch(() => {}) : undefined),
    );
  }

  get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    return this.guard(() => this.inner.get(key, start, end), true);
  }

  delete(keys: string[]): Promise<void> {
    return this.guard(() => this.inner.delete(keys), false);
  }

  head(key: string): Promise<number | null> {
    return this.guard(() => this.inner.head(key), true);
  }

  list(cursor: string | null): Promise<NodeListing> {
    return this.guard(() => this.inner.list(cursor), false);
  }

  private async guard<T>(op: () => Promise<T>, timed: boolean, refused?: () => void): Promise<T> {
    if (!this.health.allow()) {
      refused?.();
      throw new NodeUnavailableError(this.id);
    }
    const started = Date.now();
    try {
      const result = await op();
      this.health.success(timed ? Date.now() - started : undefined);
      return result;
    } catch (e) {
      // A write given up by the gateway (quorum lost elsewhere, client gone) is not the node's fault.
      if (!(e instanceof WriteAbandoned)) this.health.failure(e);
      throw e;
    }
  }
}
