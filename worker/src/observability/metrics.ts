// Prometheus counters for the whole gateway. Each isolate counts into its own pending deltas
// (no I/O on the request path) and adds them to the MetricsStore Durable Object, which holds the
// totals, at most once per FLUSH_DELAY_MS, after the response. GET /_shardgate/metrics flushes
// its own isolate first, so a single isolate (`npm start`) always reads exact figures.

/** Every counter the gateway exports: name → help text. */
export const COUNTERS = {
  shardgate_requests_total: "S3 requests answered, by operation and HTTP status.",
  shardgate_client_bytes_sent_total: "Response body bytes sent to clients (as declared by Content-Length).",
  shardgate_client_bytes_received_total: "Request body bytes received from clients (Content-Length, as sent on the wire).",
  shardgate_node_bytes_read_total: "Bytes requested from storage nodes by ranged shard reads.",
  shardgate_node_bytes_written_total: "Bytes of shard files written to storage nodes.",
  shardgate_node_requests_total: "Requests to storage nodes, by node, method and outcome status.",
  shardgate_degraded_reads_total:
    "Object reads (GET requests) that had to read parity because a shard file was missing, corrupt, or on a node that failed, is down or was slow.",
  shardgate_checksum_failures_total: "Shard chunks whose checksum did not match (the shard file was then read around).",
  shardgate_hedged_reads_total:
    "Shard files reads went around because their node was slow: it did not answer within its hedge delay, or a request a read gave up on is still unanswered (parity was read instead).",
  shardgate_heal_shards_total: "Shard files rebuilt from the survivors and written back (result=rebuilt), or that could not be (result=failed).",
  shardgate_rebalance_shards_total:
    "Shard files the scrub's walk found on a node placement would not choose today, a node added or draining (state=misplaced), and those it moved (state=moved).",
  shardgate_orphan_files_total:
    "Shard files on nodes that nothing referenced, older than the grace period, deleted by the orphan sweep (result=removed) or not (result=failed).",
  shardgate_garbage_parts_total:
    "Parts whose shard files metadata gave up (expired or dropped uploads) and that were deleted (result=removed), or not yet (result=failed).",
  shardgate_key_lookups_total: "Access keys looked up in the key store (its Durable Object) by request authentication, by result: found, or unknown.",
  shardgate_auth_rejected_total:
    "Signed requests refused by authentication, by reason: the S3 error code; SlowDown for a client that failed too often, or for unknown key ids past the lookup budget.",
  shardgate_lifecycle_expired_total:
    "What lifecycle rules expired, by action: current objects (deleted, or a delete marker added), noncurrent versions and lone delete markers deleted, incomplete multipart uploads aborted.",
} as const;

export type CounterName = keyof typeof COUNTERS;
type Labels = Record<string, string | number>;

/** Where flushed totals go: the MetricsStore Durable Object. */
export interface MetricsSink {
  /** Adds to each series' total (series key → delta). */
  add(deltas: Record<string, number>): Promise<void>;
  /** Every series' total (series key → value). */
  snapshot(): Promise<Record<string, number>>;
}

const FLUSH_DELAY_MS = 1000;
/** Distinct series keys remembered (labels include node ids and statuses: a few hundred). */
const MAX_CACHED_KEYS = 4096;

/** One series' identity: `name{label="value",...}` with labels sorted, values escaped. */
export function seriesKey(name: CounterName, labels: Labels = {}): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${String(labels[k]).replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"')}"`);
  return parts.length ? `${name}{${parts.join(",")}}` : name;
}

export class Metrics {
  private pending = new Map<string, number>();
  /** When the pending flush was scheduled (0: none). One that never ran (its request was
   *  cancelled) stops blocking new ones after a few delays. */
  private scheduledAt = 0;
  /** Flushes sent and not yet answered. A count, not a promise: another request must never await
   *  a promise this one created (the runtime would cancel it as hung). */
  private inflight = 0;
  /** When the latest flush was sent: one never answered (its request was cancelled) stops being
   *  waited for after a second. */
  private sentAt = 0;

  /** Series keys by name and label values as the caller passed them: a request adds several
   *  counts, and sorting and escaping labels for each showed up in profiles. Bounded. */
  private readonly keys = new Map<string, string>();

  add(name: CounterName, value = 1, labels?: Labels): void {
    if (value === 0) return;
    const key = labels ? this.labelledKey(name, labels) : name;
    this.pending.set(key, (this.pending.get(key) ?? 0) + value);
  }

  private labelledKey(name: CounterName, labels: Labels): string {
    let id = name as string;
    for (const k in labels) id += `\u0000${k}\u0000${labels[k]}`;
    let key = this.keys.get(id);
    if (key === undefined) {
      key = seriesKey(name, labels);
      if (this.keys.size >= MAX_CACHED_KEYS) this.keys.clear();
      this.keys.set(id, key);
    }
    return key;
  }

  /**
   * Schedules a flush of what is pending (once per FLUSH_DELAY_MS) and returns it for waitUntil,
   * or null when one is already scheduled (most requests: nothing to wait for).
   * Only the request that schedules the flush waits for it: a request waiting on a timer of
   * another request's would look hung to the runtime, which then cancels it.
   */
  flushSoon(sink: () => MetricsSink): Promise<void> | null {
    const now = Date.now();
    if (this.scheduledAt !== 0 && now - this.scheduledAt < 5 * FLUSH_DELAY_MS) return null;
    this.scheduledAt = now;
    return new Promise<void>((r) => setTimeout(r, FLUSH_DELAY_MS)).then(() => {
      this.scheduledAt = 0;
      return this.flush(sink());
    });
  }

  /**
   * Adds everything pending to the sink, once the flushes other requests have in flight were
   * answered (so a reader who flushes first sees every count made before): it polls for that on
   * its own timer. On failure the deltas go back to pending.
   */
  async flush(sink: MetricsSink): Promise<void> {
    while (this.inflight > 0 && Date.now() - this.sentAt < 1000) await new Promise((r) => setTimeout(r, 10));
    if (this.pending.size === 0) return;
    const deltas = this.pending;
    this.pending = new Map();
    this.inflight++;
    this.sentAt = Date.now();
    try {
      await sink.add(Object.fromEntries(deltas));
    } catch (e) {
      for (const [k, v] of deltas) this.pending.set(k, (this.pending.get(k) ?? 0) + v);
      throw e;
    } finally {
      this.inflight--;
    }
  }
}

/** This isolate's counters. */
export const metrics = new Metrics();

/** Prometheus text exposition (format 0.0.4) of the totals: HELP and TYPE for every counter,
 *  unlabelled counters at 0 when nothing was counted yet. */
export function renderPrometheus(totals: Record<string, number>): string {
  const byName = new Map<string, string[]>();
  for (const [series, value] of Object.entries(totals).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const name = series.replace(/\{.*$/, "");
    const lines = byName.get(name) ?? [];
    lines.push(`${series} ${value}`);
    byName.set(name, lines);
  }
  let out = "";
  for (const [name, help] of Object.entries(COUNTERS)) {
    out += `# HELP ${name} ${help}\n# TYPE ${name} counter\n`;
    const lines = byName.get(name);
    if (lines) out += `${lines.join("\n")}\n`;
    else if (!COUNTER_LABELS[name as CounterName]) out += `${name} 0\n`;
  }
  return out;
}

/** Counters that carry labels (and so have no series until something is counted). */
const COUNTER_LABELS: Record<CounterName, boolean> = {
  shardgate_requests_total: true,
  shardgate_client_bytes_sent_total: false,
  shardgate_client_bytes_received_total: false,
  shardgate_node_bytes_read_total: true,
  shardgate_node_bytes_written_total: true,
  shardgate_node_requests_total: true,
  shardgate_degraded_reads_total: false,
  shardgate_checksum_failures_total: false,
  shardgate_hedged_reads_total: false,
  shardgate_heal_shards_total: true,
  shardgate_rebalance_shards_total: true,
  shardgate_garbage_parts_total: true,
  shardgate_orphan_files_total: true,
  shardgate_lifecycle_expired_total: true,
  shardgate_key_lookups_total: true,
  shardgate_auth_rejected_total: true,
};
