// Delivering a bucket's outbox (meta/outbox.ts) to its webhook targets, from the bucket index's
// alarm (jobs/bucket-jobs.ts runs it there): the index is the only deliverer of its outbox, so a row is never sent twice at once and
// the order per key holds. One run takes due rows a batch at a time (at most BATCH, at most
// CONCURRENCY POSTs at once, each with a timeout), for at most ROUNDS batches or BUDGET_MS, and
// answers when the next row is due. Each event is one POST of S3's event message (Records[] with
// one record), signed: X-Shardgate-Timestamp (seconds since the epoch) and X-Shardgate-Signature
// `v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` (docs/operations.md shows the check). A 2xx
// answer delivers it; anything else (another status, a redirect, no answer in time, no target of
// that name) is a failed attempt, retried with backoff. The URL and secret come from the
// operator's SHARDGATE_WEBHOOKS, never from the bucket's configuration.
import { type WebhookTarget, parseWebhooks } from "../config-vars";
import { hmacHex, importHmacKey } from "../auth/crypto";
import { metrics } from "../observability/metrics";
import { type DeliveryVars, type Outbox, type OutboxRow, retryPolicy, sequencer } from "../meta/outbox";

/** Rows one batch takes. */
const BATCH = 32;
/** POSTs in flight at once. */
const CONCURRENCY = 8;
/** Batches one run sends at most, and the time it gives them. */
const ROUNDS = 8;
const BUDGET_MS = 20_000;

/** The outbox targets the operator configured: "webhook:NAME" → the webhook. */
export function webhookTargets(env: Pick<DeliveryVars, "SHARDGATE_WEBHOOKS">): Map<string, WebhookTarget> {
  const parsed = parseWebhooks(env.SHARDGATE_WEBHOOKS) ?? {};
  return new Map(Object.entries(parsed).map(([name, t]) => [`webhook:${name}`, t]));
}

/** A key as S3's event messages carry it: URL-encoded, a space as "+", slashes kept. */
export function eventKey(key: string): string {
  return encodeURIComponent(key).replaceAll("%20", "+").replaceAll("%2F", "/");
}

/** S3's event message (Records[] with this one event) for `row` of bucket `bucket`. */
export function eventMessage(bucket: string, region: string, row: OutboxRow): string {
  const object: Record<string, string | number> = { key: eventKey(row.key) };
  if (row.size !== null) object.size = row.size;
  if (row.etag !== null) object.eTag = row.etag;
  if (row.versionId !== null) object.versionId = row.versionId;
  object.sequencer = sequencer(row.seq);
  const record = {
    eventVersion: "2.1",
    eventSource: "aws:s3",
    awsRegion: region,
    eventTime: new Date(row.time).toISOString(),
    eventName: row.event,
    userIdentity: { principalId: "shardgate" },
    s3: {
      s3SchemaVersion: "1.0",
      configurationId: row.configId,
      bucket: { name: bucket, ownerIdentity: { principalId: "shardgate" }, arn: `arn:aws:s3:::${bucket}` },
      object,
    },
  };
  return JSON.stringify({ Records: [record] });
}

/** The headers that sign `body` with `secret` at `timestamp` (seconds). */
export async function signatureHeaders(secret: string, timestamp: number, body: string): Promise<Record<string, string>> {
  const signature = await hmacHex(await importHmacKey(secret), `${timestamp}.${body}`);
  return { "X-Shardgate-Timestamp": String(timestamp), "X-Shardgate-Signature": `v1=${signature}` };
}

/** POSTs one row; null when delivered, else why not. */
async function post(bucket: string, env: DeliveryVars, timeoutMs: number, targets: Map<string, WebhookTarget>, row: OutboxRow): Promise<string | null> {
  const target = targets.get(row.target);
  if (!target) return `no target ${row.target} is configured`;
  const body = eventMessage(bucket, env.SHARDGATE_REGION || "us-east-1", row);
  const headers = {
    "Content-Type": "application/json",
    "X-Shardgate-Event-Id": `${bucket}/${sequencer(row.seq)}`,
    ...(await signatureHeaders(target.secret, Math.floor(Date.now() / 1000), body)),
  };
  try {
    const response = await fetch(target.url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.status >= 200 && response.status < 300 ? null : `HTTP ${response.status}`;
  } catch (e) {
    return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  }
}

/** Runs `work` over `items` with at most `limit` at once; the results in order. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * One delivery run over `outbox` (in a transaction of `transact` after each batch): what was
 * delivered, failed and given up. The caller sets its alarm for outbox.nextDue() after it.
 */
export async function deliverOutbox(
  outbox: Outbox,
  bucket: string,
  env: DeliveryVars,
  transact: (f: () => void) => void,
): Promise<{ delivered: number; failed: number; dead: number }> {
  const policy = retryPolicy(env);
  const targets = webhookTargets(env);
  const started = Date.now();
  const total = { delivered: 0, failed: 0, dead: 0 };
  for (let round = 0; round < ROUNDS && Date.now() - started < BUDGET_MS; round++) {
    const rows = outbox.due(Date.now(), BATCH, "webhook:");
    if (rows.length === 0) break;
    const errors = await mapBounded(rows, CONCURRENCY, (row) => post(bucket, env, policy.timeoutMs, targets, row));
    const ok = rows.filter((_, i) => errors[i] === null).map((r) => r.seq);
    const failed = rows.flatMap((row, i) => (errors[i] === null ? [] : [{ row, error: errors[i] as string }]));
    let dead = 0;
    transact(() => {
      outbox.delivered(ok);
      dead = outbox.failed(failed, Date.now(), policy);
    });
    total.delivered += ok.length;
    total.failed += failed.length;
    total.dead += dead;
  }
  metrics.add("shardgate_notification_deliveries_total", total.delivered, { result: "ok" });
  metrics.add("shardgate_notification_deliveries_total", total.failed, { result: "failed" });
  metrics.add("shardgate_notification_events_total", total.dead, { result: "dead" });
  return total;
}
