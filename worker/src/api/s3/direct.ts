// The direct path's HTTP side (docs/direct-path.md): sessions, commits and read plans are signed
// S3-style requests on the object (authorized like PutObject / GetObject), answered in JSON; shard
// files move under SHARD_PATH, authorized by the ticket in their URL and, on every use, by what the
// key that obtained it may do now (at most KEY_CACHE_MS / SETTINGS_CACHE_MS old).
import type { DirectAbort, DirectCommit, DirectUploadRequest } from "../../shared/direct-protocol";
import { S3Error } from "../../s3-error";
import { signerOf } from "../../services/access-keys";
import { bucketPolicy } from "../../services/bucket-policy";
import { type TicketedShard, type TicketUse, ticketedShard, putShard, readShard, storedShardBytes, useOf } from "../../services/direct-shards";
import { readPlan } from "../../services/direct-read";
import type { DirectContext } from "../../services/direct-context";
import { abortUpload, commitUpload, openUploadSession } from "../../services/direct-upload";
import { writeCondition } from "../format/conditions";
import type { RequestContext, ObjectAt, ShardAt } from "../http/context";
import { json } from "../http/json";
import { readBodyUpTo } from "../http/request-body";
import { storedHeaders, userMetadata } from "../format/object-headers";
import { checkKey } from "../format/object-request";
import { passes, READ_OBJECT, WRITE_OBJECT } from "../http/permissions";

/** Largest JSON body taken (a commit of a 5 GiB upload's parts is well under it). */
const MAX_JSON_BYTES = 1024 * 1024;

/** POST /bucket/key?shardgate-upload {size}: a new session (or "classic": use PutObject). */
export async function createDirectUpload(ctx: RequestContext, { bucket, key }: ObjectAt): Promise<Response> {
  checkKey(key);
  const { size } = await readJson<DirectUploadRequest>(ctx);
  return json(await openUploadSession(directContext(ctx), bucket, key, size));
}

/** POST /bucket/key?shardgate-commit {upload, parts, partMd5s, contentType?, metadata?}: PutObject's answer, in JSON and headers. */
export async function completeDirectUpload(ctx: RequestContext, { bucket, key }: ObjectAt): Promise<Response> {
  checkKey(key);
  const commit = await readJson<DirectCommit>(ctx);
  const committed = await commitUpload(directContext(ctx), bucket, key, commit, writeCondition(ctx.request.headers), fieldsOf(commit));
  const answer = json(committed);
  answer.headers.set("ETag", `"${committed.etag}"`);
  if (committed.versionId !== undefined) answer.headers.set("x-amz-version-id", committed.versionId);
  return answer;
}

/** POST /bucket/key?shardgate-abort {upload, parts}: the session's shard files removed now. */
export async function abortDirectUpload(ctx: RequestContext, { bucket, key }: ObjectAt): Promise<Response> {
  await abortUpload(directContext(ctx), bucket, key, await readJson<DirectAbort>(ctx));
  return new Response(null, { status: 204 });
}

/** GET /bucket/key?shardgate-plan[&versionId=]: the read plan. */
export async function getReadPlan(ctx: RequestContext, { bucket, key, versionId }: ObjectAt): Promise<Response> {
  return json(await readPlan(directContext(ctx), bucket, key, versionId));
}

/** PUT, GET (one Range or none) and HEAD of SHARD_PATH + bucket + ticket. */
export async function transferShard(ctx: RequestContext, { bucket, ticket: token }: ShardAt): Promise<Response> {
  const method = ctx.request.method;
  const file = await ticketedShard(directContext(ctx), bucket, token, method === "PUT");
  await stillPermitted(ctx, useOf(file));
  if (method === "PUT") {
    const length = ctx.auth.contentLength;
    if (length === null) throw new S3Error("MissingContentLength", "You must provide the Content-Length HTTP header.");
    await putShard(directContext(ctx), file, ctx.auth.body ?? new Blob([]).stream(), length);
    return new Response(null, { status: 200 });
  }
  if (method === "HEAD") {
    const stored = await storedShardBytes(file);
    return new Response(null, { status: stored === null ? 404 : 200, headers: { "content-length": String(stored ?? 0) } });
  }
  if (method === "GET") return await serveShard(ctx, file);
  throw new S3Error("MethodNotAllowed", "Shard files take PUT, GET and HEAD.");
}

async function serveShard(ctx: RequestContext, file: TicketedShard): Promise<Response> {
  const header = ctx.request.headers.get("range");
  const range = header === null ? { start: 0, end: file.fileBytes } : ctx.core.resolveRange(header, file.fileBytes);
  if (range === "unsatisfiable") throw new S3Error("InvalidRange", "The requested range is not satisfiable.");
  const { start, end } = range ?? { start: 0, end: file.fileBytes };
  const body = await readShard(file, start, end);
  if (!body) throw new S3Error("NoSuchKey", "The shard file is not there.");
  const partial = header !== null && range !== null;
  // Shard files are framed bytes, never a page: a fixed type that no browser sniffs into one.
  const headers: Record<string, string> = {
    "content-length": String(end - start),
    "cache-control": "no-store",
    "content-type": "application/octet-stream",
    "x-content-type-options": "nosniff",
  };
  if (partial) headers["content-range"] = `bytes ${start}-${end - 1}/${file.fileBytes}`;
  return new Response(body, { status: partial ? 206 : 200, headers });
}

/**
 * Throws AccessDenied unless whoever obtained a shard ticket may still do what it was for: the key
 * is still enabled (the root key always is) and its right on the bucket, or the bucket policy,
 * still lets it read (a read plan) or write (a session) the object; an anonymous ticket's Allow
 * still stands. Keys and policies are the per-isolate cached values every request uses (5 s).
 */
async function stillPermitted(ctx: RequestContext, use: TicketUse): Promise<void> {
  const root = ctx.config.credentials;
  const signer =
    use.holder === null ? { principal: { kind: "anonymous" as const } } : root ? await signerOf(ctx.env, ctx.config.masterKey, root, use.holder) : null;
  // The check of the operation that handed the ticket out: CreateDirectUpload or GetReadPlan.
  const check = use.write ? WRITE_OBJECT : READ_OBJECT;
  if (!signer || !(await passes(signer.principal, check, use.bucket, use.key, use.versioned, (b) => bucketPolicy(ctx.env, b)))) {
    throw new S3Error("AccessDenied", "Access Denied");
  }
}

function directContext(ctx: RequestContext): DirectContext {
  const root = ctx.config.credentials;
  if (!root) throw new S3Error("AccessDenied", "The gateway has no credentials configured.");
  const holder = ctx.principal.kind === "anonymous" ? null : ctx.principal.keyId;
  const until = ctx.credentialsExpire ?? Number.POSITIVE_INFINITY;
  return { env: ctx.env, config: ctx.config, core: ctx.core, waitUntil: ctx.waitUntil, rootSecret: root.secretAccessKey, holder, until };
}

async function readJson<T>(ctx: RequestContext): Promise<T> {
  const tooLarge = () => new S3Error("EntityTooLarge", `The JSON body may be at most ${MAX_JSON_BYTES} bytes.`);
  const bytes = ctx.auth.body ? await readBodyUpTo(ctx.auth.body, MAX_JSON_BYTES, tooLarge) : new Uint8Array(0);
  try {
    const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
    if (typeof value === "object" && value !== null) return value as T;
  } catch {
    // answered below
  }
  throw new S3Error("InvalidRequest", "The body must be a JSON object.");
}

/** A commit's content type and x-amz-meta-* values as PutObject would store them from its headers. */
function fieldsOf(commit: DirectCommit): { headers: [string, string][]; userMetadata: [string, string][] } {
  const headers = new Headers();
  try {
    if (commit.contentType !== undefined) headers.set("content-type", String(commit.contentType));
    for (const [name, value] of Object.entries(commit.metadata ?? {})) headers.set(`x-amz-meta-${name}`, String(value));
  } catch {
    throw new S3Error("InvalidArgument", "contentType and metadata must be valid header names and values.");
  }
  return { headers: storedHeaders(headers), userMetadata: userMetadata(headers) };
}
