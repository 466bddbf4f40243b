// The admin API (/_shardgate/admin/*, SigV4-signed like every S3 request) as a hono sub-app: each
// endpoint is one route with its query parameters declared and validated (bad input answers 400
// InvalidArgument naming the parameter). api/handle.ts authenticates the request and builds its
// RequestContext first, then hands it to this app as its env.
import { Hono } from "hono";
import { validator } from "hono/validator";
import { S3Error, invalidArgument } from "../s3-error";
import type { RequestContext } from "./http/context";
import { adminDrain, adminNodes, adminObject } from "./admin/nodes";
import { adminAddNode, adminRemoveNode, adminSetNodeState } from "./admin/node-changes";
import { adminHeal } from "./admin/heal";
import { adminBucketKeys, adminCreateKey, adminDeleteKey, adminGrantBucket, adminListKeys, adminUpdateKey } from "./admin/keys";
import { adminLifecycle } from "./admin/lifecycle";
import { adminNotifications, adminRetryNotifications } from "./admin/notifications";
import { adminDeleteQuota, adminGetQuota, adminSetQuota } from "./admin/quota";
import { adminScrub, getHealStatus } from "./admin/scrub";
import { adminSweep } from "./admin/sweep";

const ADMIN_PREFIX = "/_shardgate/admin";

type AdminEnv = { Bindings: { ctx: RequestContext } };

/** Reads one query parameter (null when absent) into its value, or throws the 400 to answer. */
type Param<T> = (raw: string | null) => T;

/** Validates the query against `spec`: each handler gets `c.req.valid("query")`, typed. */
function query<S extends Record<string, Param<unknown>>>(spec: S) {
  return validator("query", (_value, c) => {
    const out = {} as { [K in keyof S]: ReturnType<S[K]> };
    for (const [name, parse] of Object.entries(spec)) out[name as keyof S] = parse(c.req.query(name) ?? null) as ReturnType<S[keyof S]>;
    return out;
  });
}

// --- parameter kinds ---------------------------------------------------------------------------

/** The raw value, null when absent. */
const raw: Param<string | null> = (v) => v;
/** The value, `fallback` when absent. */
const text =
  (fallback = ""): Param<string> =>
  (v) =>
    v ?? fallback;
/** The value, null when absent or empty. */
const optional: Param<string | null> = (v) => (v === null || v === "" ? null : v);
/** A required, non-empty value. */
const required =
  (message: string): Param<string> =>
  (v) => {
    if (!v) throw invalidArgument(message);
    return v;
  };
/** A batch size: `fallback` when absent or not a number, clamped into 1..max. */
const count =
  (fallback: number, max: number): Param<number> =>
  (v) =>
    Math.min(Math.max(Number(v ?? fallback) || fallback, 1), max);
/** A whole number in [min, ∞), capped at max; `fallback` when absent. */
const whole =
  (name: string, fallback: number | null, min: number, max = Number.MAX_SAFE_INTEGER): Param<number | null> =>
  (v) => {
    if (v === null) return fallback;
    const n = Number(v);
    if (v === "" || !Number.isSafeInteger(n) || n < min) throw invalidArgument(`${name} must be a whole number, ${min} or more.`);
    return Math.min(n, max);
  };
/** One of `values`, null when absent. */
const oneOf =
  <V extends string>(message: string, values: readonly V[]): Param<V | null> =>
  (v) => {
    if (v === null) return null;
    if (!(values as readonly string[]).includes(v)) throw invalidArgument(message);
    return v as V;
  };

/** An ISO 8601 time; the current time when absent. */
const instant =
  (name: string): Param<number> =>
  (v) => {
    if (v === null) return Date.now();
    const ms = Date.parse(v);
    if (Number.isNaN(ms)) throw invalidArgument(`${name} must be an ISO 8601 time.`);
    return ms;
  };

/** Admin walks take at most this many objects per call. */
const MAX_BATCH = 1000;

// --- the routes ---------------------------------------------------------------------------------

export const adminApp = new Hono<AdminEnv>().basePath(ADMIN_PREFIX);

adminApp.get("/nodes", (c) => adminNodes(c.env.ctx));
adminApp.post("/nodes", (c) => adminAddNode(c.env.ctx));
adminApp.patch("/nodes/:node", (c) => adminSetNodeState(c.env.ctx, c.req.param("node")));
adminApp.delete("/nodes/:node", (c) => adminRemoveNode(c.env.ctx, c.req.param("node")));
adminApp.get("/object", query({ bucket: required("Name the object: ?bucket=NAME&key=KEY."), key: required("Name the object: ?bucket=NAME&key=KEY.") }), (c) =>
  adminObject(c.env.ctx, c.req.valid("query")),
);
adminApp.post("/nodes/:node/drain", query({ bucket: text(), "start-after": optional, "max-objects": count(50, MAX_BATCH) }), (c) =>
  adminDrain(c.env.ctx, c.req.param("node"), c.req.valid("query")),
);
adminApp.get("/heal", (c) => getHealStatus(c.env.ctx));
adminApp.post("/heal", query({ bucket: raw, prefix: text(), "start-after": optional, "max-objects": count(100, MAX_BATCH) }), (c) =>
  adminHeal(c.env.ctx, c.req.valid("query")),
);
adminApp.post(
  "/scrub",
  query({
    mode: oneOf("mode must be deep or shallow.", ["deep", "shallow"] as const),
    "max-objects": whole("max-objects", null, 1, 100_000),
    "max-ms": whole("max-ms", null, 1, 15 * 60_000),
    "move-mib": whole("move-mib", null, 0, 1024 * 1024),
    heal: oneOf("heal must be true or false.", ["true", "false"] as const),
  }),
  (c) => adminScrub(c.env.ctx, c.req.valid("query")),
);
adminApp.post("/lifecycle", query({ bucket: optional, now: instant("now") }), (c) => adminLifecycle(c.env.ctx, c.req.valid("query")));
adminApp.get("/keys", (c) => adminListKeys(c.env.ctx));
adminApp.post("/keys", (c) => adminCreateKey(c.env.ctx));
adminApp.patch("/keys/:id", (c) => adminUpdateKey(c.env.ctx, c.req.param("id")));
adminApp.delete("/keys/:id", (c) => adminDeleteKey(c.env.ctx, c.req.param("id")));
adminApp.put("/keys/:id/buckets/:bucket", (c) => adminGrantBucket(c.env.ctx, c.req.param("id"), c.req.param("bucket")));
adminApp.get("/buckets/:bucket/keys", (c) => adminBucketKeys(c.env.ctx, c.req.param("bucket")));
adminApp.get("/buckets/:bucket/quota", (c) => adminGetQuota(c.env.ctx, c.req.param("bucket")));
adminApp.put("/buckets/:bucket/quota", (c) => adminSetQuota(c.env.ctx, c.req.param("bucket")));
adminApp.delete("/buckets/:bucket/quota", (c) => adminDeleteQuota(c.env.ctx, c.req.param("bucket")));
adminApp.get("/buckets/:bucket/notifications", query({ limit: count(100, 1000) }), (c) =>
  adminNotifications(c.env.ctx, c.req.param("bucket"), c.req.valid("query")),
);
adminApp.post("/buckets/:bucket/notifications/retry", (c) => adminRetryNotifications(c.env.ctx, c.req.param("bucket")));
adminApp.post("/sweep", query({ "grace-seconds": whole("grace-seconds", null, 0) }), (c) => adminSweep(c.env.ctx, c.req.valid("query")));

// Errors go back to api/handle.ts, which answers them like any S3 error.
adminApp.onError((e) => {
  throw e;
});
adminApp.notFound((c) => {
  throw new S3Error("NotImplemented", `${c.req.method} ${new URL(c.req.url).pathname} is not an admin endpoint.`);
});
