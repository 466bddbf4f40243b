// The one Durable Object that knows every bucket (env.BUCKET_REGISTRY.idFromName("registry")),
// for ListBuckets. Each bucket's own BucketIndex stays the authority on whether it exists; this
// is the list of names to show. It also keeps the background scrub's cursor and results (one
// row), with a lease so that two runs (a cron and an operator's) never walk at the same time, and
// the node overlay: nodes added at runtime and every node's runtime state (meta/node-overlay.ts).
import { DurableObject } from "cloudflare:workers";
import {
  addNode,
  NODE_OVERLAY_SCHEMA,
  type NodeOverlay,
  type NodeState,
  readOverlay,
  recordDrainBatch,
  removeNode,
  type StateChange,
  setNodeState,
  TooFewWritable,
  type WritableRule,
} from "./node-overlay";
import { migrate } from "./schema";
import type { BucketInfo } from "./types";

const REGISTRY_SCHEMA: readonly (readonly string[])[] = [
  ["CREATE TABLE buckets (name TEXT PRIMARY KEY, created INTEGER NOT NULL) WITHOUT ROWID"],
  [
    // One row: the scrub's state as JSON (services/scrub-state.ts), and the lease of the run walking now.
    "CREATE TABLE scrub (id INTEGER PRIMARY KEY CHECK (id = 1), state TEXT, lease_owner TEXT, lease_until INTEGER NOT NULL DEFAULT 0)",
    "INSERT INTO scrub (id, state, lease_owner, lease_until) VALUES (1, NULL, NULL, 0)",
  ],
  NODE_OVERLAY_SCHEMA,
];

type ScrubRow = { state: string | null; lease_owner: string | null; lease_until: number };

/** The scrub's state: a JSON document the scrub service owns (services/scrub-state.ts); kept here as is. */
export type ScrubDocument = object;

/** What `scrubBegin` answers: the state to continue from, or who holds the lease until when. */
export type ScrubLease = { ok: true; state: ScrubDocument | null } | { ok: false; owner: string; until: number };

export class BucketRegistry extends DurableObject {
  private readonly sql = this.ctx.storage.sql;

  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, REGISTRY_SCHEMA);
  }

  /** Records a bucket; "exists" (and the first creation time kept) when it is already listed. */
  async add(name: string, created: number): Promise<"created" | "exists"> {
    if (this.row(name)) return "exists";
    this.sql.exec("INSERT INTO buckets (name, created) VALUES (?, ?)", name, created);
    return "created";
  }

  async remove(name: string): Promise<void> {
    this.sql.exec("DELETE FROM buckets WHERE name = ?", name);
  }

  /** Every bucket, sorted by name (byte order). */
  async list(): Promise<BucketInfo[]> {
    return this.sql.exec<{ name: string; created: number }>("SELECT name, created FROM buckets ORDER BY name").toArray();
  }

  async get(name: string): Promise<BucketInfo | null> {
    return this.row(name);
  }

  /** The scrub's state (null before the first run) and whether a run holds the lease now. */
  async scrubStatus(now: number): Promise<{ state: ScrubDocument | null; running: boolean }> {
    const row = this.scrubRow();
    return { state: row.state === null ? null : (JSON.parse(row.state) as ScrubDocument), running: row.lease_owner !== null && row.lease_until > now };
  }

  /** Takes the scrub lease for run `owner` until `now + leaseMs`, unless another run holds it. */
  async scrubBegin(owner: string, now: number, leaseMs: number): Promise<ScrubLease> {
    const row = this.scrubRow();
    if (row.lease_owner !== null && row.lease_owner !== owner && row.lease_until > now) return { ok: false, owner: row.lease_owner, until: row.lease_until };
    this.sql.exec("UPDATE scrub SET lease_owner = ?, lease_until = ? WHERE id = 1", owner, now + leaseMs);
    return { ok: true, state: row.state === null ? null : (JSON.parse(row.state) as ScrubDocument) };
  }

  /**
   * Saves the state of run `owner` if it still holds the lease, and extends the lease to
   * `leaseUntil` (null releases it). False when the lease was lost (the state is then not saved).
   */
  async scrubSave(owner: string, state: ScrubDocument, leaseUntil: number | null): Promise<boolean> {
    if (this.scrubRow().lease_owner !== owner) return false;
    const save = "UPDATE scrub SET state = ?, lease_owner = ?, lease_until = ? WHERE id = 1";
    this.sql.exec(save, JSON.stringify(state), leaseUntil === null ? null : owner, leaseUntil ?? 0);
    return true;
  }

  /** The node overlay: added nodes and runtime states, with its version. */
  async nodeOverlay(): Promise<NodeOverlay> {
    return readOverlay(this.sql);
  }

  /** Adds a node (its spec JSON, secret sealed); null when that id was added already, else the new overlay. */
  async nodeAdd(id: string, spec: string, now: number): Promise<NodeOverlay | null> {
    return this.ctx.storage.transactionSync(() => (addNode(this.sql, id, spec, now) ? readOverlay(this.sql) : null));
  }

  /** Marks a node draining or active, unless fewer than `rule.minimum` nodes would stay writable. */
  async nodeSetState(id: string, state: NodeState, rule: WritableRule, now: number): Promise<StateChange> {
    try {
      return this.ctx.storage.transactionSync(() => setNodeState(this.sql, id, state, rule, now));
    } catch (e) {
      if (e instanceof TooFewWritable) return { ok: false, writable: e.writable };
      throw e;
    }
  }

  /** Records a batch of a drain walk; answers when the node was found drained (null: not yet). */
  async nodeDrainBatch(id: string, batch: { first: boolean; failed: boolean; last: boolean }, settleMs: number, now: number): Promise<number | null> {
    return this.ctx.storage.transactionSync(() => recordDrainBatch(this.sql, id, batch, settleMs, now));
  }

  /** Removes an added node that is draining and drained clean. */
  async nodeRemove(id: string): Promise<{ result: ReturnType<typeof removeNode>; overlay: NodeOverlay }> {
    return this.ctx.storage.transactionSync(() => ({ result: removeNode(this.sql, id), overlay: readOverlay(this.sql) }));
  }

  private scrubRow(): ScrubRow {
    return this.sql.exec<ScrubRow>("SELECT state, lease_owner, lease_until FROM scrub WHERE id = 1").one();
  }

  private row(name: string): BucketInfo | null {
    return this.sql.exec<{ name: string; created: number }>("SELECT name, created FROM buckets WHERE name = ?", name).toArray()[0] ?? null;
  }
}
