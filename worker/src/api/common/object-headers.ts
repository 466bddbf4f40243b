// Which request headers an object keeps, and how they come back on GET/HEAD.

/** Content headers S3 stores with an object and returns as they were sent. */
export const STORED_HEADERS = ["content-type", "content-disposition", "content-encoding", "content-language", "cache-control", "expires"] as const;

export function storedHeaders(headers: Headers): [string, string][] {
  const out: [string, string][] = [];
  for (const name of STORED_HEADERS) {
    let value = headers.get(name);
    // aws-chunked is transfer framing, not the object's encoding.
    if (name === "content-encoding" && value) {
      value = value
        .split(",")
        .map((s) => s.trim())
        .filter((s) => s !== "" && s.toLowerCase() !== "aws-chunked")
        .join(", ");
    }
    if (value) out.push([name, value]);
  }
  if (!out.some(([n]) => n === "content-type")) out.unshift(["content-type", "binary/octet-stream"]);
  return out;
}

export function userMetadata(headers: Headers): [string, string][] {
  const out: [string, string][] = [];
  headers.forEach((value, name) => {
    if (name.startsWith("x-amz-meta-")) out.push([name.slice("x-amz-meta-".length), value]);
  });
  return out;
}

/** `response-*` query parameters override these response headers on GET. */
export const RESPONSE_OVERRIDES: Record<string, string> = {
  "response-content-type": "Content-Type",
  "response-content-language": "Content-Language",
  "response-expires": "Expires",
  "response-cache-control": "Cache-Control",
  "response-content-disposition": "Content-Disposition",
  "response-content-encoding": "Content-Encoding",
};
