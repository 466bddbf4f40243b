// CORS as a browser on another origin meets it: the bucket's rules (stored by the
// Put/Get/DeleteBucketCors operations, api/s3/bucket-cors.ts), matched against a request's Origin,
// method and headers; the answer to a preflight; the Access-Control-* headers of an actual response.
import { S3Error } from "../../s3-error";
import { cachedSetting } from "../../services/bucket-settings";
import type { RequestContext } from "./context";
import { headerList } from "../format/object-headers";

export interface CorsRule {
  id?: string;
  allowedMethods: string[];
  allowedOrigins: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

/**
 * What a preflight may cost, bounded on both sides: distinct headers one preflight asks for
 * (browsers ask for a handful), and AllowedHeader patterns with a wildcard in one configuration (at
 * most 50, api/s3/bucket-cors.ts). Every asked name is compared with every pattern: at most 64 × 50.
 */
const MAX_ASKED_HEADERS = 64;

/** A pattern with at most one "*" (any run of characters): a prefix and suffix test, linear, no RegExp. */
function wildcardMatch(pattern: string, value: string): boolean {
  const star = pattern.indexOf("*");
  if (star < 0) return pattern === value;
  const head = pattern.slice(0, star);
  const tail = pattern.slice(star + 1);
  return value.length >= head.length + tail.length && value.startsWith(head) && value.endsWith(tail);
}

/** A rule's AllowedHeaders, lower-cased once: the names without "*" as a set, the patterns apart. */
function headerMatcher(rule: CorsRule): (name: string) => boolean {
  const exact = new Set<string>();
  const patterns: string[] = [];
  for (const a of rule.allowedHeaders) {
    const lower = a.toLowerCase();
    if (lower === "*") return () => true;
    if (lower.includes("*")) patterns.push(lower);
    else exact.add(lower);
  }
  return (name) => exact.has(name) || patterns.some((p) => wildcardMatch(p, name));
}

/** The first rule allowing `origin` to use `method` with `headers` (lower-case names), as S3 picks. */
export function matchRule(rules: readonly CorsRule[], origin: string, method: string, headers: readonly string[] = []): CorsRule | null {
  const asked = [...new Set(headers)];
  return (
    rules.find((r) => {
      if (!r.allowedOrigins.some((o) => wildcardMatch(o, origin)) || !r.allowedMethods.includes(method)) return false;
      if (asked.length === 0) return true;
      const allowed = headerMatcher(r);
      return asked.every(allowed);
    }) ?? null
  );
}

/** The bucket's CORS rules (none when it has none or does not exist; cached: services/bucket-settings.ts). */
export async function corsRules(ctx: Pick<RequestContext, "env">, bucket: string): Promise<CorsRule[]> {
  const stored = await cachedSetting(ctx.env, bucket, "cors");
  return stored ? (JSON.parse(stored) as CorsRule[]) : [];
}

/** The answer to an OPTIONS preflight: 200 with the allowing rule's headers; 403 (thrown) when none allows it. */
export function preflight(rules: readonly CorsRule[], request: Request): Response {
  const origin = request.headers.get("origin");
  const method = request.headers.get("access-control-request-method");
  if (origin === null || method === null) throw new S3Error("BadRequest", "Insufficient information. Origin request header needed.");
  const asked = [...new Set(headerList(request.headers.get("access-control-request-headers")).map((h) => h.toLowerCase()))];
  const rule = asked.length > MAX_ASKED_HEADERS ? null : matchRule(rules, origin, method, asked);
  if (!rule)
    throw new S3Error(
      "AccessForbidden",
      "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.",
    );
  const headers = allowHeaders(rule, origin);
  headers.set("Access-Control-Allow-Methods", rule.allowedMethods.join(", "));
  if (asked.length > 0) headers.set("Access-Control-Allow-Headers", asked.join(", "));
  if (rule.maxAgeSeconds !== undefined) headers.set("Access-Control-Max-Age", String(rule.maxAgeSeconds));
  headers.set("Vary", "Origin, Access-Control-Request-Headers, Access-Control-Request-Method");
  return new Response(null, { status: 200, headers });
}

/** Adds the Access-Control-* headers to an actual response when a rule allows the request. */
export function applyCors(rules: readonly CorsRule[], request: Request, response: Response): void {
  const origin = request.headers.get("origin");
  if (origin === null || rules.length === 0) return;
  const rule = matchRule(rules, origin, request.method);
  if (!rule) return;
  allowHeaders(rule, origin).forEach((value, name) => response.headers.set(name, value));
  response.headers.append("Vary", "Origin");
}

function allowHeaders(rule: CorsRule, origin: string): Headers {
  const headers = new Headers();
  const any = rule.allowedOrigins.includes("*");
  headers.set("Access-Control-Allow-Origin", any ? "*" : origin);
  if (!any) headers.set("Access-Control-Allow-Credentials", "true");
  if (rule.exposeHeaders.length > 0) headers.set("Access-Control-Expose-Headers", rule.exposeHeaders.join(", "));
  return headers;
}
