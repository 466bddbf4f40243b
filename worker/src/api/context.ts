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

/** Who owns every bucket and object: the gateway has one set of credentials, and its key owns all. */
export function owner(ctx: Pick<RequestContext, "auth">): { id: string; displayName: string } {
  return { id: ctx.auth.accessKeyId, displayName: ctx.auth.accessKeyId };
}

export function bucketIndex(ctx: Pick<RequestContext, "env">, bucket: string) {
  return stubs.bucketIndex(ctx.env, bucket);
}

export function bucketRegistry(ctx: Pick<RequestContext, "env">) {
  return stubs.bucketRegistry(ctx.env);
}
