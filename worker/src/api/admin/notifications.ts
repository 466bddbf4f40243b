// The event notifications of a bucket for its operator: `GET /_shardgate/admin/buckets/NAME/notifications[?limit=N]`
// (the outbox's size, when its next row is due, the dead letters: the first N and their number,
// and the events dropped at the outbox's cap; of these, replication's rows) and `POST …/notifications/retry` (every dead letter
// back in the outbox, delivered again in order, with its sequencer kept).
import { sequencer } from "../../meta/outbox";
import { bucketIndex, type RequestContext } from "../http/context";
import { json } from "../http/json";

export async function adminNotifications(ctx: RequestContext, bucket: string, q: { limit: number }): Promise<Response> {
  const status = await bucketIndex(ctx, bucket).notificationStatus(q.limit);
  return json({
    bucket,
    pending: status.pending,
    nextDue: status.nextDue === null ? null : new Date(status.nextDue).toISOString(),
    dropped: status.dropped,
    deadLetters: status.deadCount,
    // Of those, replication's rows (target replica:…): versions waiting, and failed ones.
    replication: status.replication,
    dead: status.dead.map((r) => ({
      sequencer: sequencer(r.seq),
      target: r.target,
      configurationId: r.configId,
      eventName: r.event,
      key: r.key,
      versionId: r.versionId,
      size: r.size,
      eTag: r.etag,
      eventTime: new Date(r.time).toISOString(),
      attempts: r.attempts,
      lastError: r.lastError,
    })),
  });
}

export async function adminRetryNotifications(ctx: RequestContext, bucket: string): Promise<Response> {
  return json({ bucket, retried: await bucketIndex(ctx, bucket).retryDeadLetters() });
}
