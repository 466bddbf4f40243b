// AWS Signature Version 4 for the CLI's requests (service "s3"), with node:crypto only: the body
// is hashed (x-amz-content-sha256; a streamed upload's is UNSIGNED-PAYLOAD), and host, x-amz-*,
// content-md5 and content-type are signed.
import { createHash, createHmac } from "node:crypto";

const sha256Hex = (data) => createHash("sha256").update(data).digest("hex");
const hmac = (key, text) => createHmac("sha256", key).update(text).digest();

/** RFC 3986 percent-encoding, as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
export function uriEncode(text) {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The query string of `params` (name → value, null for a bare flag like `?policy`), sorted as SigV4 wants. */
export function canonicalQuery(params) {
  return Object.entries(params)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => [uriEncode(name), uriEncode(value === null ? "" : String(value))])
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join("&");
}

/**
 * The headers that sign a request: `headers` plus x-amz-date, x-amz-content-sha256 (the body's
 * hash, or `payloadHash` as given: UNSIGNED-PAYLOAD for a streamed body), the session token if any,
 * and authorization. `url` is a URL whose pathname is already encoded (the canonical URI as sent)
 * and whose search is canonicalQuery's.
 */
export function sign({ method, url, headers = {}, body, payloadHash, credentials, region, now = new Date() }) {
  const amzDate = now.toISOString().replace(/[-:]|\.\d{3}/g, "");
  const day = amzDate.slice(0, 8);
  const all = { ...Object.fromEntries(Object.entries(headers).map(([n, v]) => [n.toLowerCase(), String(v)])) };
  all.host = url.host;
  all["x-amz-date"] = amzDate;
  all["x-amz-content-sha256"] = payloadHash ?? sha256Hex(body ?? "");
  if (credentials.sessionToken) all["x-amz-security-token"] = credentials.sessionToken;
  const signed = Object.keys(all)
    .filter((n) => n === "host" || n.startsWith("x-amz-") || n === "content-md5" || n === "content-type")
    .sort();
  const canonicalHeaders = signed.map((n) => `${n}:${all[n].trim().replace(/\s+/g, " ")}\n`).join("");
  const canonical = [method, url.pathname, url.search.replace(/^\?/, ""), canonicalHeaders, signed.join(";"), all["x-amz-content-sha256"]].join("\n");
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256Hex(canonical)].join("\n");
  const key = hmac(hmac(hmac(hmac(`AWS4${credentials.secretAccessKey}`, day), region), "s3"), "aws4_request");
  const signature = hmac(key, toSign).toString("hex");
  all.authorization = `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, SignedHeaders=${signed.join(";")}, Signature=${signature}`;
  delete all.host; // fetch sends it from the URL
  return all;
}
