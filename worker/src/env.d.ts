// The Worker's bindings, vars and secrets: `Env`, declared where the runtime's types expect it (the
// Cloudflare.Env of @cloudflare/workers-types, as `wrangler types` would), so that naming the Durable
// Object classes here makes no import circle with the modules that use it (config.ts re-exports it
// as `Env`; its reference to this file brings it into every program that compiles config.ts).
declare namespace Cloudflare {
  interface Env {
    BUCKET_INDEX: DurableObjectNamespace<import("./meta/bucket-index").BucketIndex>;
    BUCKET_REGISTRY: DurableObjectNamespace<import("./meta/registry").BucketRegistry>;
    METRICS_STORE: DurableObjectNamespace<import("./meta/metrics-store").MetricsStore>;
    KEY_STORE: DurableObjectNamespace<import("./meta/key-store").KeyStore>;
    /**
     * In every process but the first of `npm start -- --processes N`: the home process's MetaGate,
     * through which this one reaches the Durable Objects it does not host (meta/remote.ts).
     */
    SHARDGATE_META?: Fetcher;
    /**
     * The master key (a secret, any string of 32 characters or more): access keys' secrets are
     * stored sealed under a key derived from it. Without it, only the root key works.
     */
    SHARDGATE_MASTER_KEY?: string;
    /** "on": the block cache (storage/block-cache.ts) keeps verified blocks in the Cache API (default "off"). */
    SHARDGATE_BLOCK_CACHE?: string;
    /** On plain workerd, the block cache's store (scripts/workerd/block-cache.js): GET /_stats for the metrics. */
    BLOCK_CACHE?: Fetcher;
    /** "on": GETs say `x-shardgate-cache: hit|miss` (default "off"). */
    SHARDGATE_CACHE_HEADER?: string;
    /** "off" refuses Signature Version 2 (default "on": accepted, as MinIO does). */
    SHARDGATE_SIGV2?: string;
    /** The scheduled scrub: deep or shallow, and its budget per run (config.ts SCRUB_DEFAULTS; services/scrub.ts). */
    SHARDGATE_SCRUB_MODE?: string;
    SHARDGATE_SCRUB_OBJECTS_PER_RUN?: string;
    SHARDGATE_SCRUB_MS_PER_RUN?: string;
    SHARDGATE_SCRUB_MOVE_MIB_PER_RUN?: string;
    /** The header a reverse proxy in front sets to the client's address (e.g. X-Real-IP), for auth/throttle.ts; unset: none is trusted. */
    SHARDGATE_CLIENT_IP_HEADER?: string;
    /** Runs the background jobs on an alarm (worker/src/jobs/scheduler.ts). */
    JOB_SCHEDULER?: DurableObjectNamespace<import("./jobs/scheduler").JobScheduler>;
    /** Time between background job runs (ms, default 15 minutes). */
    SHARDGATE_JOB_INTERVAL_MS?: string;
    /** Time between orphan sweeps of the background jobs (ms, default a day). */
    SHARDGATE_ORPHAN_SWEEP_MS?: string;
    /** Age below which the orphan sweep leaves a shard file alone (ms, default a day). */
    SHARDGATE_ORPHAN_GRACE_MS?: string;
    SHARDGATE_NODES: string;
    /**
     * S3-compatible nodes, JSON: { "<node id>": { endpoint, bucket, region, accessKeyId?,
     * secretAccessKey? } }. Credentials left out come from the secrets
     * SHARDGATE_S3_NODE_<ID>_ACCESS_KEY_ID / _SECRET_ACCESS_KEY (ID upper-cased, - as _).
     */
    SHARDGATE_S3_NODES?: string;
    /** Nodes that are local directories: workerd disk services bound under the node's id (plain workerd only). */
    SHARDGATE_DISK_NODES?: string;
    SHARDGATE_DATA_SHARDS: string;
    SHARDGATE_PARITY_SHARDS: string;
    SHARDGATE_BLOCK_BYTES: string;
    SHARDGATE_CHUNK_BYTES: string;
    SHARDGATE_INLINE_BYTES: string;
    SHARDGATE_REGION: string;
    SHARDGATE_WRITE_QUORUM?: string;
    /** How long a node may go without progress (taking the next block, answering) before it counts as failed (ms, default 30000). */
    SHARDGATE_NODE_STALL_MS?: string;
    /** How long a shard stream of a read may send nothing before it is read around (ms, default 5000). */
    SHARDGATE_READ_STALL_MS?: string;
    /** Nodes being drained (comma-separated ids of SHARDGATE_NODES): still read, never written. */
    SHARDGATE_DRAINING_NODES?: string;
    /** Latency added to every request to some nodes, as JSON {"id": ms}: a slow node for benchmarks and tests. */
    SHARDGATE_NODE_DELAY_MS?: string;
    SHARDGATE_ACCESS_KEY_ID?: string;
    SHARDGATE_SECRET_ACCESS_KEY?: string;
    /** Event notification webhooks, JSON {"<name>": {"url", "secret"}} (config-vars.ts parseWebhooks; docs/operations.md). */
    SHARDGATE_WEBHOOKS?: string;
    /** Cloudflare Queue bindings that event notifications may target, comma-separated binding names (services/notification-delivery.ts; docs/operations.md). */
    SHARDGATE_QUEUES?: string;
    /** Remote S3 endpoints buckets may replicate to, JSON {"<name>": {"endpoint", "region", "accessKeyId", "secretAccessKey"}} (config-vars.ts parseReplicationTargets; docs/operations.md). */
    SHARDGATE_REPLICATION_TARGETS?: string;
    /** First retry of a failed event delivery (ms, default 1000), doubling up to SHARDGATE_NOTIFY_RETRY_MAX_MS (default an hour). */
    SHARDGATE_NOTIFY_RETRY_MS?: string;
    SHARDGATE_NOTIFY_RETRY_MAX_MS?: string;
    /** Attempts at delivering an event before it goes to the dead letters (default 30). */
    SHARDGATE_NOTIFY_ATTEMPTS?: string;
    /** Events a bucket's outbox holds at most (default 100000); past it new events are dropped and counted. */
    SHARDGATE_NOTIFY_MAX_PENDING?: string;
    /** How long one webhook POST may take (ms, default 5000). */
    SHARDGATE_NOTIFY_TIMEOUT_MS?: string;
    /** When set, GET /_shardgate/metrics also accepts `Authorization: Bearer <token>`. */
    SHARDGATE_METRICS_TOKEN?: string;
    /**
     * The web console's origins (comma-separated `scheme://host[:port]`, never "*"): answered CORS on
     * every request; on Cloudflare, requests to such a host are served the console and nothing else
     * (worker/src/console.ts, docs/console.md).
     */
    SHARDGATE_CONSOLE_ORIGIN?: string;
    /** The gateway's URL as the console reaches it, when the console is served by this Worker on its own host (Cloudflare). */
    SHARDGATE_GATEWAY_URL?: string;
    /** Host suffix under which `bucket.<suffix>` is virtual-hosted style (default "localhost"). */
    SHARDGATE_VIRTUAL_HOST_SUFFIX?: string;
    /** Hosts serving a bucket's website (a JSON object, `{"www.example.com": "site"}`), besides `<bucket>.website.<suffix>` (api/website-endpoint.ts). */
    SHARDGATE_WEBSITE_HOSTS?: string;
    /**
     * When set, the only host names the gateway answers to (comma-separated, `*.example.com` for
     * every name under one), besides loopback names and the hosts it is configured with (config.ts
     * hostAllowed). `npm start` and `npm run dev` set it on a loopback address.
     */
    SHARDGATE_ALLOWED_HOSTS?: string;
    /** Object bytes per part of an upload the client codes itself (docs/direct-path.md; default 16 MiB). */
    SHARDGATE_DIRECT_PART_BYTES?: string;
    /** How long a direct-path upload session or read plan stays valid (ms, default 6 hours). */
    SHARDGATE_DIRECT_SESSION_MS?: string;
    /** Blocks of a client-coded upload read back and checked before its commit (default 4). */
    SHARDGATE_DIRECT_VERIFY_BLOCKS?: string;
  }
}
