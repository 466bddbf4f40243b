// Delivering a bucket's event notifications (its outbox's rows, meta/outbox.ts) to their targets,
// from the bucket index's alarm (jobs/bucket-jobs.ts runs it there): the index is the only
// deliverer of its outbox, so a row is never sent twice at once and the order per key holds. Two
// kinds of target, both the operator's, never named by a URL in a bucket's configuration:
//   - a webhook of SHARDGATE_WEBHOOKS ("webhook:NAME"): one signed POST per event
//     (services/webhook-delivery.ts);
//   - on Cloudflare, a Queue binding that SHARDGATE_QUEUES lists ("queue:BINDING"): the batch's
//     events for that queue in sendBatch calls within Cloudflare's limits, each message S3's event
//     message (Records[] with one record) as a JSON body. A batch that throws or takes longer than
//     the timeout is sent again a message at a time, so a message the queue refuses fails only its
//     own row; the Queue's own consumer then gets at-least-once delivery from Cloudflare.
// One run takes due rows a batch at a time (at most BATCH of each kind), for at most ROUNDS
// batches or BUDGET_MS; a failed row is retried with the outbox's backoff, then kept as a dead
// letter. The caller sets its alarm for outbox.nextDue() after it.
import type { GatewayConfig } from "../config";
import { NOTIFICATION_TARGETS, QUEUE_TARGET, WEBHOOK_TARGET } from "../meta/notification-rules";
import type { Outbox, OutboxRow } from "../meta/outbox";
import { metrics } from "../observability/metrics";
import { withinStall } from "../shared/bounded";
import { eventDocument, postWebhooks, webhookTargets } from "./webhook-delivery";

/** Rows of each kind one batch takes (an event with a key of 1,024 bytes is at most ~4.6 KB). */
const BATCH = 32;
/** Batches one run sends at most, and the time it gives them. */
const ROUNDS = 8;
const BUDGET_MS = 20_000;

/** The Queue bindings of `names` (SHARDGATE_QUEUES) that the Worker's `env` has: "queue:BINDING" → the binding. */
export function queueTargets(env: object, names: readonly string[]): Map<string, Queue> {
  const targets = new Map<string, Queue>();
  for (const name of names) {
    const binding: unknown = Reflect.get(env, name);
    if (isQueue(binding)) targets.set(`${QUEUE_TARGET}${name}`, binding);
  }
  return targets;
}

/** A Queue producer binding: send and sendBatch, and not a service binding (whose RPC stub answers any name with a function). */
function isQueue(v: unknown): v is Queue {
  if (typeof v !== "object" || v === null) return false;
  const q = v as Partial<Queue> & { fetch?: unknown; connect?: unknown };
  return typeof q.send === "function" && typeof q.sendBatch === "function" && q.fetch === undefined && q.connect === undefined;
}

/** Every target a bucket's configuration may name now: the webhooks and the Queue bindings present. */
export function notificationTargets(env: object, config: GatewayConfig): Set<string> {
  return new Set([...webhookTargets(config.webhooks).keys(), ...queueTargets(env, config.queues).keys()]);
}

/** Cloudflare's limits: a message at most 128 KB, a sendBatch at most 100 messages and 256 KB (some room kept for framing). */
const MAX_MESSAGE_BYTES = 128_000;
const MAX_BATCH_BYTES = 240_000;
const MAX_BATCH_MESSAGES = 100;

class TimeoutError extends Error {
  override name = "TimeoutError";
}

/** `work`, or a TimeoutError once `ms` have passed. */
const withTimeout = (work: Promise<unknown>, ms: number) => withinStall(work, ms, () => new TimeoutError(`no answer in ${ms} ms`));

const why = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/** One message of a queue's batch: the row's index and S3's event message. */
type QueueMessage = { i: number; body: unknown };

/**
 * The rows `indexes` of `rows` as messages cut into batches within Cloudflare's limits; a message
 * too large for a Queue is not in one, its row's error set in `errors` instead.
 */
function queueBatches(bucket: string, region: string, rows: readonly OutboxRow[], indexes: readonly number[], errors: (string | null)[]): QueueMessage[][] {
  const utf8 = new TextEncoder();
  const batches: QueueMessage[][] = [];
  let batch: QueueMessage[] = [];
  let batchBytes = 0;
  for (const i of indexes) {
    const body = eventDocument(bucket, region, rows[i] as OutboxRow);
    const bytes = utf8.encode(JSON.stringify(body)).length;
    if (bytes > MAX_MESSAGE_BYTES) {
      errors[i] = `the event is ${bytes} bytes, more than a Queue message takes (${MAX_MESSAGE_BYTES})`;
      continue;
    }
    if (batch.length === MAX_BATCH_MESSAGES || batchBytes + bytes > MAX_BATCH_BYTES) {
      batches.push(batch);
      batch = [];
      batchBytes = 0;
    }
    batch.push({ i, body });
    batchBytes += bytes;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * Sends one batch to `queue`; when it fails, its messages one at a time, so that a message the
 * queue refuses fails only its own row (a send that times out fails the rest with it: the queue
 * is not answering). Errors go to `errors` by row.
 */
async function sendBatch(queue: Queue, messages: readonly QueueMessage[], timeoutMs: number, errors: (string | null)[]): Promise<void> {
  try {
    await withTimeout(queue.sendBatch(messages.map((m) => ({ body: m.body, contentType: "json" as const }))), timeoutMs);
    return;
  } catch (e) {
    if (messages.length === 1) {
      errors[(messages[0] as QueueMessage).i] = why(e);
      return;
    }
  }
  let stalled: string | null = null;
  for (const m of messages) {
    if (stalled !== null) {
      errors[m.i] = stalled;
      continue;
    }
    try {
      await withTimeout(queue.send(m.body, { contentType: "json" }), timeoutMs);
    } catch (e) {
      errors[m.i] = why(e);
      if (e instanceof TimeoutError) stalled = errors[m.i] as string;
    }
  }
}

/** Sends `rows` (queue targets') to their queues, each queue's in batches: for each row, null when sent, else why not. */
async function sendToQueues(bucket: string, env: object, config: GatewayConfig, rows: readonly OutboxRow[]): Promise<(string | null)[]> {
  const queues = queueTargets(env, config.queues);
  const timeoutMs = config.notify.timeoutMs;
  const errors: (string | null)[] = rows.map(() => null);
  const byTarget = new Map<string, number[]>();
  for (const [i, row] of rows.entries()) {
    const indexes = byTarget.get(row.target) ?? [];
    indexes.push(i);
    byTarget.set(row.target, indexes);
  }
  await Promise.all(
    [...byTarget].map(async ([target, indexes]) => {
      const queue = queues.get(target);
      if (!queue) {
        for (const i of indexes) errors[i] = `no Queue binding ${target.slice(QUEUE_TARGET.length)} is configured`;
        return;
      }
      for (const messages of queueBatches(bucket, config.region, rows, indexes, errors)) await sendBatch(queue, messages, timeoutMs, errors);
    }),
  );
  return errors;
}

/**
 * One delivery run over `outbox` (in a transaction of `transact` after each batch): what was
 * delivered, failed and given up.
 */
export async function deliverOutbox(
  outbox: Outbox,
  bucket: string,
  env: object,
  config: GatewayConfig,
  transact: (f: () => void) => void,
): Promise<{ delivered: number; failed: number; dead: number }> {
  const policy = config.notify;
  const started = Date.now();
  const total = { delivered: 0, failed: 0, dead: 0 };
  for (let round = 0; round < ROUNDS && Date.now() - started < BUDGET_MS; round++) {
    const now = Date.now();
    const hooks = outbox.due(now, BATCH, WEBHOOK_TARGET);
    const queued = outbox.due(now, BATCH, QUEUE_TARGET);
    if (hooks.length + queued.length === 0) break;
    const rows = [...hooks, ...queued];
    const errors = [...(await Promise.all([postWebhooks(bucket, config, hooks), sendToQueues(bucket, env, config, queued)])).flat()];
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

/** Whether any notification row (of any target kind) is waiting. */
export function notificationsDue(outbox: Outbox): boolean {
  return NOTIFICATION_TARGETS.some((prefix) => outbox.nextDue(prefix) !== null);
}
