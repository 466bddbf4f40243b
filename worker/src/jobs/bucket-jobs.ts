// The bucket index as the runtime runs it: meta/bucket-index.ts (metadata only: it keeps the
// outbox's rows and sets the alarm) with the background jobs that leave the metadata, from its
// alarm: the delivery of its event notifications (services/notification-delivery.ts) and its
// replication (services/replication.ts). Each bucket's index is then the only deliverer of its
// outbox, so a row is never sent twice at once and the order per key holds. worker/src/index.ts
// exports this class under the binding's name.
import { errorText } from "../errors";
import { freshGatewayConfig, loadConfig } from "../config";
import { core } from "../core";
import { BucketIndex } from "../meta/bucket-index";
import { REPLICA_PREFIX } from "../meta/replication-rules";
import { overlaySource } from "../services/node-overlay";
import { replicateOutbox } from "../services/replication";
import { deliverOutbox, notificationsDue } from "../services/notification-delivery";

export class BucketIndexWithDelivery extends BucketIndex {
  protected override outboxCap(): number {
    return loadConfig(this.env).notify.cap;
  }

  /** One delivery run of each consumer; whether it tried any row. Logs and swallows errors (the rows stay for the next run). */
  protected override async deliverEvents(): Promise<boolean> {
    if (this.outbox.nextDue() === null && this.replication.nextUploadAbort() === null) return false;
    const name = this.sql.exec<{ name: string }>("SELECT name FROM bucket WHERE id = 1").toArray()[0]?.name ?? "";
    const [notified, replicated] = await Promise.all([this.notifyRun(name), this.replicationRun(name)]);
    return notified || replicated;
  }

  private async notifyRun(name: string): Promise<boolean> {
    if (!notificationsDue(this.outbox)) return false;
    try {
      const run = await deliverOutbox(this.outbox, name, this.env, loadConfig(this.env), (f) => this.ctx.storage.transactionSync(f));
      return run.delivered + run.failed > 0;
    } catch (e) {
      this.outbox.forget();
      console.error(JSON.stringify({ notifications: { bucket: name, error: errorText(e) } }));
      return false;
    }
  }

  private async replicationRun(name: string): Promise<boolean> {
    const aborts = this.replication.nextUploadAbort();
    if (this.outbox.nextDue(REPLICA_PREFIX) === null && (aborts === null || aborts > Date.now())) return false;
    try {
      const config = await freshGatewayConfig(this.env, overlaySource(this.env));
      const ctx = { env: this.env, config, core, waitUntil: (p: Promise<unknown>) => this.ctx.waitUntil(p) };
      const source = {
        bucket: name,
        outbox: this.outbox,
        replication: this.replication,
        version: (key: string, versionId: string) => this.storedVersion(key, versionId),
        transact: (f: () => void) => this.ctx.storage.transactionSync(f),
      };
      const run = await replicateOutbox(ctx, source);
      return run.completed + run.failed + run.dead > 0;
    } catch (e) {
      this.outbox.forget();
      this.replication.forget();
      console.error(JSON.stringify({ replication: { bucket: name, error: errorText(e) } }));
      return false;
    }
  }
}
