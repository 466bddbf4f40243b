// The web console on plain workerd (`npm start`, and `npm run dev` beside wrangler dev): a Worker on a
// listener of its own, so the console has an origin of its own that no stored object is ever served
// on (docs/console.md). It serves web/dist through a read-only disk service (FILES) with the
// Content-Type browsers need (module scripts are refused as application/octet-stream), the
// single-page app's index.html for other paths, and /config.json, which names the gateway: the
// configured URL (CONSOLE_CONFIG.gateway), else the host this page was loaded from on the gateway's
// port (CONSOLE_CONFIG.gatewayPort); and the region the console signs with (CONSOLE_CONFIG.region). The headers of its pages match worker/src/console.ts.
const TYPES = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  json: "application/json",
  map: "application/json",
  wasm: "application/wasm",
  svg: "image/svg+xml",
  png: "image/png",
  ico: "image/x-icon",
  txt: "text/plain; charset=utf-8",
  woff2: "font/woff2",
};

const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self' 'unsafe-inline'; img-src * data: blob:; media-src * blob:; frame-src *; connect-src *; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

async function file(env, path, method) {
  const res = await env.FILES.fetch(new URL(path, "http://files"), { method });
  const type = TYPES[path.slice(path.lastIndexOf(".") + 1).toLowerCase()];
  // Only regular files: a directory answers with a JSON listing, which is no asset.
  if (res.status !== 200 || ((res.headers.get("content-type") ?? "").startsWith("application/json") && type !== TYPES.json && type !== TYPES.map)) {
    await res.body?.cancel();
    return null;
  }
  const headers = new Headers({ ...PAGE_HEADERS, "content-type": type ?? "application/octet-stream" });
  const length = res.headers.get("content-length");
  if (length !== null) headers.set("content-length", length);
  // Vite names built assets by content hash: cache them for long; index.html must stay fresh.
  headers.set("cache-control", path.startsWith("/assets/") ? "public, max-age=31536000, immutable" : "no-cache");
  return new Response(res.body, { status: 200, headers });
}

export default {
  async fetch(request, env) {
    if (request.method !== "GET" && request.method !== "HEAD") return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
    const url = new URL(request.url);
    let path = url.pathname;
    // Bookmarks of the console's old home on the gateway.
    if (path === "/_console" || path.startsWith("/_console/")) return Response.redirect(new URL("/", url).toString(), 301);
    if (path === "/config.json") {
      const config = JSON.parse(env.CONSOLE_CONFIG ?? "{}");
      const gateway = config.gateway ?? `${url.protocol}//${url.hostname}:${config.gatewayPort}`;
      return new Response(JSON.stringify({ gateway, region: config.region ?? "us-east-1" }), {
        headers: { "content-type": "application/json", "cache-control": "no-store", "x-content-type-options": "nosniff" },
      });
    }
    if (path.endsWith("/")) path += "index.html";
    const found = await file(env, path, request.method);
    if (found) return found;
    // A path of the single-page app (not a file): its index.html. Missing files under /assets/
    // stay 404, so a stale bundle fails loudly instead of receiving HTML.
    if (!path.startsWith("/assets/")) {
      const index = await file(env, "/index.html", request.method);
      if (index) return index;
    }
    return new Response("Not Found", { status: 404, headers: { "x-content-type-options": "nosniff" } });
  },
};
