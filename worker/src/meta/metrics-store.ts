// The gateway-wide totals behind GET /_shardgate/metrics: one SQLite-backed Durable Object
// (env.METRICS_STORE.idFromName("metrics")) that isolates add their counted deltas to.
import { DurableObject } from "cloudflare:workers";
import { migrate } from "./schema";

const SCHEMA: readonly (readonly string[])[] = [["CREATE TABLE counters (series TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID"]];

export class MetricsStore extends DurableObject {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, SCHEMA);
  }

  async add(deltas: Record<string, number>): Promise<void> {
    const add = "INSERT INTO counters (series, value) VALUES (?, ?) ON CONFLICT (series) DO UPDATE SET value = value + excluded.value";
    for (const [series, value] of Object.entries(deltas)) this.ctx.storage.sql.exec(add, series, value);
  }

  async snapshot(): Promise<Record<string, number>> {
    const rows = this.ctx.storage.sql.exec<{ series: string; value: number }>("SELECT series, value FROM counters").toArray();
    return Object.fromEntries(rows.map((r) => [r.series, r.value]));
  }
}
