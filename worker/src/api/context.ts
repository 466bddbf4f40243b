// What every S3 handler gets: the request, who signed it, configuration, the core, and the
// metadata Durable Objects.
import type { Authenticated } from "../auth/sigv4";
import type { Env, GatewayConfig } from "../config";
import type { Core } from "../core-api";
import * as stubs from "../meta/stubs";

export interface RequestContext {
  request: Request;
  url: URL;
  env: Env;
  config: GatewayConfig;
  core: Core;
  auth: Authenticated;
  requestId: string;
  /** Work that may finish after the response (cleanup of superseded shard files). */
  waitUntil(promise: Promise<unknown>): void;
}

export function bucketIndex(ctx: Pick<RequestContext, "env">, bucket: string) {
  return stubs.bucketIndex(ctx.env, bucket);
}

export function bucketRegistry(ctx: Pick<RequestContext, "env">) {
  return stubs.bucketRegistry(ctx.env);
}
