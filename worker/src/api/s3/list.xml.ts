// ListObjectsV2 (`GET /bucket?list-type=2`), ListObjects v1 (`GET /bucket`) and
// ListObjectVersions (`GET /bucket?versions`): the query parameters in, a ListQuery for the
// BucketIndex, and its page out as S3's XML; and ListBuckets' ListAllMyBucketsResult. Pure functions, no I/O.
import type { BucketInfo, ListPage, ListQuery, ListVersionsPage, ListVersionsQuery, ObjectSummary, VersionSummary } from "../../meta/types";
import { S3Error } from "../../s3-error";
import { parseVersionId } from "../format/object-request";
import { element, s3Date, xmlDocument } from "../format/xml";

/** The bucket owner as S3 shows it; DisplayName is left out when not given. */
export interface Owner {
  id: string;
  displayName?: string;
}

/** A parsed listing request: what to ask the index and what to echo in the response. */
export interface ListObjectsRequest {
  version: 1 | 2;
  query: ListQuery;
  /** encoding-type=url: keys, prefixes and markers are URL-encoded in the response. */
  encodeUrl: boolean;
  /** V2's fetch-owner=true (V1 always shows the owner). */
  fetchOwner: boolean;
  /** V2: start-after as sent, echoed (as S3 does) even when a continuation token took over; null: none. */
  startAfter: string | null;
  /** V2: the continuation token as sent (echoed verbatim); null: none. */
  continuationToken: string | null;
  /** V1: the marker as sent ("" when none; always echoed). */
  marker: string;
}

// S3 refuses max-keys outside a signed 32-bit integer; above 1000 it just returns 1000 (the
// BucketIndex caps it too, at its own MAX_LIST_KEYS; not imported to keep this module pure).
const MAX_LIST_KEYS = 1000;
const MAX_KEYS_LIMIT = 2147483647;

/** Parses a bucket GET's query: `list-type=2` selects V2, anything else V1 (as S3 does). */
export function parseListObjectsParams(params: URLSearchParams): ListObjectsRequest {
  const version = params.get("list-type") === "2" ? 2 : 1;
  const prefix = params.get("prefix") ?? "";
  const delimiter = params.get("delimiter") || null; // an empty delimiter means none
  const maxKeys = parseMaxKeys(params.get("max-keys"));
  const encodeUrl = parseEncodingType(params.get("encoding-type"));
  if (version === 1) {
    const marker = params.get("marker") ?? "";
    return {
      version,
      query: { prefix, delimiter, after: marker || null, maxKeys },
      encodeUrl,
      fetchOwner: true,
      startAfter: null,
      continuationToken: null,
      marker,
    };
  }
  const continuationToken = params.get("continuation-token");
  const startAfter = params.get("start-after") || null;
  const after = continuationToken !== null ? decodeContinuationToken(continuationToken) : startAfter;
  return {
    version,
    query: { prefix, delimiter, after, maxKeys },
    encodeUrl,
    fetchOwner: params.get("fetch-owner")?.toLowerCase() === "true",
    startAfter,
    continuationToken,
    marker: "",
  };
}

function parseMaxKeys(value: string | null): number {
  if (value === null) return MAX_LIST_KEYS;
  const n = /^\d{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(n <= MAX_KEYS_LIMIT)) throw new S3Error("InvalidArgument", `Argument maxKeys must be an integer between 0 and ${MAX_KEYS_LIMIT}`);
  return Math.min(n, MAX_LIST_KEYS);
}

function parseEncodingType(value: string | null): boolean {
  if (value === null) return false;
  if (value !== "url") throw new S3Error("InvalidArgument", "Invalid Encoding Method specified in Request");
  return true;
}

/** The opaque V2 continuation token: base64url (no padding) of the UTF-8 of `last`. */
export function encodeContinuationToken(last: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(last)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The `last` a continuation token carries; InvalidArgument for anything we did not issue. */
export function decodeContinuationToken(token: string): string {
  const invalid = () => new S3Error("InvalidArgument", "The continuation token provided is incorrect");
  if (!/^[A-Za-z0-9_-]+$/.test(token) || token.length % 4 === 1) throw invalid();
  const binary = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
  const bytes = Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw invalid();
  }
}

/**
 * URL-encodes a value the way S3 does for encoding-type=url: Java's URLEncoder (UTF-8; letters,
 * digits and `.-*_` kept, space as `+`, everything else `%XX` upper-case, `~` included) except
 * that `/` is kept. Observed on S3: `a b.txt` -> `a+b.txt`, `a+b.txt` -> `a%2Bb.txt`,
 * `한글/x.txt` -> `%ED%95%9C%EA%B8%80/x.txt`; MinIO documents the same `/`, `*` and `~` rules.
 * Clients decode it with form decoding (botocore: unquote_plus).
 */
export function s3UrlEncode(value: string): string {
  let out = "";
  for (const byte of new TextEncoder().encode(value)) {
    const ch = String.fromCharCode(byte);
    if (/[A-Za-z0-9.\-*_/]/.test(ch)) out += ch;
    else if (byte === 0x20) out += "+";
    else out += "%" + byte.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

export function ownerXml(owner: Owner): string {
  const name = owner.displayName === undefined ? "" : element("DisplayName", owner.displayName);
  return `<Owner>${element("ID", owner.id)}${name}</Owner>`;
}

/**
 * The ListBucketResult for one page. S3's document order: the header elements, then every
 * Contents, then every CommonPrefixes (not interleaved by key).
 */
export function renderListObjects(bucket: string, req: ListObjectsRequest, page: ListPage, owner: Owner): string {
  const enc = req.encodeUrl ? s3UrlEncode : (s: string) => s;
  const head = req.version === 2 ? v2Header(bucket, req, page, enc) : v1Header(bucket, req, page, enc);
  const showOwner = req.version === 1 || req.fetchOwner;
  const contents = page.objects.map((o) => contentsXml(o, enc, showOwner ? owner : null)).join("");
  const prefixes = page.commonPrefixes.map((p) => `<CommonPrefixes>${element("Prefix", enc(p))}</CommonPrefixes>`).join("");
  return xmlDocument("ListBucketResult", `${head}${contents}${prefixes}`);
}

type Encode = (s: string) => string;

// EncodingType sits just before IsTruncated, where S3 puts it (after Delimiter).
function tail(req: ListObjectsRequest, page: ListPage, enc: Encode): string {
  const delimiter = req.query.delimiter === null ? "" : element("Delimiter", enc(req.query.delimiter));
  const encoding = req.encodeUrl ? element("EncodingType", "url") : "";
  return `${delimiter}${encoding}${element("IsTruncated", page.isTruncated)}`;
}

function v2Header(bucket: string, req: ListObjectsRequest, page: ListPage, enc: Encode): string {
  const parts = [element("Name", bucket), element("Prefix", enc(req.query.prefix))];
  if (req.startAfter !== null) parts.push(element("StartAfter", enc(req.startAfter)));
  // Tokens are opaque and already URL-safe: never URL-encoded.
  if (req.continuationToken !== null) parts.push(element("ContinuationToken", req.continuationToken));
  if (page.isTruncated && page.last !== null) parts.push(element("NextContinuationToken", encodeContinuationToken(page.last)));
  const keyCount = page.objects.length + page.commonPrefixes.length;
  parts.push(element("KeyCount", keyCount), element("MaxKeys", req.query.maxKeys), tail(req, page, enc));
  return parts.join("");
}

function v1Header(bucket: string, req: ListObjectsRequest, page: ListPage, enc: Encode): string {
  const parts = [element("Name", bucket), element("Prefix", enc(req.query.prefix)), element("Marker", enc(req.marker))];
  // Without a delimiter the client continues after the last Key itself, so S3 omits NextMarker.
  if (req.query.delimiter !== null && page.isTruncated && page.last !== null) parts.push(element("NextMarker", enc(page.last)));
  parts.push(element("MaxKeys", req.query.maxKeys), tail(req, page, enc));
  return parts.join("");
}

// S3 writes Owner before StorageClass inside Contents.
function contentsXml(o: ObjectSummary, enc: Encode, owner: Owner | null): string {
  return (
    "<Contents>" +
    element("Key", enc(o.key)) +
    element("LastModified", s3Date(o.lastModified)) +
    element("ETag", `"${o.etag}"`) +
    element("Size", o.size) +
    (owner ? ownerXml(owner) : "") +
    element("StorageClass", "STANDARD") +
    "</Contents>"
  );
}

/** A parsed ListObjectVersions request. */
export interface ListVersionsRequest {
  query: ListVersionsQuery;
  encodeUrl: boolean;
  /** key-marker and version-id-marker as sent ("" when none; always echoed). */
  keyMarker: string;
  versionIdMarker: string;
}

export function parseListVersionsParams(params: URLSearchParams): ListVersionsRequest {
  const keyMarker = params.get("key-marker") ?? "";
  const versionIdMarker = params.get("version-id-marker") ?? "";
  if (versionIdMarker !== "" && keyMarker === "") throw new S3Error("InvalidArgument", "A version-id marker cannot be specified without a key marker.");
  // Versions of key-marker older than version-id-marker come first, then later keys.
  return {
    query: {
      prefix: params.get("prefix") ?? "",
      delimiter: params.get("delimiter") || null,
      keyMarker: keyMarker || null,
      versionIdMarker: versionIdMarker === "" ? undefined : parseVersionId(versionIdMarker),
      maxKeys: parseMaxKeys(params.get("max-keys")),
    },
    encodeUrl: parseEncodingType(params.get("encoding-type")),
    keyMarker,
    versionIdMarker,
  };
}

/** The ListVersionsResult for one page: versions and delete markers in order, then common prefixes. */
export function renderListVersions(bucket: string, req: ListVersionsRequest, page: ListVersionsPage, owner: Owner): string {
  const enc = req.encodeUrl ? s3UrlEncode : (s: string) => s;
  const parts = [
    element("Name", bucket),
    element("Prefix", enc(req.query.prefix)),
    element("KeyMarker", enc(req.keyMarker)),
    element("VersionIdMarker", req.versionIdMarker),
  ];
  if (page.isTruncated && page.nextKeyMarker !== null) {
    parts.push(element("NextKeyMarker", enc(page.nextKeyMarker)));
    // A page that ends on a common prefix continues after it; one that ends on a version, after that version.
    if (page.nextVersionIdMarker !== null) parts.push(element("NextVersionIdMarker", page.nextVersionIdMarker));
  }
  parts.push(element("MaxKeys", req.query.maxKeys));
  if (req.query.delimiter !== null) parts.push(element("Delimiter", enc(req.query.delimiter)));
  if (req.encodeUrl) parts.push(element("EncodingType", "url"));
  parts.push(element("IsTruncated", page.isTruncated));
  const versions = page.versions.map((v) => versionXml(v, enc, owner)).join("");
  const prefixes = page.commonPrefixes.map((p) => `<CommonPrefixes>${element("Prefix", enc(p))}</CommonPrefixes>`).join("");
  return xmlDocument("ListVersionsResult", `${parts.join("")}${versions}${prefixes}`);
}

function versionXml(v: VersionSummary, enc: Encode, owner: Owner): string {
  const head =
    element("Key", enc(v.key)) +
    element("VersionId", v.versionId ?? "null") +
    element("IsLatest", v.isLatest) +
    element("LastModified", s3Date(v.lastModified));
  if (v.deleteMarker) return `<DeleteMarker>${head}${ownerXml(owner)}</DeleteMarker>`;
  return `<Version>${head}${element("ETag", `"${v.etag}"`)}${element("Size", v.size)}${ownerXml(owner)}${element("StorageClass", "STANDARD")}</Version>`;
}

/** The buckets in the order given (the registry lists them sorted by name). */
export function renderListBuckets(buckets: readonly BucketInfo[], owner: Owner): string {
  const items = buckets.map((b) => `<Bucket>${element("Name", b.name)}${element("CreationDate", s3Date(b.created))}</Bucket>`).join("");
  return xmlDocument("ListAllMyBucketsResult", `${ownerXml(owner)}<Buckets>${items}</Buckets>`);
}
