// The metadata Durable Objects by name: each bucket's index, the registry of buckets, the metrics,
// the access keys. In a process that does not host them (`--processes N`: every process but the
// first), stand-ins that call them through the home process (meta/remote.ts).
import type { Env } from "../config";
import type { BucketIndex } from "./bucket-index";
import type { KeyStore } from "./key-store";
import type { MetricsStore } from "./metrics-store";
import type { BucketRegistry } from "./registry";
import { noSuchBucket, S3Error } from "../s3-error";
import { type RemoteNamespace, remoteStub } from "./remote";
import { isNoSuchBucket } from "./types";

function stub<T extends Rpc.DurableObjectBranded | undefined>(env: Env, namespace: RemoteNamespace, name: string): DurableObjectStub<T> {
  // SHARDGATE_META is a binding (the home process's MetaGate), not a variable: read here with the namespaces it stands in for (scripts/check-layers.mjs ENV_BINDINGS).
  if (env.SHARDGATE_META) return remoteStub<DurableObjectStub<T>>(env.SHARDGATE_META, namespace, name);
  const ns = env[namespace] as unknown as DurableObjectNamespace<T>;
  return ns.get(ns.idFromName(name));
}

/**
 * The index of bucket `bucket`. What its methods throw when the bucket does not exist
 * (NoSuchBucketError, which arrives as a plain Error with its message) comes out of here as S3's
 * 404 NoSuchBucket naming the bucket, so that callers need not check for it.
 */
export function bucketIndex(env: Env, bucket: string) {
  return answeringNoSuchBucket(stub<BucketIndex>(env, "BUCKET_INDEX", bucket), bucket);
}

/** What a bucket's index answers, or null when the bucket does not exist (to a caller that asks in passing). */
export async function orNullWithoutBucket<T>(answer: Promise<T>): Promise<T | null> {
  try {
    return await answer;
  } catch (e) {
    if (e instanceof S3Error && e.code === "NoSuchBucket") return null;
    throw e;
  }
}

function answeringNoSuchBucket<T extends object>(index: T, bucket: string): T {
  return new Proxy(index, {
    get(target, name) {
      // Read off the stub itself (not the proxy) and called with it as `this`, by Reflect.apply:
      // a Durable Object stub's methods are proxies too, whose every property (`apply` included)
      // would be a remote call of that name.
      const method: unknown = Reflect.get(target, name, target);
      if (typeof name !== "string" || name === "then" || typeof method !== "function") return method;
      return async (...args: unknown[]) => {
        try {
          return await Reflect.apply(method, target, args);
        } catch (e) {
          throw isNoSuchBucket(e) ? noSuchBucket(bucket) : e;
        }
      };
    },
  });
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
