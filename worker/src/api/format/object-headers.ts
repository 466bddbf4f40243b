// Which request headers an object keeps, and how they come back on GET/HEAD.
import { S3Error } from "../../s3-error";

/** A comma-separated header's items, trimmed, empty ones left out (absent: none). */
export function headerList(value: string | null): string[] {
  return (value ?? "").split(",").flatMap((s) => (s.trim() === "" ? [] : [s.trim()]));
}

/** Where the website endpoint sends a request for the object (301), stored with it. */
export const WEBSITE_REDIRECT = "x-amz-website-redirect-location";

/**
 * Headers S3 stores with an object and returns as they were sent: its content headers, and where
 * the website endpoint redirects a request for it (x-amz-website-redirect-location, api/website-endpoint.ts).
 */
export const STORED_HEADERS = [
  "content-type",
  "content-disposition",
  "content-encoding",
  "content-language",
  "cache-control",
  "expires",
  WEBSITE_REDIRECT,
] as const;

/** S3's longest x-amz-website-redirect-location. */
const MAX_REDIRECT_BYTES = 2048;

/** An object's website redirect: a path in the bucket's site or an http(s) URL, as S3 takes it (InvalidArgument otherwise). */
export function checkWebsiteRedirect(value: string): void {
  const prefixed = value.startsWith("/") || value.startsWith("http://") || value.startsWith("https://");
  if (!prefixed) throw new S3Error("InvalidArgument", "The website redirect location must have a prefix of 'http://' or 'https://' or '/'.");
  if (new TextEncoder().encode(value).length > MAX_REDIRECT_BYTES)
    throw new S3Error("InvalidArgument", "The length of website redirect location cannot exceed 2,048 characters.");
}

export function storedHeaders(headers: Headers): [string, string][] {
  const redirect = headers.get(WEBSITE_REDIRECT);
  if (redirect !== null) checkWebsiteRedirect(redirect);
  const out: [string, string][] = [];
  for (const name of STORED_HEADERS) {
    let value = headers.get(name);
    // aws-chunked is transfer framing, not the object's encoding.
    if (name === "content-encoding" && value) {
      value = headerList(value)
        .filter((s) => s.toLowerCase() !== "aws-chunked")
        .join(", ");
    }
    if (value) out.push([name, value]);
  }
  if (!out.some(([n]) => n === "content-type")) out.unshift(["content-type", "binary/octet-stream"]);
  return out;
}

/** The request's x-amz-meta-* pairs (names without the prefix); 400 MetadataTooLarge past S3's 2 KB. */
export function userMetadata(headers: Headers): [string, string][] {
  const out: [string, string][] = [];
  let bytes = 0;
  headers.forEach((value, name) => {
    if (!name.startsWith("x-amz-meta-")) return;
    out.push([name.slice("x-amz-meta-".length), value]);
    bytes += name.length - "x-amz-meta-".length + value.length; // header values are byte strings: one character per byte
  });
  if (bytes > MAX_USER_METADATA_BYTES) throw new S3Error("MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size.");
  return out;
}

/** User-defined metadata S3 takes at most: the bytes of every name (without x-amz-meta-) and value. */
const MAX_USER_METADATA_BYTES = 2048;

/** `response-*` query parameters override these response headers on GET. */
export const RESPONSE_OVERRIDES: Record<string, string> = {
  "response-content-type": "Content-Type",
  "response-content-language": "Content-Language",
  "response-expires": "Expires",
  "response-cache-control": "Cache-Control",
  "response-content-disposition": "Content-Disposition",
  "response-content-encoding": "Content-Encoding",
};
