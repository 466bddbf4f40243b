// shardgate's Worker: the S3-compatible HTTP front end.
//
// Keep this module's exports to what workerd accepts from a main module (the default handler and
// Durable Object classes): workerd refuses to start when the main module exports anything else
// (e.g. a string constant). Helpers live in their own modules.
import { Hono } from "hono";
import pkg from "../package.json";
import { handleS3 } from "./api/handle";
import { scheduledHeal } from "./api/heal";
import { type Env } from "./config";
import { mountConsole } from "./console";
import { coreVersion } from "./core";
import { scheduledScrub } from "./scrub/walk";

const app = new Hono<{ Bindings: Env }>();

app.get("/_shardgate/health", (c) => c.json({ status: "ok", version: pkg.version, core: coreVersion() }));

mountConsole(app); // the web console at /_console/, and GET / from a browser redirected there

app.all("*", (c) => handleS3(c.req.raw, c.env, c.executionCtx));

// fetch: the S3 API and the console; scheduled: the Cron Trigger (wrangler.toml [triggers]) works
// through the heal queues, then runs a background scrub step.
export default {
  fetch: (request: Request, env: Env, ctx: ExecutionContext) => app.fetch(request, env, ctx),
  scheduled: (_controller: ScheduledController, env: Env, ctx: ExecutionContext) => ctx.waitUntil(scheduledHeal(env).then(() => scheduledScrub(env))),
} satisfies ExportedHandler<Env>;
export { BucketIndex } from "./meta/bucket-index";
export { BucketRegistry } from "./meta/registry";
export { MetricsStore } from "./observability/metrics-store";
