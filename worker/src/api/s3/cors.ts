// CORS: PutBucketCors / GetBucketCors / DeleteBucketCors, preflight (OPTIONS, answered without
// credentials, as S3 does) and the Access-Control-* headers on actual responses, so browser apps
// on other origins can use a bucket. The rules are stored as JSON in the bucket's index.
import { S3Error, noSuchBucket } from "../../s3-error";
import { cachedSetting, setSetting } from "../../services/bucket-settings";
import { bucketIndex, type RequestContext } from "../common/context";
import { element, S3_XMLNS, XML_DECLARATION, xmlResponse } from "../common/xml";
import { childrenNamed, childText, malformedXml, readXml, type XmlElement } from "../common/xml-parse";

export interface CorsRule {
  id?: string;
  allowedMethods: string[];
  allowedOrigins: string[];
  allowedHeaders: string[];
  exposeHeaders: string[];
  maxAgeSeconds?: number;
}

const METHODS = ["GET", "PUT", "POST", "DELETE", "HEAD"];
/** S3's limits: 100 rules, 64 KB of configuration. They bound what every preflight compares. */
const MAX_RULES = 100;
const MAX_CORS_BYTES = 64 * 1024;
/**
 * What a preflight may cost, bounded on both sides: AllowedHeader patterns with a wildcard (other
 * than "*" alone) in one configuration, and distinct headers one preflight asks for (browsers ask
 * for a handful). Every asked name is compared with every pattern: at most 64 × 50 comparisons.
 */
const MAX_HEADER_PATTERNS = 50;
const MAX_ASKED_HEADERS = 64;

export async function putBucketCors(ctx: RequestContext, bucket: string): Promise<Response> {
  const rules = parseCorsXml(await readXml(ctx.auth.body, MAX_CORS_BYTES));
  await setSetting(ctx.env, bucket, "cors", JSON.stringify(rules));
  return new Response(null, { status: 200 });
}

export async function getBucketCors(ctx: RequestContext, bucket: string): Promise<Response> {
  const stored = await bucketIndex(ctx, bucket).setting("cors");
  if (stored === undefined) throw noSuchBucket(bucket);
  if (stored === null) throw new S3Error("NoSuchCORSConfiguration", "The CORS configuration does not exist");
  return xmlResponse(renderCors(JSON.parse(stored) as CorsRule[]));
}

export async function deleteBucketCors(ctx: RequestContext, bucket: string): Promise<Response> {
  await setSetting(ctx.env, bucket, "cors", null);
  return new Response(null, { status: 204 });
}

function parseCorsXml(doc: XmlElement): CorsRule[] {
  if (doc.name !== "CORSConfiguration") throw malformedXml();
  const rules = childrenNamed(doc, "CORSRule").map((r): CorsRule => {
    const texts = (name: string) => childrenNamed(r, name).map((c) => c.text.trim());
    const allowedMethods = texts("AllowedMethod");
    const allowedOrigins = texts("AllowedOrigin");
    if (allowedMethods.length === 0 || allowedOrigins.length === 0) throw malformedXml();
    for (const m of allowedMethods) {
      if (!METHODS.includes(m)) throw new S3Error("InvalidRequest", `Found unsupported HTTP method in CORS config. Unsupported method is ${m}`);
    }
    for (const o of allowedOrigins) {
      if (o.split("*").length > 2) throw new S3Error("InvalidRequest", `AllowedOrigin "${o}" can not have more than one wildcard.`);
    }
    const allowedHeaders = texts("AllowedHeader");
    for (const h of allowedHeaders) {
      if (h.split("*").length > 2) throw new S3Error("InvalidRequest", `AllowedHeader "${h}" can not have more than one wildcard.`);
    }
    const maxAge = childText(r, "MaxAgeSeconds")?.trim();
    if (maxAge !== undefined && !/^\d+$/.test(maxAge)) throw malformedXml();
    const id = childText(r, "ID");
    return {
      ...(id !== undefined ? { id } : {}),
      allowedMethods,
      allowedOrigins,
      allowedHeaders,
      exposeHeaders: texts("ExposeHeader"),
      ...(maxAge !== undefined ? { maxAgeSeconds: Number(maxAge) } : {}),
    };
  });
  if (rules.length === 0 || rules.length > MAX_RULES) throw malformedXml();
  const patterns = rules.flatMap((r) => r.allowedHeaders).filter((h) => h !== "*" && h.includes("*")).length;
  if (patterns > MAX_HEADER_PATTERNS)
    throw new S3Error("InvalidRequest", `A CORS configuration may have at most ${MAX_HEADER_PATTERNS} AllowedHeader patterns with a wildcard.`);
  return rules;
}

function renderCors(rules: CorsRule[]): string {
  const body = rules
    .map((r) => {
      const list = (name: string, values: string[]) => values.map((v) => element(name, v)).join("");
      return (
        "<CORSRule>" +
        (r.id !== undefined ? element("ID", r.id) : "") +
        list("AllowedHeader", r.allowedHeaders) +
        list("AllowedMethod", r.allowedMethods) +
        list("AllowedOrigin", r.allowedOrigins) +
        list("ExposeHeader", r.exposeHeaders) +
        (r.maxAgeSeconds !== undefined ? element("MaxAgeSeconds", r.maxAgeSeconds) : "") +
        "</CORSRule>"
      );
    })
    .join("");
  return `${XML_DECLARATION}<CORSConfiguration xmlns="${S3_XMLNS}">${body}</CORSConfiguration>`;
}

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

/** Reads a bucket's rules for a request that came with an Origin; none when it has none. */
/** The bucket's CORS rules (none when it has none or does not exist; cached: services/bucket-settings.ts). */
export async function corsRules(ctx: Pick<RequestContext, "env">, bucket: string): Promise<CorsRule[]> {
  const stored = await cachedSetting(ctx.env, bucket, "cors");
  return stored ? (JSON.parse(stored) as CorsRule[]) : [];
}

/** The answer to an OPTIONS preflight: 200 with the allowing rule's headers, or 403. */
export function preflight(rules: readonly CorsRule[], request: Request): Response | S3Error {
  const origin = request.headers.get("origin");
  const method = request.headers.get("access-control-request-method");
  if (origin === null || method === null) {
    return new S3Error("BadRequest", "Insufficient information. Origin request header needed.");
  }
  const asked = [
    ...new Set(
      (request.headers.get("access-control-request-headers") ?? "")
        .split(",")
        .map((h) => h.trim().toLowerCase())
        .filter(Boolean),
    ),
  ];
  const rule = asked.length > MAX_ASKED_HEADERS ? null : matchRule(rules, origin, method, asked);
  if (!rule)
    return new S3Error(
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
