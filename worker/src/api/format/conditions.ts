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
 * Conditional writes (PutObject, CopyObject's destination, CompleteMultipartUpload), decided in
 * the commit's transaction (meta/object-records.ts conditionRefusal): If-Match: * or a list of
 * ETags (over an existing object whose ETag is listed), If-None-Match: * (create only) or a list
 * of ETags (not over an object whose ETag is listed). ETags are taken with or without quotes.
 * Comparison is RFC 9110's: strong for If-Match (a weak W/"…" ETag matches nothing: S3's ETags are
 * strong), weak for If-None-Match. A header with no ETag in it (empty, only commas) matches
 * nothing. Both headers may be sent together: both must hold. (A list's length is bounded by
 * the runtime's limit on request headers.)
 */
export function writeCondition(headers: Headers): WriteCondition | undefined {
  const ifNoneMatch = headers.get("if-none-match");
  const ifMatch = headers.get("if-match");
  if (ifNoneMatch === null && ifMatch === null) return undefined;
  const condition: WriteCondition = {};
  if (ifMatch !== null) condition.ifMatch = etagList(ifMatch, false);
  if (ifNoneMatch !== null) {
    const tags = etagList(ifNoneMatch, true);
    if (tags.includes("*")) condition.ifNoneMatch = true;
    else condition.ifNoneMatchEtag = tags;
  }
  return condition;
}

/**
 * The ETags of a conditional header, without quotes; `weak` keeps a W/"…" ETag as its opaque tag
 * (weak comparison), else leaves it out (strong comparison: it matches nothing).
 */
function etagList(header: string, weak: boolean): string[] {
  const tags: string[] = [];
  for (const raw of header.split(",")) {
    let t = raw.trim();
    if (t.startsWith("W/")) {
      if (!weak) continue;
      t = t.slice(2);
    }
    if (t !== "") tags.push(unquote(t));
  }
  return tags;
}

function unquote(etag: string): string {
  return etag.length >= 2 && etag.startsWith('"') && etag.endsWith('"') ? etag.slice(1, -1) : etag;
}
