// The web console (web/, built by Vite into web/dist/_console/) served from the Worker's static
// assets (wrangler.toml [assets], binding ASSETS, run_worker_first = true, so S3 requests never
// reach asset matching), and the redirect of a browser opening "/" without credentials.
import type { Hono } from "hono";
import type { Env } from "./config";

export const CONSOLE_PATH = "/_console/";

/** The assets binding: declared in wrangler.toml, absent in a deployment without [assets]. */
function assetsOf(env: unknown): Fetcher | undefined {
  const assets = (env as { ASSETS?: Fetcher } | undefined)?.ASSETS;
  return assets && typeof assets.fetch === "function" ? assets : undefined;
}

/** A browser's plain page load: no SigV4 (header or presigned query), and it wants HTML. */
export function isBrowserPageLoad(req: Request): boolean {
  if (req.method !== "GET" || req.headers.has("authorization")) return false;
  const q = new URL(req.url).searchParams;
  if (q.has("X-Amz-Signature") || q.has("X-Amz-Credential")) return false;
  return (req.headers.get("accept") ?? "").includes("text/html");
}

async function serveConsole(req: Request, env: unknown): Promise<Response> {
  const assets = assetsOf(env);
  if (!assets)
    return new Response("The console is not part of this deployment (no ASSETS binding).\n", {
      status: 404,
      headers: { "content-type": "text/plain; charset=utf-8" },
    });
  const url = new URL(req.url);
  if (url.pathname === "/_console") return new Response(null, { status: 301, headers: { location: CONSOLE_PATH } });
  const res = await assets.fetch(req);
  if (res.status !== 404 || (req.method !== "GET" && req.method !== "HEAD")) return res;
  // A path of the single-page app (not a file): serve its index.html. Missing files under
  // assets/ stay 404, so a stale bundle fails loudly instead of receiving HTML.
  if (url.pathname.startsWith(`${CONSOLE_PATH}assets/`)) return res;
  return assets.fetch(new Request(new URL(`${CONSOLE_PATH}index.html`, url), { method: req.method, headers: req.headers }));
}

/** Adds the console's routes; call before the S3 catch-all. */
export function mountConsole(app: Hono<{ Bindings: Env }>): void {
  app.on(["GET", "HEAD"], ["/_console", "/_console/*"], (c) => serveConsole(c.req.raw, c.env));
  app.get("/", async (c, next) => {
    if (isBrowserPageLoad(c.req.raw)) return c.redirect(CONSOLE_PATH, 302);
    await next();
  });
}
