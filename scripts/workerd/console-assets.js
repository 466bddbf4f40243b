// The console's static files on plain workerd, where the static-assets binding of Cloudflare and
// wrangler does not exist: bound to the gateway as ASSETS (scripts/lib/workerd-config.mjs), it
// serves web/dist through a read-only disk service (FILES) with the Content-Type that browsers
// need (module scripts are refused as application/octet-stream), and a directory's index.html.
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

export default {
  async fetch(request, env) {
    if (request.method !== "GET" && request.method !== "HEAD") return new Response(null, { status: 405, headers: { allow: "GET, HEAD" } });
    let path = new URL(request.url).pathname;
    if (path.endsWith("/")) path += "index.html";
    const file = await env.FILES.fetch(new URL(path, "http://files"), { method: request.method });
    const type = TYPES[path.slice(path.lastIndexOf(".") + 1).toLowerCase()];
    // Only regular files: a directory answers with a JSON listing, which is no asset.
    if (file.status !== 200 || ((file.headers.get("content-type") ?? "").startsWith("application/json") && type !== TYPES.json && type !== TYPES.map)) {
      await file.body?.cancel();
      return new Response("Not Found", { status: 404 });
    }
    const headers = new Headers({ "content-type": type ?? "application/octet-stream" });
    const length = file.headers.get("content-length");
    if (length !== null) headers.set("content-length", length);
    // Vite names built assets by content hash: cache them for long; index.html must stay fresh.
    headers.set("cache-control", path.includes("/assets/") ? "public, max-age=31536000, immutable" : "no-cache");
    return new Response(file.body, { status: 200, headers });
  },
};
