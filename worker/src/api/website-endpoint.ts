// The website endpoint (docs/self-hosting.md#website-endpoints): a bucket's objects served as a static site, to anyone,
// where the bucket's policy lets everyone read them (s3:GetObject), by its website configuration
// (index and error documents, redirects, routing rules: api/format/website-config.ts). GET and HEAD only;
// every error an HTML page. A site has an origin of its own, so that its pages run as pages:
//   - the host form `<bucket>.website.<virtual host suffix>` (demo.website.localhost:8787), or a
//     host SHARDGATE_WEBSITE_HOSTS maps to a bucket (a custom domain on Cloudflare);
//   - the path form `/_shardgate/website/<bucket>/…` on the gateway's own origin, for a quick look:
//     its pages run sandboxed (an opaque origin: no storage, no cookies, nothing of the gateway's
//     origin reachable), as stored HTML always does there.
// Objects are read by the GET handler itself (api/s3/get.ts): ranges, conditional GETs, encryption.
import { anonymousRequest } from "../auth/sigv4";
import { consoleOrigins, type Env, gatewayConfig, virtualHostSuffixOf, websiteHosts } from "../config";
import { textResponse, xmlEscape } from "../errors";
import { bucketRegistry } from "../meta/stubs";
import { S3Error } from "../s3-error";
import { bucketPolicy } from "../services/bucket-policy";
import { existingObject } from "../services/objects";
import { overlaySource } from "../services/node-overlay";
import { checkBucketName } from "./format/bucket-name";
import type { RequestContext } from "./http/context";
import { decodePath } from "./http/router";
import { toS3Error } from "./http/error-map";
import { WEBSITE_REDIRECT } from "./format/object-headers";
import { permitted } from "./http/permissions";
import { keyPath, matchRule, ruleTarget, type WebsiteConfig } from "./format/website-config";
import { core } from "../core";
import { exchange, type Exchange, observe, settleBody, WEBSITE_OP } from "./middleware";
import { websiteConfig } from "./s3/bucket-website";
import { getObject, RangeNotSatisfiable } from "./s3/get";

/** The path form's prefix (no bucket name starts with "_", so it shadows none). */
export const WEBSITE_PATH = "/_shardgate/website/";

/** A website request: the bucket, the key its path names (null: the path form without "/" after the bucket), the path before keys. */
export interface Site {
  bucket: string;
  key: string | null;
  base: string;
  /** The path form: pages run sandboxed on the gateway's origin. */
  sandboxed: boolean;
}

/** The path form's pages: scripts and forms run, in an opaque origin of their own. */
const PATH_FORM_CSP = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads";

/** The site a request is for, or null: an S3 request (a console origin is never a site). Cheap for S3 requests: no decoding. */
export function websiteOf(url: URL, env: Env): Site | null {
  const site = candidate(url, env);
  return site === null || consoleOrigins(env).includes(url.origin) ? null : site;
}

/** A site's host first (there every path is a key of that site, the path form's too), then the path form. */
function candidate(url: URL, env: Env): Site | null {
  const host = url.hostname.toLowerCase();
  const suffix = `.website.${virtualHostSuffixOf(env).toLowerCase()}`;
  const bucket = websiteHosts(env).get(host) ?? (host.endsWith(suffix) && host.length > suffix.length ? host.slice(0, -suffix.length) : undefined);
  if (bucket !== undefined) return { bucket, key: decodePath(url.pathname).slice(1), base: "", sandboxed: false };
  if (!url.pathname.startsWith(WEBSITE_PATH)) return null;
  const rest = url.pathname.slice(WEBSITE_PATH.length);
  const slash = rest.indexOf("/");
  const named = decodePath(slash < 0 ? rest : rest.slice(0, slash));
  const key = slash < 0 ? null : decodePath(rest.slice(slash + 1));
  return { bucket: named, key, base: `${WEBSITE_PATH}${encodeURIComponent(named)}`, sandboxed: true };
}

/** Serves a website request, with the request id, the counters and the log line of every request. */
export function handleWebsite(request: Request, env: Env, exec: { waitUntil(promise: Promise<unknown>): void }, site: Site, url: URL): Promise<Response> {
  const x = exchange(request, env, exec, url);
  x.op = WEBSITE_OP;
  return observe(x, () =>
    settleBody(x, async () => {
      let response: Response;
      try {
        response = await answer(x, site);
      } catch (e) {
        response = errorPage(x, toS3Error(e), e);
      }
      return finish(response, site);
    }),
  );
}

/** The headers every website answer gets: the path form's sandbox; the host form's pages run as pages. */
function finish(response: Response, site: Site): Response {
  const out = new Response(response.body, response);
  out.headers.delete("Content-Security-Policy");
  if (site.sandboxed) out.headers.set("Content-Security-Policy", PATH_FORM_CSP);
  out.headers.set("X-Content-Type-Options", "nosniff");
  return out;
}

function redirect(status: number, location: string): Response {
  // A key that starts with "/" makes a path that starts with "//": a browser would read it as
  // another host. "/./" before it names the same path on this host.
  const here = location.startsWith("//") ? `/.${location}` : location;
  return new Response(null, { status, headers: { Location: here } });
}

const noSuchBucket = () => new S3Error("NoSuchBucket", "The specified bucket does not exist");

/** The request's answer, by the bucket's website configuration. */
async function answer(x: Exchange, site: Site): Promise<Response> {
  if (x.request.method !== "GET" && x.request.method !== "HEAD")
    throw new S3Error("MethodNotAllowed", "The specified method is not allowed against this resource.", { Allow: "GET, HEAD" });
  try {
    checkBucketName(site.bucket);
  } catch {
    throw noSuchBucket();
  }
  const ctx = websiteContext(x, await gatewayConfig(x.env, overlaySource(x.env), (p) => x.exec.waitUntil(p)));
  const website = await websiteConfig(ctx, site.bucket);
  if (website === null) {
    if (!(await bucketRegistry(x.env).get(site.bucket))) throw noSuchBucket();
    throw new S3Error("NoSuchWebsiteConfiguration", "The specified bucket does not have a website configuration");
  }
  if (site.key === null) return redirect(302, `${site.base}/`);
  const url = x.url;
  if (website.redirectAll) {
    const proto = website.redirectAll.protocol ?? url.protocol.slice(0, -1);
    return redirect(301, `${proto}://${website.redirectAll.hostName}${keyPath(site.key)}`);
  }
  const early = matchRule(website.routingRules, site.key, null);
  if (early) return targetOf(early, site, url);
  return serveKey(ctx, site, website, site.key);
}

function targetOf(rule: Parameters<typeof ruleTarget>[0], site: Site, url: URL): Response {
  const { location, status } = ruleTarget(rule, site.key ?? "", url, site.base);
  return redirect(status, location);
}

/** Request headers a website GET passes on to the GET handler: ranges and conditions, nothing else (no SSE-C, no checksum mode, no query). */
const PASSED_HEADERS = ["range", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since"];

/** The context the GET handler reads with: anonymous, the request stripped to `PASSED_HEADERS`. */
function websiteContext(x: Exchange, config: RequestContext["config"]): RequestContext {
  const headers = new Headers([...x.request.headers].filter(([name]) => PASSED_HEADERS.includes(name)));
  return {
    ...plainRequest(`${x.url.origin}${x.url.pathname}`, x.request.method, headers),
    env: x.env,
    config,
    core,
    principal: { kind: "anonymous" },
    credentialsExpire: null,
    requestId: x.requestId,
    waitUntil: (p) => x.exec.waitUntil(p),
  };
}

/** An anonymous request for `url` with `headers` only, as the GET handler reads it. */
function plainRequest(url: string, method: string, headers?: Headers): Pick<RequestContext, "request" | "url" | "auth"> {
  const request = new Request(url, { method, headers });
  return { request, url: new URL(request.url), auth: anonymousRequest(request) };
}

/** Whether anyone may read `key` by the bucket's policy (its Allow of s3:GetObject to "*", no Deny). */
function readable(ctx: RequestContext, bucket: string, key: string): Promise<boolean> {
  return permitted({ kind: "anonymous" }, "read", "s3:GetObject", bucket, key, (b) => bucketPolicy(ctx.env, b));
}

/** The object for `key` (its index document for a folder), or the error's own answer. */
async function serveKey(ctx: RequestContext, site: Site, website: WebsiteConfig, key: string): Promise<Response> {
  const index = website.indexSuffix ?? "";
  const target = key === "" || key.endsWith("/") ? key + index : key;
  try {
    if (!(await readable(ctx, site.bucket, target))) throw new S3Error("AccessDenied", "Access Denied");
    const response = await getObject(ctx, { bucket: site.bucket, key: target, versionId: undefined }, null, ctx.request.method === "HEAD");
    const to = response.headers.get(WEBSITE_REDIRECT);
    if (to === null) return response;
    await response.body?.cancel();
    return redirect(301, to.startsWith("/") ? `${site.base}${to}` : to);
  } catch (e) {
    const error = toS3Error(e);
    if (error.status !== 403 && error.status !== 404) throw e;
    if (error.code === "NoSuchKey" && target === key && index !== "" && (await isFolder(ctx, site.bucket, `${key}/${index}`)))
      return redirect(302, `${site.base}${keyPath(key)}/`);
    const rule = matchRule(website.routingRules, key, error.status);
    if (rule) return targetOf(rule, site, ctx.url);
    const page = website.errorKey === undefined ? null : await errorDocument(ctx, site.bucket, website.errorKey, error.status);
    if (page) return page;
    throw e;
  }
}

/** Whether `indexKey` (`key/index.html`) exists and may be read: then `key` is a folder. */
async function isFolder(ctx: RequestContext, bucket: string, indexKey: string): Promise<boolean> {
  if (!(await readable(ctx, bucket, indexKey))) return false;
  return existingObject(ctx, bucket, indexKey).then(
    () => true,
    () => false,
  );
}

/** The error document's content with the error's status, or null when it cannot be read either. */
async function errorDocument(ctx: RequestContext, bucket: string, key: string, status: number): Promise<Response | null> {
  if (!(await readable(ctx, bucket, key))) return null;
  const plain = { ...ctx, ...plainRequest(ctx.url.toString(), ctx.request.method) };
  try {
    const response = await getObject(plain, { bucket, key, versionId: undefined }, null, ctx.request.method === "HEAD");
    return new Response(response.body, { status, headers: response.headers });
  } catch {
    return null;
  }
}

const STATUS_TEXT: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  412: "Precondition Failed",
  416: "Requested Range Not Satisfiable",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

/** An error as S3's website endpoint answers it: an HTML page, every value escaped. */
function errorPage(x: Exchange, error: S3Error, thrown: unknown): Response {
  if (error.status === 500) console.error(JSON.stringify({ requestId: x.requestId, error: String(thrown) }));
  const title = `${error.status} ${STATUS_TEXT[error.status] ?? "Error"}`;
  const item = (name: string, value: string) => `<li>${name}: ${xmlEscape(value)}</li>`;
  const body =
    `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><ul>` +
    item("Code", error.code) +
    item("Message", error.message) +
    item("RequestId", x.requestId) +
    "</ul><hr/></body></html>\n";
  const headers = new Headers(error.headers);
  headers.set("Content-Type", "text/html; charset=utf-8");
  headers.set("Cache-Control", "no-store");
  if (thrown instanceof RangeNotSatisfiable) headers.set("Content-Range", `bytes */${thrown.size}`);
  return textResponse(x.request.method === "HEAD" ? null : body, { status: error.status, headers });
}
