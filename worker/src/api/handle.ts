// One S3 request, start to finish: route to an Endpoint, authenticate, authorize, dispatch exhaustively,
// render any failure as an S3 XML error, stamp x-amz-request-id, and log one JSON line.
import { anonymousRequest, authenticate, hasCredentials } from "../auth/sigv4";
import { authenticateV2, isSigV2 } from "../auth/sigv2";
import { clientOf, throttled } from "../auth/throttle";
import { BODY_PIECE_BYTES, PieceReader } from "../shared/piece-reader";
import { loadConfig, type Env } from "../config";
import { metricsStore } from "../meta/stubs";
import { core } from "../core";
import { errorResponse, newRequestId } from "../errors";
import { toS3Error } from "./common/error-map";
import { S3Error } from "../s3-error";
import { createBucket, deleteBucket, getBucketLocation, headBucket } from "./s3/bucket";
import { getBucketVersioning, putBucketVersioning } from "./s3/versioning";
import type { RequestContext } from "./common/context";
import { getObjectAttributes } from "./s3/attributes";
import { copyObject } from "./s3/copy";
import { applyCors, corsRules, deleteBucketCors, getBucketCors, preflight, putBucketCors, type CorsRule } from "./s3/cors";
import { deleteObject, deleteObjects } from "./s3/delete";
import { adminApp } from "./admin-app";
import {
  abortMultipartUpload,
  completeMultipartUpload,
  createMultipartUpload,
  listMultipartUploads,
  listParts,
  uploadPart,
  uploadPartCopy,
} from "./s3/multipart";
import { deleteObjectTagging, getObjectTagging, putObjectTagging } from "./s3/object-tagging";
import { deleteBucketTagging, getBucketTagging, putBucketTagging } from "./s3/bucket-tagging";
import { getBucketAcl, getObjectAcl, putBucketAcl, putObjectAcl } from "./s3/acl";
import { deleteBucketPolicy, getBucketPolicy, getBucketPolicyStatus, putBucketPolicy } from "./s3/bucket-policy";
import { deleteBucketEncryption, getBucketEncryption, putBucketEncryption } from "./s3/bucket-encryption";
import { deleteBucketLifecycle, getBucketLifecycle, putBucketLifecycle } from "./s3/bucket-lifecycle";
import {
  getObjectLegalHold,
  getObjectLockConfiguration,
  getObjectRetention,
  putObjectLegalHold,
  putObjectLockConfiguration,
  putObjectRetention,
} from "./s3/object-lock";
import { getObject, RangeNotSatisfiable } from "./s3/get";
import { listBuckets, listObjects, listObjectVersions } from "./s3/list";
import { putObject } from "./s3/put";
import { abortDirectUpload, completeDirectUpload, createDirectUpload, getReadPlan, transferShard } from "./s3/direct";
import { postObject } from "./s3/post-object";
import { metrics } from "../observability/metrics";
import { bearerAuthorized, getMetrics } from "./admin/metrics";
import { routeRequest, type Endpoint } from "./common/router";
import { authorize } from "./common/permissions";
import { signerOf, type Principal } from "../services/access-keys";
import { isTemporaryKeyId, sessionSignerOf } from "../services/sessions";
import { allowConsole, consoleOriginOf, consolePreflight } from "./common/console-origin";
import { getSessionToken, readStsRequest, STS_SIGNING_SERVICES, sessionTokenOf, stsErrorResponse } from "./s3/sts";
import { bucketPolicy } from "../services/bucket-policy";
import { requestedVersion } from "./common/object-request";

export async function handleS3(request: Request, env: Env, exec: { waitUntil(promise: Promise<unknown>): void }): Promise<Response> {
  const requestId = newRequestId();
  const started = Date.now();
  const url = new URL(request.url);
  let op = "unknown";
  let cors: Promise<CorsRule[]> | null = null;
  let fromConsole: string | null = null;
  try {
    const config = loadConfig(env);
    // The console, on its own origin, is answered CORS on every request, before any bucket rule (api/common/console-origin.ts).
    fromConsole = consoleOriginOf(request, env);
    if (fromConsole !== null && request.method === "OPTIONS") return finish(consolePreflight(request, fromConsole));
    const endpoint = routeRequest(request.method, url, config.virtualHostSuffix, request.headers);
    op = endpoint.op === "NotImplemented" ? endpoint.name : endpoint.op;
    if (endpoint.op === "GetMetrics" && bearerAuthorized(request, env)) return finish(await getMetrics(env));
    // Browsers on other origins: preflights answer from the bucket's rules without credentials;
    // actual requests get the Access-Control-* headers of the rule that allows them, even on errors.
    const bucket = "bucket" in endpoint ? endpoint.bucket : null;
    if (bucket !== null && request.headers.has("origin") && fromConsole === null) cors = corsRules({ env }, bucket).catch(() => []);
    if (endpoint.op === "PreflightCors") {
      const answer = preflight(cors ? await cors : [], request);
      return finish(answer instanceof Response ? answer : failure(answer, request, url, requestId));
    }
    // Nothing but the health check answers without valid credentials, not even NotImplemented.
    if (!config.credentials)
      throw new S3Error("AccessDenied", "The gateway has no credentials configured (SHARDGATE_ACCESS_KEY_ID, SHARDGATE_SECRET_ACCESS_KEY).");
    const root = config.credentials;
    let principal: Principal = { kind: "anonymous" };
    let credentialsExpire: number | null = null;
    // The root key is known without a lookup; any other key comes from the key store. A request
    // without credentials gets only what a bucket policy allows everyone.
    // Temporary credentials: the session token holds the key, which acts as its parent (services/sessions.ts).
    const token = sessionTokenOf(request, url);
    const secretOf = async (id: string): Promise<string | null> => {
      const key = token !== null ? await sessionSignerOf(env, root, id, token) : isTemporaryKeyId(id, root) ? null : await signerOf(env, root, id);
      if (key) {
        principal = key.principal;
        credentialsExpire = key.expires ?? null;
      }
      return key?.secret ?? null;
    };
    // A browser form's POST carries its credentials in the form, a shard file's URL its grant: the operation checks them.
    const selfAuthorized = endpoint.op === "PostObject" || endpoint.op === "TransferShard";
    // STS signs the form body's hash without sending it: the body is read (bounded) first.
    const sts = endpoint.op === "GetSessionToken" && hasCredentials(request, url) ? await readStsRequest(request) : null;
    const auth =
      !hasCredentials(request, url) || selfAuthorized
        ? anonymousRequest(request)
        : // A client that keeps failing is answered SlowDown before any lookup (auth/throttle.ts).
          await throttled(clientOf(request, env.SHARDGATE_CLIENT_IP_HEADER), () =>
            sts
              ? authenticate(sts.request, secretOf, { region: config.region, now: Date.now(), services: STS_SIGNING_SERVICES, payloadHash: sts.payloadHash })
              : config.sigV2 && isSigV2(request, url)
                ? authenticateV2(request, secretOf, { now: Date.now(), virtualHostSuffix: config.virtualHostSuffix })
                : authenticate(request, secretOf, { region: config.region, now: Date.now() }),
          );
    if (!selfAuthorized) await authorize(principal, endpoint, request.headers, (bucket) => bucketPolicy(env, bucket), url.searchParams);
    const ctx: RequestContext = {
      request,
      url,
      env,
      config,
      core,
      auth,
      principal,
      credentialsExpire,
      requestId,
      waitUntil: (p) => exec.waitUntil(p),
    };
    if ("key" in endpoint) requestedVersion(url); // a malformed versionId is refused whatever the operation
    return await finishWithCors(await dispatch(ctx, endpoint));
  } catch (e) {
    return finishWithCors(failure(e, request, url, requestId, op === "GetSessionToken"));
  }

  async function finishWithCors(response: Response): Promise<Response> {
    if (fromConsole !== null) allowConsole(response, fromConsole);
    else if (cors) applyCors(await cors, request, response);
    return finish(response);
  }

  async function finish(response: Response): Promise<Response> {
    await settleUnreadBody(request);
    response.headers.set("x-amz-request-id", requestId);
    const received = Number(request.headers.get("content-length") ?? 0) || 0;
    const sent = request.method === "HEAD" ? 0 : Number(response.headers.get("content-length") ?? 0) || 0;
    metrics.add("shardgate_requests_total", 1, { op, status: response.status });
    metrics.add("shardgate_client_bytes_received_total", received);
    metrics.add("shardgate_client_bytes_sent_total", sent);
    const flush = metrics.flushSoon(() => metricsStore(env));
    if (flush) exec.waitUntil(flush.catch((e: unknown) => console.error(JSON.stringify({ metricsFlush: String(e) }))));
    log({ requestId, op, method: request.method, path: url.pathname, status: response.status, ms: Date.now() - started, received, sent });
    return response;
  }
}

function dispatch(ctx: RequestContext, e: Endpoint): Promise<Response> {
  switch (e.op) {
    case "ListBuckets":
      return listBuckets(ctx);
    case "GetSessionToken":
      return getSessionToken(ctx);
    case "CreateBucket":
      return createBucket(ctx, e.bucket);
    case "HeadBucket":
      return headBucket(ctx, e.bucket);
    case "DeleteBucket":
      return deleteBucket(ctx, e.bucket);
    case "GetBucketLocation":
      return getBucketLocation(ctx, e.bucket);
    case "GetBucketVersioning":
      return getBucketVersioning(ctx, e.bucket);
    case "PutBucketVersioning":
      return putBucketVersioning(ctx, e.bucket);
    case "ListObjectsV2":
    case "ListObjects":
      return listObjects(ctx, e.bucket);
    case "ListObjectVersions":
      return listObjectVersions(ctx, e.bucket);
    case "GetObject":
      return getObject(ctx, e.bucket, e.key, false);
    case "HeadObject":
      return getObject(ctx, e.bucket, e.key, true);
    case "PutObject":
      return putObject(ctx, e.bucket, e.key);
    case "PostObject":
      return postObject(ctx, e.bucket);
    case "DeleteObject":
      return deleteObject(ctx, e.bucket, e.key);
    case "DeleteObjects":
      return deleteObjects(ctx, e.bucket);
    case "CopyObject":
      return copyObject(ctx, e.bucket, e.key);
    case "GetObjectAttributes":
      return getObjectAttributes(ctx, e.bucket, e.key);
    case "CreateMultipartUpload":
      return createMultipartUpload(ctx, e.bucket, e.key);
    case "UploadPart":
      return uploadPart(ctx, e.bucket, e.key, e.uploadId, e.partNumber);
    case "UploadPartCopy":
      return uploadPartCopy(ctx, e.bucket, e.key, e.uploadId, e.partNumber);
    case "CompleteMultipartUpload":
      return completeMultipartUpload(ctx, e.bucket, e.key, e.uploadId);
    case "AbortMultipartUpload":
      return abortMultipartUpload(ctx, e.bucket, e.key, e.uploadId);
    case "ListParts":
      return listParts(ctx, e.bucket, e.key, e.uploadId);
    case "ListMultipartUploads":
      return listMultipartUploads(ctx, e.bucket);
    case "GetObjectTagging":
      return getObjectTagging(ctx, e.bucket, e.key);
    case "PutObjectTagging":
      return putObjectTagging(ctx, e.bucket, e.key);
    case "DeleteObjectTagging":
      return deleteObjectTagging(ctx, e.bucket, e.key);
    case "GetBucketTagging":
      return getBucketTagging(ctx, e.bucket);
    case "PutBucketTagging":
      return putBucketTagging(ctx, e.bucket);
    case "DeleteBucketTagging":
      return deleteBucketTagging(ctx, e.bucket);
    case "GetBucketLifecycleConfiguration":
      return getBucketLifecycle(ctx, e.bucket);
    case "PutBucketLifecycleConfiguration":
      return putBucketLifecycle(ctx, e.bucket);
    case "DeleteBucketLifecycle":
      return deleteBucketLifecycle(ctx, e.bucket);
    case "GetObjectLockConfiguration":
      return getObjectLockConfiguration(ctx, e.bucket);
    case "PutObjectLockConfiguration":
      return putObjectLockConfiguration(ctx, e.bucket);
    case "GetObjectRetention":
      return getObjectRetention(ctx, e.bucket, e.key);
    case "PutObjectRetention":
      return putObjectRetention(ctx, e.bucket, e.key);
    case "GetObjectLegalHold":
      return getObjectLegalHold(ctx, e.bucket, e.key);
    case "PutObjectLegalHold":
      return putObjectLegalHold(ctx, e.bucket, e.key);
    case "GetBucketAcl":
      return getBucketAcl(ctx, e.bucket);
    case "PutBucketAcl":
      return putBucketAcl(ctx, e.bucket);
    case "GetObjectAcl":
      return getObjectAcl(ctx, e.bucket, e.key);
    case "PutObjectAcl":
      return putObjectAcl(ctx, e.bucket, e.key);
    case "GetBucketCors":
      return getBucketCors(ctx, e.bucket);
    case "PutBucketCors":
      return putBucketCors(ctx, e.bucket);
    case "DeleteBucketCors":
      return deleteBucketCors(ctx, e.bucket);
    case "GetBucketEncryption":
      return getBucketEncryption(ctx, e.bucket);
    case "PutBucketEncryption":
      return putBucketEncryption(ctx, e.bucket);
    case "DeleteBucketEncryption":
      return deleteBucketEncryption(ctx, e.bucket);
    case "GetBucketPolicy":
      return getBucketPolicy(ctx, e.bucket);
    case "PutBucketPolicy":
      return putBucketPolicy(ctx, e.bucket);
    case "DeleteBucketPolicy":
      return deleteBucketPolicy(ctx, e.bucket);
    case "GetBucketPolicyStatus":
      return getBucketPolicyStatus(ctx, e.bucket);
    case "PreflightCors":
      throw new Error("preflights are answered before authentication");
    case "CreateDirectUpload":
      return createDirectUpload(ctx, e.bucket, e.key);
    case "CompleteDirectUpload":
      return completeDirectUpload(ctx, e.bucket, e.key);
    case "AbortDirectUpload":
      return abortDirectUpload(ctx, e.bucket, e.key);
    case "GetReadPlan":
      return getReadPlan(ctx, e.bucket, e.key);
    case "TransferShard":
      return transferShard(ctx, e.bucket, e.token);
    case "GetMetrics":
      return getMetrics(ctx.env);
    case "Admin":
      return Promise.resolve(adminApp.fetch(ctx.request, { ctx }));
    case "NotImplemented":
      throw new S3Error("NotImplemented", `${e.name} is not implemented.`);
    default:
      return unreachable(e);
  }
}

function unreachable(e: never): never {
  throw new Error(`unrouted endpoint ${JSON.stringify(e)}`);
}

function failure(e: unknown, request: Request, url: URL, requestId: string, sts = false): Response {
  const error = toS3Error(e);
  if (error.status === 500) console.error(JSON.stringify({ requestId, error: String(e), stack: e instanceof Error ? e.stack : undefined }));
  if (sts) return stsErrorResponse(error, requestId);
  const response = errorResponse(error, url.pathname, requestId, request.method === "HEAD");
  if (e instanceof RangeNotSatisfiable) response.headers.set("Content-Range", `bytes */${e.size}`);
  return response;
}

/** How much of an unread body an early answer reads away before it gives up and cancels. */
const DRAIN_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Settles a request body that the answer did not read (an early error: 403, 404, 501 …): no body
 * is ever left pending. The body is read away (up to DRAIN_LIMIT_BYTES, then cancelled): the
 * answer then goes out on a connection in a clean state, which wrangler dev's proxy needs (it
 * fails with a 500 of its own when the Worker cancels a body it is still sending), and a client
 * that sends before it reads gets its answer instead of a reset (measured on workerd: cancelling
 * instead lost early answers to Node's http client, which sends before it reads). A client that
 * sent `Expect: 100-continue` gets its body cancelled rather than read: both runtimes send their
 * own `100 Continue` whatever the Worker does, and the answer, then the connection's next request
 * (curl), came through either way (tests/node/bad-clients.test.ts).
 */
async function settleUnreadBody(request: Request): Promise<void> {
  const body = request.body;
  if (!body || request.bodyUsed || body.locked || request.headers.get("content-length") === "0") return;
  if ((request.headers.get("expect") ?? "").toLowerCase() === "100-continue") return void body.cancel().catch(() => {});
  const reader = new PieceReader(body, { pieceBytes: BODY_PIECE_BYTES, reuse: true });
  try {
    for (let read = 0; read < DRAIN_LIMIT_BYTES; ) {
      const piece = await reader.read();
      if (!piece) return;
      read += piece.length;
    }
  } catch {
    return; // the body broke: nothing left to settle
  }
  await reader.cancel();
}

/** Structured logs: one JSON line per request. */
function log(fields: Record<string, string | number>): void {
  console.log(JSON.stringify(fields));
}
