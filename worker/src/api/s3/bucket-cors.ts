// A bucket's CORS configuration: PutBucketCors / GetBucketCors / DeleteBucketCors (stored as JSON in
// the bucket's index), and the preflight (OPTIONS, answered without credentials, as S3 does). What
// the rules allow is decided in api/http/cors.ts, so browser apps on other origins can use a bucket.
import { S3Error } from "../../s3-error";
import type { RequestContext, BucketAt } from "../http/context";
import { type CorsRule, corsRules, preflight } from "../http/cors";
import { element, xmlDocument } from "../format/xml";
import { childrenNamed, childText, malformedXml, readXml, type XmlElement } from "../format/xml-parse";
import { settingOperations } from "../http/setting-operations";

const METHODS = ["GET", "PUT", "POST", "DELETE", "HEAD"];
/** S3's limits: 100 rules, 64 KB of configuration. They bound what every preflight compares. */
const MAX_RULES = 100;
const MAX_CORS_BYTES = 64 * 1024;
/** At most this many AllowedHeader patterns with a wildcard (other than "*" alone) in one configuration: every name a preflight asks for is compared with each (api/http/cors.ts). */
const MAX_HEADER_PATTERNS = 50;

export const bucketCors = settingOperations<CorsRule[]>({
  name: "cors",
  read: async (body) => parseCorsXml(await readXml(body, MAX_CORS_BYTES)),
  render: renderCors,
  missing: ["NoSuchCORSConfiguration", "The CORS configuration does not exist"],
});

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
  return xmlDocument("CORSConfiguration", body);
}

/** A CORS preflight (OPTIONS): answered by the bucket's rules, without credentials. */
export async function preflightCors(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  return preflight(await corsRules(ctx, bucket), ctx.request);
}
