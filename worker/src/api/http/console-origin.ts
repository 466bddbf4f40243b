// The console's own origin (SHARDGATE_CONSOLE_ORIGIN, docs/console.md): the console is served apart
// from the gateway (its own listener under `npm start`, its own host on Cloudflare), so that no
// stored object ever runs on the origin that holds the console's credentials, and it talks to the
// gateway cross-origin. Requests from that origin get CORS answers on every S3, admin and STS
// request (preflights included), whatever a bucket's own CORS rules say; any other origin gets only
// what a bucket's rules allow (api/s3/bucket-cors.ts). No cookie or other ambient credential exists: every
// request the console sends is signed.
import { consoleOrigins, type Env } from "../../config";
import { headerList } from "../format/object-headers";

/** What the console reads from answers besides the CORS-safelisted headers (and "*": any, for requests without credentials). */
const EXPOSED = [
  "*",
  "ETag",
  "Content-Length",
  "Content-Range",
  "Content-Type",
  "Content-Disposition",
  "Content-Encoding",
  "Content-Language",
  "Cache-Control",
  "Expires",
  "Last-Modified",
  "Accept-Ranges",
  "x-amz-request-id",
  "x-amz-version-id",
  "x-amz-delete-marker",
  "x-amz-checksum-type",
  "x-amz-checksum-crc32",
  "x-amz-checksum-crc32c",
  "x-amz-checksum-crc64nvme",
  "x-amz-checksum-sha1",
  "x-amz-checksum-sha256",
  "x-amz-mp-parts-count",
  "x-amz-expiration",
  "x-amz-tagging-count",
  "x-amz-server-side-encryption",
  "x-amz-server-side-encryption-customer-algorithm",
  "x-amz-object-lock-mode",
  "x-amz-object-lock-retain-until-date",
  "x-amz-object-lock-legal-hold",
].join(", ");
const METHODS = "GET, HEAD, PUT, POST, DELETE, PATCH";
/** Headers a preflight may ask for at most (the console asks for a handful). */
const MAX_ASKED_HEADERS = 64;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;

/** The request's Origin when it is the console's (config.ts consoleOrigins), else null. */
export function consoleOriginOf(request: Request, env: Env): string | null {
  const origin = request.headers.get("origin");
  return origin !== null && consoleOrigins(env).includes(origin) ? origin : null;
}

/** The answer to a preflight from the console: any method the API has, the headers it asks for. */
export function consolePreflight(request: Request, origin: string): Response {
  const asked = headerList(request.headers.get("access-control-request-headers"))
    .map((h) => h.toLowerCase())
    .slice(0, MAX_ASKED_HEADERS)
    .filter((h) => HEADER_NAME.test(h));
  const headers = new Headers({
    "Access-Control-Allow-Origin": origin,
    "Access-Control-Allow-Methods": METHODS,
    "Access-Control-Max-Age": "600",
    Vary: "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
  });
  if (asked.length > 0) headers.set("Access-Control-Allow-Headers", asked.join(", "));
  return new Response(null, { status: 204, headers });
}

/** Lets the console read an actual answer (errors included). */
export function allowConsole(response: Response, origin: string): void {
  response.headers.set("Access-Control-Allow-Origin", origin);
  response.headers.set("Access-Control-Expose-Headers", EXPOSED);
  response.headers.append("Vary", "Origin");
}
