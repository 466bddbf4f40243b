// Event notifications to webhooks: S3's event message for an outbox row (meta/outbox.ts), and the
// POSTs that deliver a batch of rows (services/notification-delivery.ts runs the batches, at most
// CONCURRENCY POSTs at once, each with a timeout). Each event is one POST of S3's event message
// (Records[] with one record), signed: X-Shardgate-Timestamp (seconds since the epoch) and X-Shardgate-Signature
// `v1=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` (docs/operations.md shows the check). A 2xx
// answer delivers it; anything else (another status, a redirect, no answer in time, no target of
// that name) is a failed attempt, retried with backoff. The URL and secret come from the
// operator's SHARDGATE_WEBHOOKS, never from the bucket's configuration.
import type { GatewayConfig } from "../config";
import type { WebhookTarget } from "../config-vars";
import { hmacHex, importHmacKey } from "../auth/crypto";
import { type OutboxRow, sequencer } from "../meta/outbox";
import { WEBHOOK_TARGET } from "../meta/notification-rules";
import { mapBounded } from "../shared/bounded";

/** POSTs in flight at once. */
const CONCURRENCY = 8;

/** The outbox targets the operator configured (GatewayConfig.webhooks): "webhook:NAME" → the webhook. */
export function webhookTargets(webhooks: Record<string, WebhookTarget>): Map<string, WebhookTarget> {
  return new Map(Object.entries(webhooks).map(([name, t]) => [`${WEBHOOK_TARGET}${name}`, t]));
}

/** A key as S3's event messages carry it: URL-encoded, a space as "+", slashes kept. */
export function eventKey(key: string): string {
  return encodeURIComponent(key).replaceAll("%20", "+").replaceAll("%2F", "/");
}

/** S3's event message (Records[] with this one event) for `row` of bucket `bucket`. */
export function eventDocument(bucket: string, region: string, row: OutboxRow): { Records: unknown[] } {
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
  return { Records: [record] };
}

/** POSTs one row, signed as this file's first comment says; null when delivered, else why not. */
async function post(bucket: string, region: string, timeoutMs: number, targets: Map<string, WebhookTarget>, row: OutboxRow): Promise<string | null> {
  const target = targets.get(row.target);
  if (!target) return `no target ${row.target} is configured`;
  const body = JSON.stringify(eventDocument(bucket, region, row));
  const timestamp = Math.floor(Date.now() / 1000);
  const signature = await hmacHex(await importHmacKey(target.secret), `${timestamp}.${body}`);
  const headers = {
    "Content-Type": "application/json",
    "X-Shardgate-Event-Id": `${bucket}/${sequencer(row.seq)}`,
    "X-Shardgate-Timestamp": String(timestamp),
    "X-Shardgate-Signature": `v1=${signature}`,
  };
  try {
    const response = await fetch(target.url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.status >= 200 && response.status < 300 ? null : `HTTP ${response.status}`;
  } catch (e) {
    return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  }
}

/** POSTs each of `rows` (webhook targets') to its webhook, at most CONCURRENCY at once: for each, null when delivered, else why not. */
export function postWebhooks(bucket: string, config: GatewayConfig, rows: readonly OutboxRow[]): Promise<(string | null)[]> {
  const targets = webhookTargets(config.webhooks);
  return mapBounded(rows, CONCURRENCY, (row) => post(bucket, config.region, config.notify.timeoutMs, targets, row));
}
