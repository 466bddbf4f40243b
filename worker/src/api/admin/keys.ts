// The admin API's access keys (docs/access.md), for the root key only:
//   GET    /_shardgate/admin/keys                      every key, its settings and grants (no secrets)
//   POST   /_shardgate/admin/keys                      {"name", "createBucket"?} → the key with its secret, shown once
//   PATCH  /_shardgate/admin/keys/ID                   {"name"?, "enabled"?, "createBucket"?}
//   DELETE /_shardgate/admin/keys/ID
//   PUT    /_shardgate/admin/keys/ID/buckets/BUCKET    {"read", "write", "owner"} (all false: no rights)
//   GET    /_shardgate/admin/buckets/BUCKET/keys       the keys with rights on a bucket
// The root key's temporary credentials (which the console holds) may only read here: every change
// is refused them before it arrives (api/operations.ts sessionsMay), as AWS refuses IAM calls to
// GetSessionToken credentials. An hour's credentials cannot outlast themselves.
import type { KeyChange } from "../../meta/key-store";
import { invalidArgument } from "../../s3-error";
import { bucketGrants, createKey, deleteKey, grantBucket, listKeys, updateKey } from "../../services/access-keys";
import type { RequestContext } from "../http/context";
import { json, jsonObjectBody } from "../http/json";

const MAX_NAME_LENGTH = 128;

const noSuchKey = (id: string) => invalidArgument(`There is no access key ${id}.`);

function flag(body: Record<string, unknown>, name: string): boolean | undefined {
  const v = body[name];
  if (v === undefined) return undefined;
  if (typeof v !== "boolean") throw invalidArgument(`${name} must be true or false.`);
  return v;
}

function name(body: Record<string, unknown>, required: boolean): string | undefined {
  const v = body.name;
  if (v === undefined && !required) return undefined;
  if (typeof v !== "string" || v.trim() === "" || v.length > MAX_NAME_LENGTH)
    throw invalidArgument(`name must be a non-empty string of at most ${MAX_NAME_LENGTH} characters.`);
  return v.trim();
}

export async function adminListKeys(ctx: RequestContext): Promise<Response> {
  return json({ keys: await listKeys(ctx.env) });
}

export async function adminCreateKey(ctx: RequestContext): Promise<Response> {
  const body = await jsonObjectBody(ctx);
  const key = await createKey(ctx.env, ctx.config.masterKey, { name: name(body, true) as string, createBucket: flag(body, "createBucket") ?? false });
  return json(key, 201);
}

export async function adminUpdateKey(ctx: RequestContext, id: string): Promise<Response> {
  const body = await jsonObjectBody(ctx);
  const change: KeyChange = { name: name(body, false), enabled: flag(body, "enabled"), createBucket: flag(body, "createBucket") };
  const key = await updateKey(ctx.env, id, change);
  if (!key) throw noSuchKey(id);
  return json(key);
}

export async function adminDeleteKey(ctx: RequestContext, id: string): Promise<Response> {
  if (!(await deleteKey(ctx.env, id))) throw noSuchKey(id);
  return new Response(null, { status: 204 });
}

export async function adminGrantBucket(ctx: RequestContext, id: string, bucket: string): Promise<Response> {
  const body = await jsonObjectBody(ctx);
  const grant = { bucket, read: flag(body, "read") ?? false, write: flag(body, "write") ?? false, owner: flag(body, "owner") ?? false };
  if (!(await grantBucket(ctx.env, id, grant))) throw noSuchKey(id);
  return json(grant);
}

export async function adminBucketKeys(ctx: RequestContext, bucket: string): Promise<Response> {
  return json({ bucket, keys: await bucketGrants(ctx.env, bucket) });
}
