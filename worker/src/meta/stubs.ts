// The metadata Durable Objects by name: each bucket's index, the registry of buckets, the metrics,
// the access keys. In a process that does not host them (`--processes N`: every process but the
// first), stand-ins that call them through the home process (meta/remote.ts).
import type { Env } from "../config";
import type { BucketIndex } from "./bucket-index";
import type { KeyStore } from "./key-store";
import type { MetricsStore } from "./metrics-store";
import type { BucketRegistry } from "./registry";
import { type RemoteNamespace, remoteStub } from "./remote";

function stub<T extends Rpc.DurableObjectBranded | undefined>(env: Env, namespace: RemoteNamespace, name: string): DurableObjectStub<T> {
  if (env.SHARDGATE_META) return remoteStub<DurableObjectStub<T>>(env.SHARDGATE_META, namespace, name);
  const ns = env[namespace] as unknown as DurableObjectNamespace<T>;
  return ns.get(ns.idFromName(name));
}

export function bucketIndex(env: Env, bucket: string) {
  return stub<BucketIndex>(env, "BUCKET_INDEX", bucket);
}

export function bucketRegistry(env: Env) {
  return stub<BucketRegistry>(env, "BUCKET_REGISTRY", "registry");
}

export function metricsStore(env: Env) {
  return stub<MetricsStore>(env, "METRICS_STORE", "metrics");
}

export function keyStore(env: Env) {
  return stub<KeyStore>(env, "KEY_STORE", "keys");
}
