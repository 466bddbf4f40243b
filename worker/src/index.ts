// shardgate's Worker: the S3-compatible HTTP front end.
//
// Keep this module's exports to what workerd accepts from a main module (the default handler and
// Durable Object classes): workerd refuses to start when the main module exports anything else
// (e.g. a string constant). Helpers live in their own modules.
import { Hono } from "hono";
import pkg from "../package.json";
import { handleS3 } from "./api/handle";
import { type Env } from "./config";
import { coreVersion } from "./core";

const app = new Hono<{ Bindings: Env }>();

app.get("/_shardgate/health", (c) => c.json({ status: "ok", version: pkg.version, core: coreVersion() }));

app.all("*", (c) => handleS3(c.req.raw, c.env, c.executionCtx));

export default app;
export { BucketIndex } from "./meta/bucket-index";
export { BucketRegistry } from "./meta/registry";
export { MetricsStore } from "./observability/metrics-store";
