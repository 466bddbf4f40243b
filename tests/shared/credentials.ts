// The credentials every test gateway runs with: the same local defaults `npm start` uses when
// SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY are unset (see scripts/serve.mjs).
export const CREDENTIALS = { accessKeyId: "shardgate", secretAccessKey: "shardgate-secret" } as const;

/** SHARDGATE_METRICS_TOKEN in the workers test pool. */
export const METRICS_TOKEN = "test-metrics-token";

/** SHARDGATE_MASTER_KEY in the workers test pool (other gateways make their own: scripts/lib/serving.mjs). */
export const MASTER_KEY = "test-master-key-0123456789abcdef0123456789abcdef";
