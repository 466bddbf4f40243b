// Conditional requests: the If-* headers of a read (GET, HEAD, a copy's source) and of a write.
import type { ObjectRecord, WriteCondition } from "../../meta/types";
import { preconditionFailed } from "../../s3-error";

/** The four conditional headers of a GET/HEAD (or, for a copy, of its x-amz-copy-source-if-*). */
export interface Conditions {
  ifMatch: string | null;
  ifNoneMatch: string | null;
  ifModifiedSince: string | null;
  ifUnmodifiedSince: string | null;
}

export function requestConditions(headers: Headers, prefix = "if-"): Conditions {
  return {
    ifMatch: headers.get(`${prefix}match`),
    ifNoneMatch: headers.get(`${prefix}none-match`),
    ifModifiedSince: headers.get(`${prefix}modified-since`),
    ifUnmodifiedSince: headers.get(`${prefix}unmodified-since`),
  };
}

/**
 * S3's precedence: If-Match / If-Unmodified-Since failing → 412 (thrown); If-None-Match /
 * If-Modified-Since failing → true ("not modified": 304 on GET, 412 on a copy).
 */
export function checkConditions(c: Conditions, object: Pick<ObjectRecord, "etag" | "lastModified">): boolean {
  const etag = `"${object.etag}"`;
  const modified = Math.floor(object.lastModified / 1000) * 1000;
  const ifModifiedSince = httpDate(c.ifModifiedSince);
  const ifUnmodifiedSince = httpDate(c.ifUnmodifiedSince);
  if (c.ifMatch !== null) {
    if (!etagMatches(c.ifMatch, etag)) throw preconditionFailed();
  } else if (ifUnmodifiedSince !== null && modified > ifUnmodifiedSince) {
    throw preconditionFailed();
  }
  if (c.ifNoneMatch !== null) return etagMatches(c.ifNoneMatch, etag);
  return ifModifiedSince !== null && modified <= ifModifiedSince;
}

function etagMatches(header: string, etag: string): boolean {
  return header.split(",").some((t) => {
    const v = t.trim();
    return v === "*" || v === etag || `"${v}"` === etag;
  });
}

function httpDate(value: string | null): number | null {
  if (value === null) return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : t;
}

/**
 * Conditional writes: If-None-Match: * (create only), If-None-Match: <etag> (not over that
 * object) and If-Match: <etag>.
 */
export function writeCondition(headers: Headers): WriteCondition | undefined {
  const ifNoneMatch = headers.get("if-none-match")?.trim() ?? null;
  const ifMatch = headers.get("if-match");
  if (ifNoneMatch === null && ifMatch === null) return undefined;
  return {
    ifNoneMatch: ifNoneMatch === "*",
    ifNoneMatchEtag: ifNoneMatch === null || ifNoneMatch === "*" ? undefined : unquote(ifNoneMatch),
    ifMatch: ifMatch === null ? undefined : unquote(ifMatch.trim()),
  };
}

function unquote(etag: string): string {
  return etag.replace(/^"|"$/g, "");
}
