// A bucket's row in its index (meta/bucket-index.ts): whether the bucket exists, and its settings,
// each a column of that one row: the CORS rules, tags, lifecycle rules (and where their pass goes
// on), policy, default encryption and website configuration as JSON text, the versioning state (meta/versions.ts) and the
// object lock configuration (meta/object-lock.ts). Only the index's one instance writes the row,
// one request at a time, so what it has read stays true until it writes it again: BucketSettings
// remembers what every request asks (whether the bucket exists, its versioning, object lock and
// lifecycle rules) and forgets it whenever it changes it.
import { core } from "../core";
import { currentExpiry, type LifecycleRule } from "./lifecycle-rules";
import type { LockConfig } from "./object-lock";
import type { BucketInfo, Expiry, ObjectRecord, VersioningStatus } from "./types";
import * as versions from "./versions";

/** Per-bucket settings kept as JSON in a column of the bucket row (the table names the column). */
export type BucketSetting = "cors" | "tags" | "lifecycle" | "policy" | "encryption" | "website";
const SETTING_COLUMNS: Record<BucketSetting, string> = {
  cors: "cors",
  tags: "tags",
  lifecycle: "lifecycle",
  policy: "policy",
  encryption: "encryption",
  website: "website",
};

type BucketRow = { name: string; created: number; present: number };

export class BucketSettings {
  private present: boolean | undefined;
  private status: VersioningStatus | undefined;
  private rules: LifecycleRule[] | undefined;
  private lock: LockConfig | null | undefined;

  constructor(private readonly sql: SqlStorage) {}

  /** Whether the bucket exists: asked on every request, so remembered. */
  exists(): boolean {
    this.present ??= this.row()?.present === 1;
    return this.present;
  }

  /** The bucket's name and creation time; null when it does not exist. */
  info(): BucketInfo | null {
    const row = this.row();
    return row?.present ? { name: row.name, created: row.created } : null;
  }

  /**
   * Marks the bucket as existing, with no settings (drop cleared them) or, with `objectLock`,
   * versioning Enabled and object lock on. In the caller's transaction.
   */
  create(name: string, created: number, objectLock: boolean): void {
    this.forget();
    const upsert = `INSERT INTO bucket (id, name, created, present) VALUES (1, ?, ?, 1)
       ON CONFLICT (id) DO UPDATE SET name = excluded.name, created = excluded.created, present = 1`;
    this.sql.exec(upsert, name, created);
    if (objectLock) {
      versions.setVersioning(this.sql, "Enabled");
      this.sql.exec("UPDATE bucket SET object_lock = ? WHERE id = 1", JSON.stringify({ enabled: true } satisfies LockConfig));
    }
  }

  /** Marks the bucket as gone and clears every setting, so that a bucket created again starts with none. */
  remove(): void {
    this.forget();
    this.sql.exec(
      "UPDATE bucket SET present = 0, cors = NULL, tags = NULL, versioning = NULL, lifecycle = NULL, lifecycle_cursor = NULL, object_lock = NULL, policy = NULL, encryption = NULL, website = NULL WHERE id = 1",
    );
  }

  /**
   * Forgets what this instance remembers, to read it again. Called around every change of the
   * row's presence, so that a transaction that rolls back leaves nothing stale behind.
   */
  forget(): void {
    this.present = undefined;
    this.status = undefined;
    this.rules = undefined;
    this.lock = undefined;
  }

  /** A setting as stored (JSON), null when none. */
  get(name: BucketSetting): string | null {
    const row = this.sql.exec<Record<string, string | null>>(`SELECT ${SETTING_COLUMNS[name]} AS value FROM bucket WHERE id = 1`).toArray()[0];
    return row?.value ?? null;
  }

  /** Sets (or with null removes) a setting. */
  set(name: BucketSetting, value: string | null): void {
    this.sql.exec(`UPDATE bucket SET ${SETTING_COLUMNS[name]} = ? WHERE id = 1`, value);
    if (name === "lifecycle") {
      this.rules = undefined;
      // New rules start a new pass.
      this.setLifecycleCursor(null);
    }
  }

  versioning(): VersioningStatus {
    // Not `??=`: an unversioned bucket's state is null, which that would query again every time.
    if (this.status === undefined) this.status = versions.versioning(this.sql);
    return this.status;
  }

  setVersioning(status: "Enabled" | "Suspended"): void {
    versions.setVersioning(this.sql, status);
    this.status = status;
  }

  /** The object lock configuration; null: none. */
  lockConfig(): LockConfig | null {
    if (this.lock === undefined) {
      const row = this.sql.exec<{ object_lock: string | null }>("SELECT object_lock FROM bucket WHERE id = 1").toArray()[0];
      this.lock = row?.object_lock ? (JSON.parse(row.object_lock) as LockConfig) : null;
    }
    return this.lock;
  }

  setLockConfig(config: LockConfig): void {
    this.sql.exec("UPDATE bucket SET object_lock = ? WHERE id = 1", JSON.stringify(config));
    this.lock = config;
  }

  /** The lifecycle rules (none for a bucket that does not exist: drop cleared them). */
  lifecycleRules(): LifecycleRule[] {
    this.rules ??= JSON.parse(this.get("lifecycle") || "[]") as LifecycleRule[];
    return this.rules;
  }

  /** When the current object `record` expires by the rules (x-amz-expiration), or null. */
  expiryOf(record: ObjectRecord): Expiry | null {
    const rules = this.lifecycleRules();
    return rules.length === 0 ? null : currentExpiry(rules, record, () => core.decodeManifest(record.manifest).tags);
  }

  /** Where the lifecycle pass goes on (meta/lifecycle-rules.ts); null: it starts anew. */
  lifecycleCursor(): string | null {
    return this.sql.exec<{ c: string | null }>("SELECT lifecycle_cursor AS c FROM bucket WHERE id = 1").toArray()[0]?.c ?? null;
  }

  setLifecycleCursor(next: string | null): void {
    this.sql.exec("UPDATE bucket SET lifecycle_cursor = ? WHERE id = 1", next);
  }

  private row(): BucketRow | null {
    return this.sql.exec<BucketRow>("SELECT name, created, present FROM bucket WHERE id = 1").toArray()[0] ?? null;
  }
}
