// Prometheus metrics for the whole gateway. Counters and the request duration histogram: each
// isolate counts into its own pending deltas (no I/O on the request path) and adds them to the
// MetricsStore Durable Object, which holds the totals, at most once per FLUSH_DELAY_MS, after the
// response. GET /_shardgate/metrics flushes its own isolate first, so a single isolate
// (`npm start`) always reads exact figures. A histogram travels as counters too, which add up
// across isolates like any other: each bucket's own count (`…_in{le}`: observations above the
// bound below and at most `le`, only the buckets that got any), its sum and count; rendering
// makes the buckets cumulative. Gauges (GAUGES) are not stored: the scrape reads them when it
// renders (node health, the heal queues, the build).
import { Lru } from "../shared/bounded";

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
  shardgate_block_cache_lookups_total: "Reads of a part's stored bytes that looked in the block cache, by result: hit (every segment there) or miss.",
  shardgate_block_cache_bytes_served_total: "Stored bytes of parts served from the block cache instead of the nodes.",
  shardgate_block_cache_fills_total: "Segments put into the block cache after a verified read from the nodes.",
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
  shardgate_notification_events_total:
    "Event notifications by result: written to a bucket's outbox in the commit's transaction (queued), not written because the outbox was full (dropped), given up after their last attempt and kept as dead letters (dead), dead letters put back by the admin API (retried). What waits: shardgate_notification_outbox_events.",
  shardgate_notification_deliveries_total:
    "Webhook POSTs of event notifications, by result: ok (a 2xx answer) or failed (another status, a timeout, no answer).",
  shardgate_replication_versions_total:
    "Bucket replication, by result: versions and delete markers written to a bucket's outbox in the commit's transaction (queued), not written because the outbox was full (dropped), replicated to their destination (completed), an attempt failed and retried later (retried), given up after their last attempt, the version marked FAILED (failed). What waits: shardgate_replication_pending.",
  shardgate_replication_uploads_abandoned_total:
    "Multipart uploads begun at a remote replication target whose abort failed 20 times: given up, their parts left at the remote for its own lifecycle rules to remove.",
} as const;

export type CounterName = keyof typeof COUNTERS;
type Labels = Record<string, string | number>;

/** The request duration histogram: time from a request's arrival to its response's headers. */
export const DURATION = "shardgate_request_duration_seconds";
const DURATION_HELP =
  "Time from an S3 request's arrival to its response's headers (a body streams after), by operation. In workerd the clock advances only on I/O.";
/** Upper bounds of its buckets (seconds); +Inf follows. */
export const DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Distinct `op` labels the histogram keeps (the operations table's names are fewer). */
const MAX_DURATION_OPS = 512;

/** Every gauge the gateway exports: name → help text. Read at scrape time, never stored. */
export const GAUGES = {
  shardgate_build_info: "The gateway's version and its core's, as labels; always 1.",
  shardgate_ready: "1 when GET /_shardgate/ready answers 200 (metadata answers, at least k + 1 nodes reachable), else 0; as the answering isolate saw it.",
  shardgate_block_cache_bytes: "Bytes the block cache's store holds (npm start's store on disk; absent on Cloudflare, whose cache does not say).",
  shardgate_block_cache_entries: "Entries (segments) the block cache's store holds, likewise.",
  shardgate_block_cache_capacity_bytes: "The most the block cache's store holds (shardgate.json cacheMiB), likewise.",
  shardgate_block_cache_evictions: "Entries the block cache's store dropped to stay within its capacity since it started, likewise.",
  shardgate_node_up:
    "1 when the node answered the readiness probe (a HEAD of a key that does not exist, at most every 2 s, 2 s timeout), else 0; as the answering isolate saw it.",
  shardgate_node_breaker_open: "1 while the node's circuit breaker refuses requests (consecutive failures), else 0; the answering isolate's breaker.",
  shardgate_node_latency_seconds: "Moving average of the node's time to response headers (GET and HEAD), as the answering isolate measured it.",
  shardgate_node_stored_bytes:
    "Bytes of shard files on the node as the last complete scrub pass counted them from the manifests (absent before the first pass ends).",
  shardgate_node_stored_files: "Shard files on the node as the last complete scrub pass counted them from the manifests.",
  shardgate_scrub_last_pass_finished_timestamp_seconds:
    "When the last complete scrub pass (whose counts the stored gauges show) finished, in seconds since the epoch.",
  shardgate_heal_queue_objects:
    "Objects waiting in the heal queues, summed over the buckets (at most 1000 buckets counted), counted at most once a minute per isolate.",
  shardgate_heal_queue_age_seconds: "How long ago shardgate_heal_queue_objects was counted.",
  shardgate_notification_outbox_events:
    "Event notifications waiting in the buckets' outboxes for delivery, summed over the buckets (at most 1000 buckets counted), counted at most once a minute per isolate.",
  shardgate_notification_dead_letters: "Event notifications given up after their last attempt and kept as dead letters, summed the same way.",
  shardgate_replication_pending:
    "Bucket replication's backlog: versions and delete markers waiting in the buckets' outboxes for their destination, summed over the buckets (at most 1000 buckets counted), counted at most once a minute per isolate.",
  shardgate_replication_failed: "Replication rows given up after their last attempt (their versions FAILED), kept as dead letters, summed the same way.",
} as const;

export type GaugeName = keyof typeof GAUGES;
export interface GaugeSample {
  name: GaugeName;
  labels?: Labels;
  value: number;
}

/** One operation's pending observations: a count per bucket (not cumulative; the last is +Inf),
 *  their sum (s), and the series keys they flush to. */
interface DurationCounts {
  readonly counts: Float64Array;
  sum: number;
  n: number;
  readonly bucketKeys: readonly string[];
  readonly sumKey: string;
  readonly countKey: string;
}

/** Where flushed totals go: the MetricsStore Durable Object. */
export interface MetricsSink {
  /** Adds to each series' total (series key → delta). */
  add(deltas: Record<string, number>): Promise<void>;
  /** Every series' total (series key → value). */
  snapshot(): Promise<Record<string, number>>;
}

const FLUSH_DELAY_MS = 1000;

/** One series' identity: `name{label="value",...}` with labels sorted, values escaped. */
export function seriesKey(name: string, labels: Labels = {}): string {
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
   *  counts, and sorting and escaping labels for each showed up in profiles. 4096 at most (labels
   *  include node ids and statuses: a few hundred), the oldest out first. */
  private readonly keys = new Lru<string, string>({ entries: 4096 });

  /** The duration histogram's pending observations, by operation (allocated once per operation). */
  private readonly durations = new Map<string, DurationCounts>();

  /**
   * Records one request's duration (ms) under its operation: a bucket found by a walk over 13
   * bounds, three additions; nothing allocated once the operation was seen.
   */
  observeDuration(op: string, ms: number): void {
    let h = this.durations.get(op);
    if (h === undefined) {
      if (this.durations.size >= MAX_DURATION_OPS) return;
      h = {
        counts: new Float64Array(DURATION_BUCKETS.length + 1),
        sum: 0,
        n: 0,
        bucketKeys: [...DURATION_BUCKETS.map(String), "+Inf"].map((le) => seriesKey(`${DURATION}_in`, { le, op })),
        sumKey: seriesKey(`${DURATION}_sum`, { op }),
        countKey: seriesKey(`${DURATION}_count`, { op }),
      };
      this.durations.set(op, h);
    }
    const seconds = ms / 1000;
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]) i++;
    h.counts[i]++;
    h.sum += seconds;
    h.n++;
  }

  /** Moves the histogram's observations into the pending deltas: each bucket that got any (a
   *  flush writes a few rows per operation, not one per bound). */
  private foldDurations(): void {
    for (const h of this.durations.values()) {
      if (h.n === 0) continue;
      for (let i = 0; i < h.counts.length; i++) {
        if (h.counts[i] === 0) continue;
        this.pending.set(h.bucketKeys[i], (this.pending.get(h.bucketKeys[i]) ?? 0) + h.counts[i]);
        h.counts[i] = 0;
      }
      this.pending.set(h.sumKey, (this.pending.get(h.sumKey) ?? 0) + h.sum);
      this.pending.set(h.countKey, (this.pending.get(h.countKey) ?? 0) + h.n);
      h.sum = 0;
      h.n = 0;
    }
  }

  add(name: CounterName, value = 1, labels?: Labels): void {
    if (value === 0) return;
    const key = labels ? this.labelledKey(name, labels) : name;
    this.pending.set(key, (this.pending.get(key) ?? 0) + value);
  }

  private labelledKey(name: CounterName, labels: Labels): string {
    let id = name as string;
    for (const k in labels) id += `\u0000${k}\u0000${labels[k]}`;
    let key = this.keys.peek(id);
    if (key === undefined) {
      key = seriesKey(name, labels);
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
    this.foldDurations();
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

/** A sample's value as Prometheus writes it (String gives NaN as it wants, not the infinities). */
function sampleValue(v: number): string {
  return v === Number.POSITIVE_INFINITY ? "+Inf" : v === Number.NEGATIVE_INFINITY ? "-Inf" : String(v);
}

/**
 * Prometheus text exposition (format 0.0.4) of the stored totals and the scrape's gauges: HELP and
 * TYPE for every metric, unlabelled counters at 0 when nothing was counted yet, each operation's
 * histogram buckets in order of `le` (every bound, +Inf last), then its _sum and _count.
 */
export function renderPrometheus(totals: Record<string, number>, gauges: readonly GaugeSample[] = []): string {
  const byName = new Map<string, string[]>();
  for (const [series, value] of Object.entries(totals).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const name = series.replace(/\{.*$/, "");
    const lines = byName.get(name) ?? [];
    lines.push(`${series} ${sampleValue(value)}`);
    byName.set(name, lines);
  }
  let out = "";
  for (const [name, help] of Object.entries(COUNTERS)) {
    out += `# HELP ${name} ${help}\n# TYPE ${name} counter\n`;
    const lines = byName.get(name);
    if (lines) out += `${lines.join("\n")}\n`;
    else if (UNLABELLED.has(name as CounterName)) out += `${name} 0\n`;
  }
  out += `# HELP ${DURATION} ${DURATION_HELP}\n# TYPE ${DURATION} histogram\n${renderDurations(totals)}`;
  for (const [name, help] of Object.entries(GAUGES)) {
    out += `# HELP ${name} ${help}\n# TYPE ${name} gauge\n`;
    for (const g of gauges) if (g.name === name) out += `${seriesKey(name, g.labels)} ${sampleValue(g.value)}\n`;
  }
  return out;
}

/** The histogram's series, one operation after another: the stored counts of each bucket (`…_in`;
 *  a bucket never observed has none) summed up to each bound. */
function renderDurations(totals: Record<string, number>): string {
  const ops = new Map<string, Map<string, number>>(); // op's label text → le → count
  const bucket = new RegExp(`^${DURATION}_in\\{le="([^"]*)",(.*)\\}$`);
  for (const [series, value] of Object.entries(totals)) {
    const m = bucket.exec(series);
    if (!m) continue;
    const les = ops.get(m[2]) ?? new Map<string, number>();
    les.set(m[1], value);
    ops.set(m[2], les);
  }
  let out = "";
  for (const rest of [...ops.keys()].sort()) {
    const les = ops.get(rest) as Map<string, number>;
    let previous = 0;
    for (const le of [...DURATION_BUCKETS.map(String), "+Inf"]) {
      previous += les.get(le) ?? 0;
      out += `${DURATION}_bucket{le="${le}",${rest}} ${sampleValue(previous)}\n`;
    }
    out += `${DURATION}_sum{${rest}} ${sampleValue(totals[`${DURATION}_sum{${rest}}`] ?? 0)}\n`;
    out += `${DURATION}_count{${rest}} ${sampleValue(totals[`${DURATION}_count{${rest}}`] ?? previous)}\n`;
  }
  return out;
}

/** Counters without labels: each has its one series, at 0 until something is counted (labelled ones have none until then). */
const UNLABELLED: ReadonlySet<CounterName> = new Set([
  "shardgate_client_bytes_sent_total",
  "shardgate_client_bytes_received_total",
  "shardgate_degraded_reads_total",
  "shardgate_block_cache_bytes_served_total",
  "shardgate_block_cache_fills_total",
  "shardgate_checksum_failures_total",
  "shardgate_hedged_reads_total",
  "shardgate_replication_uploads_abandoned_total",
]);
