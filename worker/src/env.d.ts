// The Worker's bindings, vars and secrets: `Env`, declared where the runtime's types expect it (the
// Cloudflare.Env of @cloudflare/workers-types, as `wrangler types` would), so that naming the Durable
// Object classes here makes no import circle with the modules that use it (config.ts re-exports it
// as `Env`; its reference to this file brings it into every program that compiles config.ts).
declare namespace Cloudflare {
  /**
   * The Worker's SHARDGATE_* variables and secrets, each a string: those of the schema
   * (config-vars.ts VAR_KINDS, which config.ts parses; what each means: docs/operations.md).
   */
  type ShardgateVars = { [K in Exclude<keyof typeof import("./config-vars").VAR_KINDS, "SHARDGATE_META">]?: string };

  interface Env extends ShardgateVars {
    BUCKET_INDEX: DurableObjectNamespace<import("./meta/bucket-index").BucketIndex>;
    BUCKET_REGISTRY: DurableObjectNamespace<import("./meta/registry").BucketRegistry>;
    METRICS_STORE: DurableObjectNamespace<import("./meta/metrics-store").MetricsStore>;
    KEY_STORE: DurableObjectNamespace<import("./meta/key-store").KeyStore>;
    /**
     * In every process but the first of `npm start -- --processes N`: the home process's MetaGate,
     * through which this one reaches the Durable Objects it does not host (meta/remote.ts).
     */
    SHARDGATE_META?: Fetcher;
    /** On plain workerd, the block cache's store (scripts/workerd/block-cache.js): GET /_stats for the metrics. */
    BLOCK_CACHE?: Fetcher;
    /** Runs the background jobs on an alarm (worker/src/jobs/scheduler.ts). */
    JOB_SCHEDULER?: DurableObjectNamespace<import("./jobs/scheduler").JobScheduler>;
  }
}
