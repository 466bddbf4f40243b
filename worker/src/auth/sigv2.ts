// AWS Signature Version 2, where clients still use it (docs/s3-compatibility.md): boto3's
// generate_presigned_url makes V2 query URLs (AWSAccessKeyId, Signature, Expires) for a custom
// endpoint unless told otherwise, and some old tools sign headers with `Authorization: AWS id:sig`.
// Accepted as MinIO does, unless SHARDGATE_SIGV2 is "off". The payload is not signed in V2.
//
//   StringToSign = Method \n Content-MD5 \n Content-Type \n Date-or-Expires \n
//                  CanonicalizedAmzHeaders CanonicalizedResource
//   Signature    = Base64(HMAC-SHA1(secret, StringToSign))
import { toBase64 } from "../shared/bytes";
import { S3Error } from "../s3-error";
import { constantTimeEqual } from "./crypto";
import * as v4 from "./sigv4";

/**
 * Query parameters that name a sub-resource and so are part of the signed resource: S3's, every
 * one botocore's V2 signer signs (a client signs those it sends), and every one the router reads to
 * pick an operation it implements (api/http/router.ts) but `list-type` (ListObjectsV2 and ListObjects
 * need the same right, and botocore does not sign it). Unsigned, a parameter that picks the
 * operation would let anyone holding a signed request turn it into another operation.
 */
const SUB_RESOURCES = new Set(
  `accelerate acl analytics attributes cors defaultObjectAcl delete encryption intelligentTiering inventory legal-hold lifecycle location
  logging metrics notification object-lock ownershipControls partNumber policy policyStatus publicAccessBlock replication requestPayment
  response-cache-control response-content-disposition response-content-encoding response-content-language response-content-type
  response-expires restore retention select select-type storageClass tagging torrent uploadId uploads versionId versioning versions website`.split(/\s+/),
);

const MAX_PRESIGNED_SECONDS = 7 * 24 * 3600;

const encoder = new TextEncoder();

export interface V2Options {
  /** ms since epoch */
  now: number;
  /** Virtual-hosted buckets are `<bucket>.<suffix>`: their name is part of the signed resource. */
  virtualHostSuffix: string;
}

/** Whether the request is signed with Signature Version 2 (header or query). */
export function isSigV2(request: Request, url: URL): boolean {
  const authorization = request.headers.get("authorization");
  if (authorization !== null) return /^AWS\s+[^:\s]+:/.test(authorization.trim());
  return url.searchParams.has("AWSAccessKeyId") && url.searchParams.has("Signature");
}

/** The request's payload, once its V2 signature checks out. */
export async function authenticateV2(request: Request, secretOf: v4.SecretLookup, opts: V2Options): Promise<v4.Authenticated> {
  const url = new URL(request.url);
  const gatewayHeader = [...request.headers.keys()].find((name) => name.startsWith(v4.GATEWAY_HEADER_PREFIX));
  if (gatewayHeader) throw new S3Error("InvalidRequest", `Signature Version 2 does not sign ${gatewayHeader}: sign requests with it with AWS4-HMAC-SHA256.`);
  const authorization = request.headers.get("authorization");
  let accessKeyId: string;
  let signature: string;
  let dateLine: string;
  if (authorization !== null) {
    const m = /^AWS\s+([^:\s]+):(\S+)$/.exec(authorization.trim());
    if (!m) throw new S3Error("InvalidArgument", "The authorization header is malformed.");
    [, accessKeyId, signature] = m as unknown as [string, string, string];
    const date = request.headers.get("x-amz-date") ?? request.headers.get("date");
    const time = date === null ? Number.NaN : Date.parse(date);
    if (Number.isNaN(time)) throw new S3Error("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header");
    if (Math.abs(opts.now - time) > v4.MAX_SKEW_MS) throw v4.timeTooSkewed();
    // With x-amz-date the Date line is empty: the date is signed among the x-amz-* headers.
    dateLine = request.headers.has("x-amz-date") ? "" : (request.headers.get("date") ?? "");
  } else {
    accessKeyId = url.searchParams.get("AWSAccessKeyId") ?? "";
    signature = url.searchParams.get("Signature") ?? "";
    dateLine = url.searchParams.get("Expires") ?? "";
    const expires = Number(dateLine);
    if (!/^\d+$/.test(dateLine)) throw new S3Error("AccessDenied", "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters");
    // Valid until, not through, the second it names: an Expires of now has expired (403, as S3).
    if (expires * 1000 <= opts.now) throw new S3Error("AccessDenied", "Request has expired");
    if (expires * 1000 - opts.now > MAX_PRESIGNED_SECONDS * 1000) {
      throw new S3Error("AccessDenied", "Query-string authentication: the URL may be valid for at most 7 days");
    }
  }
  const secret = await secretOf(accessKeyId);
  if (secret === null) throw v4.invalidAccessKey();

  const head = [request.method.toUpperCase(), request.headers.get("content-md5") ?? "", request.headers.get("content-type") ?? "", dateLine].join("\n");
  // A presigned URL carries its x-amz-* values (x-amz-security-token) as query parameters, signed as headers.
  const amz = canonicalAmzHeaders(authorization === null ? withQueryAmzHeaders(request.headers, url) : request.headers);
  // Clients sign the path as they sent it or as S3 spells it, and botocore signs a bucket's own
  // path with a trailing slash it does not send: any of these spellings of the same path matches.
  const spellings = [url.pathname, respell(url.pathname)];
  if (/^\/[^/]+$/.test(url.pathname)) spellings.push(`${url.pathname}/`);
  for (const path of new Set(spellings)) {
    const toSign = `${head}\n${amz}${canonicalResource(url, path, opts.virtualHostSuffix)}`;
    if (constantTimeEqual(await postPolicySignatureV2(secret, toSign), signature)) return { ...v4.anonymousRequest(request), accessKeyId };
  }
  throw v4.signatureMismatch();
}

/** Base64(HMAC-SHA1(secret, text)): a V2 signature, and that of a browser form's POST policy (its base64 text, as sent). */
export async function postPolicySignatureV2(secret: string, text: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  return toBase64(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(text))));
}

/** `headers` and the query's x-amz-* parameters, as a presigned V2 URL signs them. */
function withQueryAmzHeaders(headers: Headers, url: URL): Headers {
  const all = new Headers(headers);
  try {
    for (const [name, value] of url.searchParams) if (name.toLowerCase().startsWith("x-amz-")) all.set(name, value);
  } catch {
    throw new S3Error("InvalidArgument", "An x-amz-* query parameter is not a valid header name or value.");
  }
  return all;
}

/** x-amz-* headers, lower-cased and sorted, `name:value\n` each (inner whitespace folded). */
function canonicalAmzHeaders(headers: Headers): string {
  const amz: [string, string][] = [];
  for (const [name, value] of headers) if (name.startsWith("x-amz-")) amz.push([name, v4.canonicalHeaderValue(value)]);
  amz.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return amz.map(([n, v]) => `${n}:${v}\n`).join("");
}

/** `/bucket/key` (a virtual-hosted bucket's name put in front) and the signed sub-resources. */
function canonicalResource(url: URL, path: string, suffix: string): string {
  const host = url.hostname.toLowerCase();
  const dotSuffix = `.${suffix.toLowerCase()}`;
  const bucket = host.endsWith(dotSuffix) && host.length > dotSuffix.length ? host.slice(0, -dotSuffix.length) : null;
  const subs = [...url.searchParams].filter(([name]) => SUB_RESOURCES.has(name)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const query = subs.map(([name, value]) => (value === "" ? name : `${name}=${value}`)).join("&");
  return `${bucket === null ? "" : `/${bucket}`}${path}${query ? `?${query}` : ""}`;
}

/** The path percent-encoded as S3 spells it: every byte but A-Z a-z 0-9 - _ . ~ / as %XX. */
function respell(pathname: string): string {
  try {
    return v4.awsEncode(encoder.encode(decodeURIComponent(pathname)), true);
  } catch {
    return pathname;
  }
}
