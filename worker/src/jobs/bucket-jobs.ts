// The bucket index as the runtime runs it: meta/bucket-index.ts (metadata only: it keeps the
// outbox's rows and sets the alarm) with the one background job that leaves the metadata, the
// delivery of its event notifications (services/webhook-delivery.ts) from its alarm. Each bucket's
// index is then the only deliverer of its outbox, so a row is never sent twice at once and the
// order per key holds. worker/src/index.ts exports this class under the binding's name.
import { BucketIndex } from "../meta/bucket-index";
import { deliverOutbox } from "../services/webhook-delivery";

export class BucketIndexWithDelivery extends BucketIndex {
  /** One delivery run; whether it tried any row. Logs and swallows its errors (the rows stay for the next run). */
  protected override async deliverEvents(): Promise<boolean> {
    if (this.outbox.nextDue() === null) return false;
    const name = this.sql.exec<{ name: string }>("SELECT name FROM bucket WHERE id = 1").toArray()[0]?.name ?? "";
    try {
      const run = await deliverOutbox(this.outbox, name, this.env, (f) => this.ctx.storage.transactionSync(f));
      return run.delivered + run.failed > 0;
    } catch (e) {
      this.outbox.forget();
      console.error(JSON.stringify({ notifications: { bucket: name, error: e instanceof Error ? e.message : String(e) } }));
      return false;
    }
  }
}
