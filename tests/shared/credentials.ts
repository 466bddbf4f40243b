// The root key the test gateways run with, given to them as SHARDGATE_ACCESS_KEY_ID /
// SHARDGATE_SECRET_ACCESS_KEY (tests/node/gateway.ts, tests/node/cluster.ts; the workers pool's
// bindings in vitest.config.ts). Without them, `npm start` makes a random root key at its first
// start (scripts/lib/serving.mjs rootKey). The secret is the old public default, which a gateway
// serves on loopback only when it is set by hand, as here.
export const CREDENTIALS = { accessKeyId: "shardgate", secretAccessKey: "shardgate-secret" } as const;

/** SHARDGATE_METRICS_TOKEN in the workers test pool. */
export const METRICS_TOKEN = "test-metrics-token";

/** SHARDGATE_MASTER_KEY in the workers test pool (other gateways make their own: scripts/lib/serving.mjs). */
export const MASTER_KEY = "test-master-key-0123456789abcdef0123456789abcdef";
