// The web console lives on an origin of its own (docs/console.md), never on the gateway's: a stored
// object served by the gateway can then never run as a page of the console's origin.
//   - On the gateway, `/_console/*` (its old home) and a browser opening "/" are sent to the console's
//     origin (SHARDGATE_CONSOLE_ORIGIN), or answered 404 when none is configured.
//   - A request to a console origin itself (Cloudflare: a second route or custom domain on this
//     Worker) is served the console's files from the ASSETS binding (wrangler.toml [assets],
//     run_worker_first, so S3 requests never reach asset matching) and `/config.json`, which names
//     the gateway (SHARDGATE_GATEWAY_URL) and the region the console signs with (SHARDGATE_REGION);
//     nothing of the S3 API answers there.
// `npm start` and `npm run dev` serve the console on a listener of its own instead
// (scripts/workerd/console-assets.js), with the same headers.
import { errorText } from "./errors";
import { consoleOrigins, consoleSettings, type Env } from "./config";

/** Where the console used to be served on the gateway: now a redirect to its origin. */
export const CONSOLE_PATH = "/_console/";

/**
 * The console's own pages: scripts only from its origin (and WebAssembly), never framed, no plugins.
 * Its credentials live in its memory; this keeps anything injected from running (kept in step with
 * scripts/workerd/console-assets.js).
 */
export const CONSOLE_PAGE_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src * data: blob:; media-src * blob:; frame-src *; connect-src *; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

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

/** The console origin to send a browser to: the one on the request's host name, else the first. */
function consoleHome(req: Request, env: Env): string | null {
  const origins = consoleOrigins(env);
  const host = new URL(req.url).hostname;
  return origins.find((o) => new URL(o).hostname === host) ?? origins[0] ?? null;
}

function notHere(): Response {
  return new Response("The web console is served on its own origin, and none is configured here (SHARDGATE_CONSOLE_ORIGIN).\n", {
    status: 404,
    headers: { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" },
  });
}

/** The console on its own host: its files, the SPA's index.html for other paths, and /config.json. */
async function serveConsole(req: Request, env: Env, assets: Fetcher): Promise<Response> {
  if (req.method !== "GET" && req.method !== "HEAD") return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
  const url = new URL(req.url);
  if (url.pathname === "/_console" || url.pathname.startsWith(CONSOLE_PATH)) return Response.redirect(new URL("/", url).toString(), 301);
  if (url.pathname === "/config.json") {
    let settings: ReturnType<typeof consoleSettings>;
    try {
      settings = consoleSettings(env);
    } catch (e) {
      return new Response(`${errorText(e)}\n`, { status: 503, headers: { "content-type": "text/plain; charset=utf-8" } });
    }
    return new Response(JSON.stringify(settings), {
      headers: { "content-type": "application/json", "cache-control": "no-store", "x-content-type-options": "nosniff" },
    });
  }
  let res = await assets.fetch(req);
  // A path of the single-page app (not a file): its index.html. Missing files under /assets/ stay
  // 404, so a stale bundle fails loudly instead of receiving HTML.
  if (res.status === 404 && !url.pathname.startsWith("/assets/")) {
    res = await assets.fetch(new Request(new URL("/index.html", url), { method: req.method, headers: req.headers }));
  }
  const out = new Response(res.body, res);
  for (const [name, value] of Object.entries(CONSOLE_PAGE_HEADERS)) out.headers.set(name, value);
  return out;
}

/**
 * The console's answer to a request, or null when it is not the console's: anything on a console
 * origin, `/_console` and below (GET, HEAD), and a browser opening "/" when a console is configured.
 */
export function consoleAnswer(req: Request, env: Env, url: URL): Promise<Response> | Response | null {
  const assets = assetsOf(env);
  if (assets && consoleOrigins(env).includes(url.origin)) return serveConsole(req, env, assets);
  if (req.method !== "GET" && req.method !== "HEAD") return null;
  if (url.pathname === "/_console" || url.pathname.startsWith(CONSOLE_PATH)) {
    const home = consoleHome(req, env);
    return home === null ? notHere() : Response.redirect(`${home}/`, 302);
  }
  if (url.pathname === "/") {
    const home = consoleHome(req, env);
    if (home !== null && isBrowserPageLoad(req)) return Response.redirect(`${home}/`, 302);
  }
  return null;
}
