// shardgate's Worker: the S3-compatible HTTP front end.
//
// Keep this module's exports to what workerd accepts from a main module (the default handler,
// Durable Object classes and Worker entrypoints): workerd refuses to start when the main module
// exports anything else (e.g. a string constant). Helpers live in their own modules.
import pkg from "../package.json";
import { getReady } from "./api/admin/ready";
import { handleS3 } from "./api/handle";
import { handleWebsite, websiteOf } from "./api/website-endpoint";
import { type Env, hostAllowed } from "./config";
import { consoleAnswer } from "./console";
import { coreVersion } from "./core";
import { armScheduler } from "./jobs/scheduler";

/**
 * What answers a request, in order: a host the gateway does not answer to gets the S3 pipeline's
 * refusal (api/middleware.ts checkHost: DNS rebinding on loopback), whatever it asks for; then
 * health and readiness; a website endpoint (api/website-endpoint.ts: a site's host, or the path form), before
 * the console, which sends a browser's GET / to its own origin (a console origin is never a site);
 * then the S3 API. A plain function, not a router: every S3 request passes here, and a router's
 * matching and middleware were 9% of a HEAD's profile (docs/benchmarks.md).
 */
function answer(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> | Response {
  const url = new URL(request.url);
  if (!hostAllowed(env, url.hostname)) return handleS3(request, env, ctx, url);
  if (request.method === "GET" || request.method === "HEAD") {
    if (url.pathname === "/_shardgate/health") return asAsked(request, Response.json({ status: "ok", version: pkg.version, core: coreVersion() }));
    // 503 until metadata answers and k + 1 nodes are reachable (api/admin/ready.ts); no credentials, bounded work.
    if (url.pathname === "/_shardgate/ready") return getReady(env, ctx).then((res) => asAsked(request, res));
  }
  const site = websiteOf(url, env);
  if (site !== null) return handleWebsite(request, env, ctx, site, url);
  return consoleAnswer(request, env, url) ?? handleS3(request, env, ctx, url);
}

/** The answer to a GET, or to a HEAD its status and headers without the body. */
function asAsked(request: Request, res: Response): Response {
  return request.method === "HEAD" ? new Response(null, res) : res;
}

// fetch: the S3 API and the console. The first request of an isolate also arms the alarm that runs
// the background jobs (heal queues, scrub): worker/src/jobs/scheduler.ts.
export default {
  fetch: async (request: Request, env: Env, ctx: ExecutionContext) => {
    armScheduler(env, (p) => ctx.waitUntil(p));
    try {
      return await answer(request, env, ctx);
    } catch (e) {
      // Outside the S3 pipeline (which answers its own errors): a configuration that cannot be
      // read, such as a malformed console origin. Said loudly, answered 500.
      console.error(JSON.stringify({ error: String(e), stack: e instanceof Error ? e.stack : undefined }));
      return new Response("Internal Server Error", { status: 500 });
    }
  },
} satisfies ExportedHandler<Env>;
export { JobScheduler } from "./jobs/scheduler";
// The bucket index with its notification delivery (jobs/bucket-jobs.ts), under the binding's class name.
export { BucketIndexWithDelivery as BucketIndex } from "./jobs/bucket-jobs";
export { BucketRegistry } from "./meta/registry";
export { KeyStore } from "./meta/key-store";
export { MetricsStore } from "./meta/metrics-store";
export { MetaGate } from "./meta/remote";
