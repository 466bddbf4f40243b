// What every S3 request goes through on its way to its operation and back, one concern per
// middleware (hono's shape: each gets the exchange and `next`): the request id, metrics and the log
// line; unread bodies settled; errors as S3 error answers; the host names it answers to; routing;
// the console's CORS; what pages of other sites may do; a bucket's CORS; authentication;
// authorization. api/handle.ts puts them in order and dispatches to the operation.
import { anonymousRequest, type Authenticated, authenticate as verifySigV4, hasCredentials } from "../auth/sigv4";
import { authenticateV2, isSigV2 } from "../auth/sigv2";
import { clientOf, throttled } from "../auth/throttle";
import { type Env, type GatewayConfig, gatewayConfig, hostAllowed } from "../config";
import { errorResponse, newRequestId } from "../errors";
import { metricsStore } from "../meta/stubs";
import { metrics } from "../observability/metrics";
import { BODY_PIECE_BYTES, PieceReader } from "../shared/piece-reader";
import { S3Error } from "../s3-error";
import { type Principal, signerOf } from "../services/access-keys";
import { bucketPolicy } from "../services/bucket-policy";
import { overlaySource } from "../services/node-overlay";
import { isTemporaryKeyId, sessionSignerOf } from "../services/sessions";
import { bearerAuthorized } from "./admin/metrics";
import { allowConsole, consoleOriginOf, consolePreflight } from "./http/console-origin";
import { applyCors, corsRules, matchRule } from "./http/cors";
import { toS3Error } from "./http/error-map";
import { authorize as authorizeFor } from "./http/permissions";
import type { Endpoint } from "./http/router";
import { OPERATIONS, type Operation, type OperationName, READ_METHODS, routeRequest, sessionsMay } from "./operations";
import { RangeNotSatisfiable } from "./s3/get";
import { readStsRequest, STS_SIGNING_SERVICES, sessionTokenOf, stsErrorResponse } from "./s3/sts";

/** One request on its way through: what the middleware before has found out. */
export interface Exchange {
  readonly request: Request;
  readonly url: URL;
  readonly env: Env;
  readonly exec: { waitUntil(promise: Promise<unknown>): void };
  readonly requestId: string;
  readonly started: number;
  /** The operation's name for the log and the metrics: "unknown" until routed. */
  op: string;
  config: GatewayConfig | null;
  endpoint: Endpoint<OperationName> | null;
  /** The console's origin when the request comes from it (its CORS answers every request). */
  fromConsole: string | null;
  principal: Principal;
  auth: Authenticated | null;
  /** When the credentials that signed it expire (temporary credentials), or null. */
  credentialsExpire: number | null;
  /** What every answer gets on its way out, errors included (CORS headers). */
  readonly finishers: ((response: Response) => void | Promise<void>)[];
}

export type Middleware = (x: Exchange, next: () => Promise<Response>) => Promise<Response>;

/** The website endpoint's requests (api/website-endpoint.ts), one label in the metrics. */
export const WEBSITE_OP = "Website";

export function exchange(request: Request, env: Env, exec: Exchange["exec"], url = new URL(request.url)): Exchange {
  return {
    request,
    url,
    env,
    exec,
    requestId: newRequestId(),
    started: Date.now(),
    op: "unknown",
    config: null,
    endpoint: null,
    fromConsole: null,
    principal: { kind: "anonymous" },
    auth: null,
    credentialsExpire: null,
    finishers: [],
  };
}

/** What the table declares of an operation, as middleware reads it (never its name). */
export type OperationAttributes = Omit<Operation, "routes" | "run">;
/** What no route takes needs any valid key (a 501 tells no one anonymous what exists), nothing more. */
const NOT_IMPLEMENTED: OperationAttributes = { permission: { need: "anyKey", action: null }, authentication: "signature" };

/** The attributes of the operation `endpoint` names. */
export function operationOf(endpoint: Endpoint<OperationName>): OperationAttributes {
  return endpoint.op === "NotImplemented" ? NOT_IMPLEMENTED : OPERATIONS[endpoint.op];
}

/** The request id, the counters and the duration histogram, and one JSON log line, for every answer; the finishers' headers. */
export const observe: Middleware = async (x, next) => {
  let response = await next();
  try {
    await stamp(x, response);
  } catch {
    // Headers that cannot change (a Response.redirect's): the same answer with headers of its own.
    response = new Response(response.body, response);
    await stamp(x, response);
  }
  const received = Number(x.request.headers.get("content-length") ?? 0) || 0;
  const sent = x.request.method === "HEAD" ? 0 : Number(response.headers.get("content-length") ?? 0) || 0;
  const ms = Date.now() - x.started;
  // Labelled by the table's names only: what no route takes is "NotImplemented" here (its name,
  // made of the request's method and query, goes to the log line), so no request adds a series.
  const label = x.endpoint !== null ? x.endpoint.op : x.op === WEBSITE_OP ? WEBSITE_OP : "unknown";
  metrics.add("shardgate_requests_total", 1, { op: label, status: response.status });
  metrics.observeDuration(label, ms);
  metrics.add("shardgate_client_bytes_received_total", received);
  metrics.add("shardgate_client_bytes_sent_total", sent);
  const flush = metrics.flushSoon(() => metricsStore(x.env));
  if (flush) x.exec.waitUntil(flush.catch((e: unknown) => console.error(JSON.stringify({ metricsFlush: String(e) }))));
  const { requestId, op, request, url } = x;
  console.log(JSON.stringify({ requestId, op, method: request.method, path: url.pathname, status: response.status, ms, received, sent }));
  return response;
};

async function stamp(x: Exchange, response: Response): Promise<void> {
  for (const finish of x.finishers) await finish(response);
  response.headers.set("x-amz-request-id", x.requestId);
}

/** No request body is left pending once the answer is ready (settleUnreadBody). */
export const settleBody: Middleware = async (x, next) => {
  const response = await next();
  await settleUnreadBody(x.request);
  return response;
};

/** Anything thrown becomes its S3 error answer (STS's own format for STS). */
export const answerErrors: Middleware = async (x, next) => {
  try {
    return await next();
  } catch (e) {
    const error = toS3Error(e);
    if (error.status === 500) console.error(JSON.stringify({ requestId: x.requestId, error: String(e), stack: e instanceof Error ? e.stack : undefined }));
    if (x.endpoint !== null && operationOf(x.endpoint).sts) return stsErrorResponse(error, x.requestId);
    const response = errorResponse(error, x.url.pathname, x.requestId, x.request.method === "HEAD");
    if (e instanceof RangeNotSatisfiable) response.headers.set("Content-Range", `bytes */${e.size}`);
    return response;
  }
};

/**
 * A gateway with a list of the host names it answers to (SHARDGATE_ALLOWED_HOSTS, set by `npm start`
 * on loopback: config.ts hostAllowed) answers any other Host with AccessDenied, before any work: a
 * page whose site's name was re-pointed at the gateway (DNS rebinding) reaches nothing.
 */
export const checkHost: Middleware = (x, next) => {
  if (!hostAllowed(x.env, x.url.hostname)) throw new S3Error("AccessDenied", "This gateway does not answer to this host name (SHARDGATE_ALLOWED_HOSTS).");
  return next();
};

/**
 * The configuration (with the node overlay: services/node-overlay.ts, a value kept per isolate, no
 * metadata call while it is fresh), and the operation the request names (api/operations.ts).
 */
export const route: Middleware = async (x, next) => {
  const config = await gatewayConfig(x.env, overlaySource(x.env), (p) => x.exec.waitUntil(p));
  const endpoint = routeRequest(x.request.method, x.url, config.virtualHostSuffix, x.request.headers);
  x.config = config;
  x.endpoint = endpoint;
  x.op = endpoint.op === "NotImplemented" ? endpoint.name : endpoint.op;
  return next();
};

/** The console, on its own origin, is answered CORS on every request, before any bucket rule (api/http/console-origin.ts). */
export const consoleCors: Middleware = (x, next) => {
  const origin = consoleOriginOf(x.request, x.env);
  if (origin === null) return next();
  if (x.request.method === "OPTIONS") return Promise.resolve(consolePreflight(x.request, origin));
  x.fromConsole = origin;
  x.finishers.push((response) => allowConsole(response, origin));
  return next();
};

/**
 * What a page of another site may make a browser send. A browser says where a request comes from:
 * `Origin` (on every request but a plain GET or HEAD) and `Sec-Fetch-Site`. Pages can send a POST
 * without asking first (a form; fetch with a text/plain body), signed by whoever knows a key, so
 * a request from another origin than the gateway's own or the console's (or marked cross-site or
 * same-site, as localhost:8788 is to localhost:8787, by a page that is not the console), as the
 * operation's `pages` says (api/operations.ts):
 *   - never reaches the admin API, the metrics or STS (AccessDenied);
 *   - writes only where the bucket's CORS rules allow its origin and method (AccessForbidden, as
 *     the preflight a legitimate app needs anyway is refused): a form's PostObject is the
 *     exception, its signed policy says what it may upload;
 *   - reads as before: its answer stays unreadable to a page the bucket's rules do not allow.
 */
export const crossSite: Middleware = async (x, next) => {
  const origin = x.request.headers.get("origin");
  const site = x.request.headers.get("sec-fetch-site");
  const elsewhere = (origin !== null && origin !== x.url.origin) || site === "cross-site" || site === "same-site";
  const endpoint = x.endpoint;
  if (!elsewhere || x.fromConsole !== null || endpoint === null) return next();
  const { pages } = operationOf(endpoint);
  if (pages === "console")
    throw new S3Error("AccessDenied", "The gateway's own API answers only its console and clients outside a browser, not a page of another site.");
  if (READ_METHODS.has(x.request.method) || pages === "any") return next(); // its answer stays unreadable without CORS
  const bucket = endpoint.op === "NotImplemented" ? null : endpoint.bucket;
  const rules = origin === null || bucket === null ? [] : await corsRules({ env: x.env }, bucket);
  if (origin === null || matchRule(rules, origin, x.request.method) === null)
    throw new S3Error(
      "AccessForbidden",
      "CORSResponse: a write from a page of another origin needs a CORS rule of the bucket that allows its origin and method.",
    );
  return next();
};

/**
 * Browsers on other origins: an actual request gets the Access-Control-* headers of the bucket's
 * rule that allows it, errors included (preflights are an operation of their own).
 */
export const bucketCors: Middleware = (x, next) => {
  const endpoint = x.endpoint;
  if (x.fromConsole !== null || !x.request.headers.has("origin") || endpoint === null || endpoint.op === "NotImplemented") return next();
  // A preflight (which authenticates nothing) is answered by the rules themselves.
  if (endpoint.bucket === null || operationOf(endpoint).authentication === "none") return next();
  const rules = corsRules({ env: x.env }, endpoint.bucket).catch(() => []);
  x.finishers.push(async (response) => applyCors(await rules, x.request, response));
  return next();
};

/**
 * Who sent the request. The root key is known without a lookup; any other key comes from the key
 * store; temporary credentials carry their key in the session token (services/sessions.ts). A
 * request without credentials is anonymous: it gets only what a bucket policy allows everyone.
 */
export const authenticate: Middleware = async (x, next) => {
  const { request, url, env } = x;
  const config = x.config as GatewayConfig;
  const endpoint = x.endpoint as Endpoint<OperationName>;
  const { authentication } = operationOf(endpoint);
  // A preflight needs nothing; the metrics scraper's bearer token lets it in (authorize checks it again).
  if (authentication === "none" || (authentication === "bearer" && bearerAuthorized(request, config.metricsToken))) {
    x.auth = anonymousRequest(request);
    return next();
  }
  // Nothing else answers without valid credentials, not even NotImplemented.
  const root = config.credentials;
  if (!root) throw new S3Error("AccessDenied", "The gateway has no credentials configured (SHARDGATE_ACCESS_KEY_ID, SHARDGATE_SECRET_ACCESS_KEY).");
  // A browser form's POST carries its credentials in the form, a shard file's URL its ticket: the operation checks them.
  if (authentication === "self" || !hasCredentials(request, url)) {
    x.auth = anonymousRequest(request);
    return next();
  }
  const token = sessionTokenOf(request, url);
  const master = config.masterKey;
  const secretOf = async (id: string): Promise<string | null> => {
    const key =
      token !== null ? await sessionSignerOf(env, master, root, id, token) : isTemporaryKeyId(id, root) ? null : await signerOf(env, master, root, id);
    if (key) {
      x.principal = key.principal;
      x.credentialsExpire = key.expires ?? null;
    }
    return key?.secret ?? null;
  };
  const v2 = config.sigV2 && isSigV2(request, url);
  if (v2 && operationOf(endpoint).v4Only)
    throw new S3Error("InvalidRequest", `Signature Version 2 does not sign what ${endpoint.op} reads: sign it with AWS4-HMAC-SHA256.`);
  // STS signs the form body's hash without sending it: the body is read (bounded) first.
  const sts = operationOf(endpoint).sts ? await readStsRequest(request) : null;
  const now = Date.now();
  // A client that keeps failing is answered SlowDown before any lookup (auth/throttle.ts).
  x.auth = await throttled(
    () => clientOf(request, config.clientIpHeader),
    () =>
      sts
        ? verifySigV4(sts.request, secretOf, { region: config.region, now, services: STS_SIGNING_SERVICES, payloadHash: sts.payloadHash })
        : v2
          ? authenticateV2(request, secretOf, { now, virtualHostSuffix: config.virtualHostSuffix })
          : verifySigV4(request, secretOf, { region: config.region, now }),
  );
  return next();
};

/**
 * Whether the principal may do the operation: its grants, then the bucket's policy
 * (api/http/permissions.ts); and temporary credentials only what outlasts nothing (api/operations.ts
 * sessionsMay), said after the rights, so that the console asks for a key's secret only where the
 * key itself may do it.
 */
export const authorize: Middleware = async (x, next) => {
  const endpoint = x.endpoint as Endpoint<OperationName>;
  const operation = operationOf(endpoint);
  const { permission, authentication } = operation;
  const bearer = authentication === "bearer" && bearerAuthorized(x.request, (x.config as GatewayConfig).metricsToken);
  if (authentication === "signature" || (authentication === "bearer" && !bearer)) {
    const at = endpoint.op === "NotImplemented" ? { bucket: null, key: null } : endpoint;
    await authorizeFor(x.principal, permission, at, x.request.headers, (bucket) => bucketPolicy(x.env, bucket), x.url.searchParams);
  }
  if (x.credentialsExpire !== null && !sessionsMay(operation, x.request.method, x.request.headers)) {
    const what = "scope" in endpoint && endpoint.scope === "admin" ? `${x.request.method} ${x.url.pathname}` : `call ${endpoint.op}`;
    throw new S3Error("AccessDenied", `Temporary credentials cannot ${what}: what it changes would outlast them. Sign this request with the key itself.`);
  }
  return next();
};

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
