// The one Durable Object that knows every bucket (env.BUCKET_REGISTRY.idFromName("registry")),
// for ListBuckets. Each bucket's own BucketIndex stays the authority on whether it exists; this
// is the list of names to show.
import { DurableObject } from "cloudflare:workers";
import { migrate } from "./schema";
import type { BucketInfo } from "./types";

const REGISTRY_SCHEMA: readonly (readonly string[])[] = [
  ["CREATE TABLE buckets (name TEXT PRIMARY KEY, created INTEGER NOT NULL) WITHOUT ROWID"],
];

type BucketRow = { name: string; created: number };

export class BucketRegistry extends DurableObject {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, REGISTRY_SCHEMA);
  }

  /** Records a bucket; "exists" (and the first creation time kept) when it is already listed. */
  async add(name: string, created: number): Promise<"created" | "exists"> {
    if (this.row(name)) return "exists";
    this.ctx.storage.sql.exec("INSERT INTO buckets (name, created) VALUES (?, ?)", name, created);
    return "created";
  }

  async remove(name: string): Promise<void> {
    this.ctx.storage.sql.exec("DELETE FROM buckets WHERE name = ?", name);
  }

  /** Every bucket, sorted by name (byte order). */
  async list(): Promise<BucketInfo[]> {
    return this.ctx.storage.sql.exec<BucketRow>("SELECT name, created FROM buckets ORDER BY name").toArray().map(toInfo);
  }

  async get(name: string): Promise<BucketInfo | null> {
    const row = this.row(name);
    return row ? toInfo(row) : null;
  }

  private row(name: string): BucketRow | null {
    return this.ctx.storage.sql.exec<BucketRow>("SELECT name, created FROM buckets WHERE name = ?", name).toArray()[0] ?? null;
  }
}

function toInfo(row: BucketRow): BucketInfo {
  return { name: row.name, created: row.created };
}
