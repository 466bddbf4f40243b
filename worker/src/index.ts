// shardgate's Worker: the S3-compatible HTTP front end.
//
// Keep this module's exports to what workerd accepts from a main module (the default handler,
// and later Durable Object / entrypoint classes): workerd refuses to start when the main module
// exports anything else (e.g. a string constant). Helpers live in their own modules.
import { Hono } from "hono";
import pkg from "../package.json";
import { coreVersion } from "./core";
import { s3Error } from "./errors";

/** The Worker's bindings (none yet). */
export type Env = Record<string, never>;

const app = new Hono<{ Bindings: Env }>();

app.get("/_shardgate/health", (c) =>
  c.json({ status: "ok", version: pkg.version, core: coreVersion() }),
);

app.all("*", (c) =>
  s3Error(c, 501, "NotImplemented", `${c.req.method} ${c.req.path} is not implemented yet.`),
);

export default app;
