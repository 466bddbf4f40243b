// The schema of a bucket's index (meta/bucket-index.ts), as the list of its migrations
// (meta/schema.ts runs each once, in one transaction). Each table's module reads and writes it:
// the bucket row meta/bucket-settings.ts, objects and versions meta/versions.ts, uploads
// meta/uploads.ts, the heal queue meta/heal-queue.ts, garbage meta/stored-parts.ts, the browser
// path's sessions meta/direct-sessions.ts.
import { OPEN_SESSIONS_SCHEMA } from "./direct-sessions";
import { OUTBOX_SCHEMA, OUTBOX_VERSION_SCHEMA } from "./outbox";
import { PENDING_SCHEMA, QUOTA_SCHEMA } from "./quota";
import {
  REPLICATION_SCHEMA,
  REPLICATION_UPLOAD_RETRY_SCHEMA,
  REPLICATION_UPLOADS_SCHEMA,
  REPLICATION_WALK_SCHEMA,
  REPLICATION_WALK_TARGETS_SCHEMA,
} from "./replication-rules";
import { UPLOADS_SCHEMA } from "./uploads";
import { VERSIONS_SCHEMA } from "./versions";

// Schema versions in order; a migration's statements run once, in one transaction.
export const BUCKET_INDEX_SCHEMA: readonly (readonly string[])[] = [
  [
    // A single row: the bucket's name, creation time and whether it currently exists.
    `CREATE TABLE bucket (
       id INTEGER PRIMARY KEY CHECK (id = 1),
       name TEXT NOT NULL,
       created INTEGER NOT NULL,
       present INTEGER NOT NULL
     )`,
    // WITHOUT ROWID clusters rows by key, so a listing page is a sequential read of the B-tree.
    // The default BINARY collation compares TEXT with memcmp over UTF-8: S3's key order.
    `CREATE TABLE objects (
       key TEXT PRIMARY KEY,
       size INTEGER NOT NULL,
       etag TEXT NOT NULL,
       last_modified INTEGER NOT NULL,
       manifest BLOB NOT NULL
     ) WITHOUT ROWID`,
  ],
  // Multipart uploads and their parts; the bucket's CORS configuration (JSON, or NULL).
  [...UPLOADS_SCHEMA, "ALTER TABLE bucket ADD COLUMN cors TEXT"],
  // Objects waiting for heal: written while some node was down (under-replicated), or read
  // around a missing, failed or rotten shard file. Kept with the object, so a write or delete
  // updates it in the same transaction.
  [
    `CREATE TABLE heal_queue (
       key TEXT PRIMARY KEY,
       reason TEXT NOT NULL,
       since INTEGER NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       last_error TEXT,
       shards TEXT
     ) WITHOUT ROWID`,
  ],
  // Shard files to delete (services/garbage.ts drains it): the parts of uploads that expired or
  // went with their bucket, recorded in the transaction that dropped them. The Durable Object
  // never touches a node itself.
  [
    `CREATE TABLE garbage (
       id INTEGER PRIMARY KEY AUTOINCREMENT,
       part TEXT NOT NULL,
       since INTEGER NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       last_error TEXT
     )`,
  ],
  // Versioning: the bucket's state, and every version that is not a key's current object.
  VERSIONS_SCHEMA,
  // The bucket's tags (JSON), or NULL.
  ["ALTER TABLE bucket ADD COLUMN tags TEXT"],
  // Lifecycle rules (JSON, meta/lifecycle-rules.ts), or NULL, and where their pass goes on.
  ["ALTER TABLE bucket ADD COLUMN lifecycle TEXT", "ALTER TABLE bucket ADD COLUMN lifecycle_cursor TEXT"],
  // Object lock: the bucket's configuration (JSON, meta/object-lock.ts) and each version's lock.
  ["ALTER TABLE bucket ADD COLUMN object_lock TEXT", "ALTER TABLE objects ADD COLUMN lock TEXT", "ALTER TABLE versions ADD COLUMN lock TEXT"],
  // The bucket policy (its JSON document as given), or NULL.
  ["ALTER TABLE bucket ADD COLUMN policy TEXT"],
  // Default server-side encryption ({"algorithm": "AES256"}), or NULL.
  ["ALTER TABLE bucket ADD COLUMN encryption TEXT"],
  // Writes that may happen once (direct-path commits), until their ticket expires: a replayed
  // commit would make two versions share one set of shard files.
  ["CREATE TABLE spent (id TEXT PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID", "CREATE INDEX spent_by_until ON spent (until)"],
  // Direct-path sessions whose commit has begun (no shard file of theirs goes live after it), and
  // shard writes completing now (a lease each, which a seal waits for): services/direct-shards.ts.
  [
    "CREATE TABLE sealed (id TEXT PRIMARY KEY, until INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE shard_writes (session TEXT NOT NULL, lease TEXT NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (session, lease)) WITHOUT ROWID",
  ],
  // Quotas: the bucket's limits, and its usage kept exact by triggers (meta/quota.ts).
  QUOTA_SCHEMA,
  // Static website hosting: the website configuration (JSON, api/format/website-config.ts), or NULL.
  ["ALTER TABLE bucket ADD COLUMN website TEXT"],
  // Event notifications: the configuration, the outbox written in the commits' transactions, its
  // dead letters and what the cap dropped (meta/outbox.ts).
  OUTBOX_SCHEMA,
  // Quotas count the parts of uploads in progress too (meta/quota.ts).
  PENDING_SCHEMA,
  // Replication: the rules and each replicated version's status (meta/replication-rules.ts).
  REPLICATION_SCHEMA,
  // Replication's multipart uploads at remote targets, until completed or aborted (meta/replication-rules.ts).
  REPLICATION_UPLOADS_SCHEMA,
  // Replication's walk of existing objects (ExistingObjectReplication): its cursor and counts (meta/replication-rules.ts).
  REPLICATION_WALK_SCHEMA,
  // Replication's uploads left behind: when each abort is tried again, and how often it was.
  REPLICATION_UPLOAD_RETRY_SCHEMA,
  // The outbox's rows found by key and version (the walk of existing objects asks per key).
  OUTBOX_VERSION_SCHEMA,
  // The walk of existing objects: the targets new to its configuration, its waiting poll's delay,
  // the null versions it passed over.
  REPLICATION_WALK_TARGETS_SCHEMA,
  // Direct-path sessions open: each one's size reserved against the quota, until it ends (meta/direct-sessions.ts).
  OPEN_SESSIONS_SCHEMA,
];
