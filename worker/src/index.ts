// shardgate's Worker: the S3-compatible HTTP front end.
//
// Keep this module's exports to what workerd accepts from a main module (the default handler,
// Durable Object classes and Worker entrypoints): workerd refuses to start when the main module
// exports anything else (e.g. a string constant). Helpers live in their own modules.
import { Hono } from "hono";
import pkg from "../package.json";
import { getReady } from "./api/admin/ready";
import { handleS3 } from "./api/handle";
import { handleWebsite, websiteOf } from "./api/website";
import { type Env, hostAllowed } from "./config";
import { mountConsole } from "./console";
import { coreVersion } from "./core";
import { armScheduler } from "./jobs/scheduler";

const app = new Hono<{ Bindings: Env }>();

// A host the gateway does not answer to (config.ts hostAllowed: DNS rebinding on loopback) gets the
// S3 pipeline's refusal (api/middleware.ts checkHost), whatever it asks for: health, sites, console.
app.use("*", async (c, next) => {
  if (!hostAllowed(c.env, new URL(c.req.url).hostname)) return handleS3(c.req.raw, c.env, c.executionCtx);
  await next();
});

app.get("/_shardgate/health", (c) => c.json({ status: "ok", version: pkg.version, core: coreVersion() }));
// 503 until metadata answers and k + 1 nodes are reachable (api/admin/ready.ts); no credentials, bounded work.
app.get("/_shardgate/ready", (c) => getReady(c.env, c.executionCtx));

// Website endpoints (api/website.ts): a site's host, or the path form. Before the console's routes,
// which send a browser's GET / to the console; a console origin is never a site.
app.use("*", async (c, next) => {
  const site = websiteOf(c.req.raw, c.env);
  if (site !== null) return handleWebsite(c.req.raw, c.env, c.executionCtx, site);
  await next();
});

mountConsole(app); // the web console on its own origin: /_console/ and a browser's GET / redirected there

app.all("*", (c) => handleS3(c.req.raw, c.env, c.executionCtx));

// fetch: the S3 API and the console. The first request of an isolate also arms the alarm that runs
// the background jobs (heal queues, scrub): worker/src/jobs/scheduler.ts.
export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => {
    armScheduler(env, (p) => ctx.waitUntil(p));
    return app.fetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
export { JobScheduler } from "./jobs/scheduler";
// The bucket index with its notification delivery (jobs/bucket-jobs.ts), under the binding's class name.
export { BucketIndexWithDelivery as BucketIndex } from "./jobs/bucket-jobs";
export { BucketRegistry } from "./meta/registry";
export { KeyStore } from "./meta/key-store";
export { MetricsStore } from "./meta/metrics-store";
export { MetaGate } from "./meta/remote";
