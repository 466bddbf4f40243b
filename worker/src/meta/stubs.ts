// The metadata Durable Objects by name: each bucket's index, the registry of buckets, the metrics,
// the access keys.
import type { Env } from "../config";

export function bucketIndex(env: Env, bucket: string) {
  return env.BUCKET_INDEX.get(env.BUCKET_INDEX.idFromName(bucket));
}

export function bucketRegistry(env: Env) {
  return env.BUCKET_REGISTRY.get(env.BUCKET_REGISTRY.idFromName("registry"));
}

export function metricsStore(env: Env) {
  return env.METRICS_STORE.get(env.METRICS_STORE.idFromName("metrics"));
}

export function keyStore(env: Env) {
  return env.KEY_STORE.get(env.KEY_STORE.idFromName("keys"));
}
