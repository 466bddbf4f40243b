// The access keys other than the root key, and what each may do: one SQLite-backed Durable Object
// (env.KEY_STORE.idFromName("keys")). A key's secret is stored sealed (auth/secret-box.ts) by the
// Worker before it gets here: this object, and whoever reads its storage, never sees it in clear.
import { DurableObject } from "cloudflare:workers";
import { migrate } from "./schema";
import type { BucketGrant, KeyRecord, KeyWithGrants } from "./types";

const SCHEMA: readonly (readonly string[])[] = [
  [
    "CREATE TABLE keys (id TEXT PRIMARY KEY, name TEXT NOT NULL, created INTEGER NOT NULL, sealed_secret TEXT NOT NULL, enabled INTEGER NOT NULL, create_bucket INTEGER NOT NULL) WITHOUT ROWID",
    // One row per key and bucket it has a right on; a key with no right left has no row.
    "CREATE TABLE grants (key_id TEXT NOT NULL, bucket TEXT NOT NULL, read INTEGER NOT NULL, write INTEGER NOT NULL, owner INTEGER NOT NULL, PRIMARY KEY (key_id, bucket)) WITHOUT ROWID",
    "CREATE INDEX grants_by_bucket ON grants (bucket)",
  ],
  // Sessions (temporary credentials) issued before this time (ms) are refused: set when a disabled
  // key is enabled again, so that its sessions stay ended. Existing keys: 0, none refused.
  ["ALTER TABLE keys ADD COLUMN sessions_not_before INTEGER NOT NULL DEFAULT 0"],
];

type KeyRow = { id: string; name: string; created: number; sealed_secret: string; enabled: number; create_bucket: number; sessions_not_before: number };
type GrantRow = { key_id: string; bucket: string; read: number; write: number; owner: number };

/** What a key's settings may change to (absent: unchanged). */
export interface KeyChange {
  name?: string;
  enabled?: boolean;
  createBucket?: boolean;
}

export class KeyStore extends DurableObject {
  constructor(ctx: DurableObjectState, env: Cloudflare.Env) {
    super(ctx, env);
    migrate(ctx.storage, SCHEMA);
  }

  private readonly sql = this.ctx.storage.sql;

  /** Stores a new key; false when its id is taken. */
  async create(key: KeyRecord & { sealedSecret: string }): Promise<boolean> {
    if (this.row(key.id)) return false;
    const insert = "INSERT INTO keys (id, name, created, sealed_secret, enabled, create_bucket) VALUES (?, ?, ?, ?, ?, ?)";
    this.sql.exec(insert, key.id, key.name, key.created, key.sealedSecret, key.enabled ? 1 : 0, key.createBucket ? 1 : 0);
    return true;
  }

  /** Every key (without secrets) with its grants, oldest first. */
  async list(): Promise<(KeyRecord & { grants: BucketGrant[] })[]> {
    const grants = new Map<string, BucketGrant[]>();
    for (const g of this.sql.exec<GrantRow>("SELECT * FROM grants ORDER BY bucket").toArray()) {
      grants.set(g.key_id, [...(grants.get(g.key_id) ?? []), grantOf(g)]);
    }
    return this.sql
      .exec<KeyRow>("SELECT * FROM keys ORDER BY created, id")
      .toArray()
      .map((r) => ({ ...recordOf(r), grants: grants.get(r.id) ?? [] }));
  }

  /** One key with its sealed secret and every grant: what authenticating and authorizing it need. */
  async lookup(id: string): Promise<KeyWithGrants | null> {
    const row = this.row(id);
    if (!row) return null;
    const grants = this.sql.exec<GrantRow>("SELECT * FROM grants WHERE key_id = ?", id).toArray().map(grantOf);
    return { ...recordOf(row), sealedSecret: row.sealed_secret, grants, sessionsNotBefore: row.sessions_not_before };
  }

  /**
   * Changes a key's settings; the key as it is now, or null when there is no such key. Enabling a
   * disabled key ends the sessions issued before (its sessions stop at the disabling and stay so;
   * set at the enabling, it also catches sessions issued while other isolates still held the key enabled).
   */
  async update(id: string, change: KeyChange, now = Date.now()): Promise<KeyRecord | null> {
    const row = this.row(id);
    if (!row) return null;
    const name = change.name ?? row.name;
    const enabled = change.enabled ?? row.enabled === 1;
    const createBucket = change.createBucket ?? row.create_bucket === 1;
    const notBefore = enabled && row.enabled === 0 ? now : row.sessions_not_before;
    const update = "UPDATE keys SET name = ?, enabled = ?, create_bucket = ?, sessions_not_before = ? WHERE id = ?";
    this.sql.exec(update, name, enabled ? 1 : 0, createBucket ? 1 : 0, notBefore, id);
    return recordOf({ ...row, name, enabled: enabled ? 1 : 0, create_bucket: createBucket ? 1 : 0 });
  }

  /** Deletes a key and its grants; false when there was no such key. */
  async remove(id: string): Promise<boolean> {
    if (!this.row(id)) return false;
    this.sql.exec("DELETE FROM grants WHERE key_id = ?", id);
    this.sql.exec("DELETE FROM keys WHERE id = ?", id);
    return true;
  }

  /** Sets a key's rights on a bucket (none: the grant is removed); false when there is no such key. */
  async grant(id: string, grant: BucketGrant): Promise<boolean> {
    if (!this.row(id)) return false;
    if (!grant.read && !grant.write && !grant.owner) {
      this.sql.exec("DELETE FROM grants WHERE key_id = ? AND bucket = ?", id, grant.bucket);
      return true;
    }
    const upsert =
      "INSERT INTO grants (key_id, bucket, read, write, owner) VALUES (?, ?, ?, ?, ?) ON CONFLICT (key_id, bucket) DO UPDATE SET read = excluded.read, write = excluded.write, owner = excluded.owner";
    this.sql.exec(upsert, id, grant.bucket, grant.read ? 1 : 0, grant.write ? 1 : 0, grant.owner ? 1 : 0);
    return true;
  }

  /** The keys with rights on `bucket`. */
  async bucketGrants(bucket: string): Promise<{ keyId: string; grant: BucketGrant }[]> {
    return this.sql
      .exec<GrantRow>("SELECT * FROM grants WHERE bucket = ? ORDER BY key_id", bucket)
      .toArray()
      .map((g) => ({ keyId: g.key_id, grant: grantOf(g) }));
  }

  /** Forgets every grant on a deleted bucket, so that a new bucket of that name starts with none. */
  async dropBucket(bucket: string): Promise<void> {
    this.sql.exec("DELETE FROM grants WHERE bucket = ?", bucket);
  }

  private row(id: string): KeyRow | null {
    return this.sql.exec<KeyRow>("SELECT * FROM keys WHERE id = ?", id).toArray()[0] ?? null;
  }
}

function recordOf(r: KeyRow): KeyRecord {
  return { id: r.id, name: r.name, created: r.created, enabled: r.enabled === 1, createBucket: r.create_bucket === 1 };
}

function grantOf(g: GrantRow): BucketGrant {
  return { bucket: g.bucket, read: g.read === 1, write: g.write === 1, owner: g.owner === 1 };
}
