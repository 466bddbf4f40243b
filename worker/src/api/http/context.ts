// What every S3 handler gets: the request, who signed it, configuration, the core, and the
// metadata Durable Objects.
import type { Authenticated } from "../../auth/sigv4";
import type { Env, GatewayConfig } from "../../config";
import type { Core } from "../../shared/core-api";
import * as stubs from "../../meta/stubs";
import type { Principal } from "../../services/access-keys";

export interface RequestContext {
  request: Request;
  url: URL;
  env: Env;
  config: GatewayConfig;
  core: Core;
  auth: Authenticated;
  /** Who signed it, and what they may do (api/http/permissions.ts). */
  principal: Principal;
  /** When the credentials that signed it expire (temporary credentials), or null: tickets it hands out end by then. */
  credentialsExpire: number | null;
  requestId: string;
  /** Work that may finish after the response (cleanup of superseded shard files). */
  waitUntil(promise: Promise<unknown>): void;
}

/** Where a bucket operation acts. */
export interface BucketAt {
  bucket: string;
}

/** Where an object operation acts: the bucket, the key, and the version `?versionId` names. */
export interface ObjectAt {
  bucket: string;
  key: string;
  /** undefined for none (the current version), null for the null version. */
  versionId: string | null | undefined;
}

/** Where a shard URL leads: the bucket and the ticket the URL carries (docs/direct-path.md). */
export interface ShardAt {
  bucket: string;
  ticket: string;
}

/** Who owns every bucket and object: the gateway is one account, named by its root key; other keys act within it. */
export function owner(ctx: Pick<RequestContext, "auth" | "config">): { id: string; displayName: string } {
  const id = ctx.config.credentials?.accessKeyId ?? ctx.auth.accessKeyId;
  return { id, displayName: id };
}

export function bucketIndex(ctx: Pick<RequestContext, "env">, bucket: string) {
  return stubs.bucketIndex(ctx.env, bucket);
}

export function bucketRegistry(ctx: Pick<RequestContext, "env">) {
  return stubs.bucketRegistry(ctx.env);
}
