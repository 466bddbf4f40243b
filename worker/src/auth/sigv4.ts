// AWS Signature Version 4 for the S3 API: the Authorization header and presigned (query) URLs,
// with every payload mode of x-amz-content-sha256. Signatures are compared in constant time.
//
// The canonical request follows AWS's rules as S3 applies them:
//   METHOD \n CanonicalURI \n CanonicalQuery \n CanonicalHeaders \n SignedHeaders \n PayloadHash
// - CanonicalURI: the path percent-decoded, then re-encoded byte by byte: A-Z a-z 0-9 - _ . ~
//   and '/' kept, every other byte %XX (upper-case). S3 neither normalises nor double-encodes.
//   Decoding first makes us agree with every client however it escaped the raw path.
// - CanonicalQuery: each name and value decoded ('+' is a space, as URLSearchParams reads it)
//   and re-encoded the same way ('/' too), sorted by name then value, `name=` for empty values;
//   X-Amz-Signature is left out for presigned URLs.
// - CanonicalHeaders: `name:value\n` per signed header, the value trimmed with inner runs of
//   whitespace collapsed to one space; `host` falls back to the URL's host.
// - PayloadHash: the x-amz-content-sha256 value; UNSIGNED-PAYLOAD for presigned URLs without it.

import { Lru } from "../shared/bounded";
import { BODY_PIECE_BYTES, PieceReader } from "../shared/piece-reader";
import { S3Error } from "../s3-error";
import { decodeAwsChunked, type ChunkSigning } from "./aws-chunked";
import { EMPTY_SHA256, Sha256Stream, constantTimeEqual, hmac, hmacHex, importHmacKey, sha256Hex } from "./crypto";

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** The secret of an access key, or null when there is no such key (or it may not be used). */
export type SecretLookup = (accessKeyId: string) => string | null | Promise<string | null>;

/** A lookup that knows one key. */
export function onlyKey(creds: Credentials): SecretLookup {
  return (id) => (id === creds.accessKeyId ? creds.secretAccessKey : null);
}

export interface AuthOptions {
  region: string;
  /** ms since epoch */
  now: number;
  /** The services a credential scope may name (default S3 only; the STS endpoint takes "sts" too). */
  services?: readonly string[];
  /** The payload's SHA-256 when the caller read the body and the request has no x-amz-content-sha256 (STS clients send none). */
  payloadHash?: string;
}

export interface Authenticated {
  accessKeyId: string;
  /** The payload to store, already decoded from aws-chunked; verified as it streams: a signed
   *  SHA-256 payload or a chunk signature that does not match makes the stream error with an
   *  S3Error (XAmzContentSHA256Mismatch / SignatureDoesNotMatch) at the point it is detected, so
   *  the consumer never commits such a body. null when the request has no body. */
  body: ReadableStream<Uint8Array> | null;
  /** Length of the decoded payload when known (x-amz-decoded-content-length for aws-chunked, else content-length), or null. */
  contentLength: number | null;
  /** aws-chunked trailing headers (lower-case names, e.g. x-amz-checksum-crc32), resolved once the body has been read to its end; empty Headers for other modes. */
  trailers: Promise<Headers>;
}

const ALGORITHM = "AWS4-HMAC-SHA256";
const SERVICE = "s3";
const TERMINAL = "aws4_request";
export const MAX_SKEW_MS = 15 * 60 * 1000;
const MAX_PRESIGNED_EXPIRES = 604800;
/** The gateway's own request headers (x-shardgate-replica): always signed, never taken from SigV2. */
export const GATEWAY_HEADER_PREFIX = "x-shardgate-";

// ---------------------------------------------------------------------------------------------
// Errors

const accessDenied = (message: string) => new S3Error("AccessDenied", message);
const headerMalformed = (detail: string) => new S3Error("AuthorizationHeaderMalformed", `The authorization header is malformed; ${detail}`);
const queryError = (message: string) => new S3Error("AuthorizationQueryParametersError", message);
const credentialParamError = (detail: string) => queryError(`Error parsing the X-Amz-Credential parameter; ${detail}`);
export const signatureMismatch = () =>
  new S3Error("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.");
export const invalidAccessKey = () => new S3Error("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.");
export const timeTooSkewed = () => new S3Error("RequestTimeTooSkewed", "The difference between the request time and the current time is too large.");
export const unsupportedMechanism = () =>
  new S3Error("InvalidRequest", "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.");

// ---------------------------------------------------------------------------------------------
// Encoding

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const HEX_UPPER = "0123456789ABCDEF";

/** The bytes AWS's URI encoding keeps as they are. */
const UNRESERVED = new Set(Array.from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~", (c) => c.charCodeAt(0)));

function hexValue(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

/** Percent-decodes to bytes (UTF-8 for non-ASCII text); a '%' not followed by two hex digits stays. */
function percentDecode(s: string, plusIsSpace: boolean): Uint8Array {
  const src = encoder.encode(s);
  const out = new Uint8Array(src.length);
  let n = 0;
  for (let i = 0; i < src.length; i++) {
    const b = src[i]!;
    if (b === 0x25 && i + 2 < src.length) {
      const hi = hexValue(src[i + 1]!);
      const lo = hexValue(src[i + 2]!);
      if (hi >= 0 && lo >= 0) {
        out[n++] = (hi << 4) | lo;
        i += 2;
        continue;
      }
    }
    out[n++] = plusIsSpace && b === 0x2b ? 0x20 : b;
  }
  return out.subarray(0, n);
}

/** AWS's URI encoding of bytes: unreserved characters kept (and '/' if keepSlash), others %XX. */
export function awsEncode(bytes: Uint8Array, keepSlash: boolean): string {
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (UNRESERVED.has(b) || (keepSlash && b === 0x2f)) out += String.fromCharCode(b);
    else out += "%" + HEX_UPPER[b >>> 4]! + HEX_UPPER[b & 15]!;
  }
  return out;
}

/** A path of unreserved characters and slashes only: the same once decoded and encoded again. */
const UNRESERVED_PATH = /^[A-Za-z0-9\-._~/]*$/;

/** The canonical URI of a URL path (as `new URL().pathname` gives it). */
export function canonicalUri(pathname: string): string {
  // Nothing to decode or encode (the common case): the path is its own canonical form.
  const encoded = UNRESERVED_PATH.test(pathname) ? pathname : awsEncode(percentDecode(pathname, false), true);
  return encoded || "/";
}

interface QueryParam {
  /** decoded name (for lookups) */
  name: string;
  value: string;
  /** canonical (re-encoded) name and value */
  cName: string;
  cValue: string;
}

function parseQuery(search: string): QueryParam[] {
  const raw = search.startsWith("?") ? search.slice(1) : search;
  const params: QueryParam[] = [];
  for (const part of raw.split("&")) {
    if (part === "") continue;
    const eq = part.indexOf("=");
    const k = percentDecode(eq < 0 ? part : part.slice(0, eq), true);
    const v = percentDecode(eq < 0 ? "" : part.slice(eq + 1), true);
    if (k.length === 0) continue;
    params.push({ name: decoder.decode(k), value: decoder.decode(v), cName: awsEncode(k, false), cValue: awsEncode(v, false) });
  }
  return params;
}

/** The canonical query string, leaving out parameters named in `exclude`. */
function canonicalQuery(params: QueryParam[], exclude?: string): string {
  return params
    .filter((p) => p.name !== exclude)
    .map((p) => [p.cName, p.cValue] as const)
    .sort(([n1, v1], [n2, v2]) => (n1 < n2 ? -1 : n1 > n2 ? 1 : v1 < v2 ? -1 : v1 > v2 ? 1 : 0))
    .map(([n, v]) => `${n}=${v}`)
    .join("&");
}

export function canonicalHeaderValue(value: string): string {
  return value.trim().replace(/\s+/g, " ");
}

// ---------------------------------------------------------------------------------------------
// Signing key (cached per secret, date and region: saves four HMACs per request)

// Values, never promises: a promise one request created and another awaits makes workerd cancel
// the second request as hung. Two requests deriving the same key at once both do the work.
const signingKeyCache = new Lru<string, CryptoKey>({ entries: 64 });

async function signingKey(secret: string, date: string, region: string, service = SERVICE): Promise<CryptoKey> {
  const id = `${date}\n${region}\n${service}\n${secret}`;
  let key = signingKeyCache.get(id);
  if (key) return key;
  const kDate = await hmac(await importHmacKey("AWS4" + secret), date);
  const kRegion = await hmac(await importHmacKey(kDate), region);
  const kService = await hmac(await importHmacKey(kRegion), service);
  key = await importHmacKey(await hmac(await importHmacKey(kService), TERMINAL));
  signingKeyCache.set(id, key);
  return key;
}

/**
 * The SigV4 signature of a browser form's POST policy (its base64 text, as sent): the policy is
 * the string to sign, with the signing key of `scopeDate` and `region`.
 */
export async function postPolicySignatureV4(secret: string, scopeDate: string, region: string, policy: string): Promise<string> {
  return hmacHex(await signingKey(secret, scopeDate, region), policy);
}

// ---------------------------------------------------------------------------------------------
// Dates

const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;

/** ms since epoch of an ISO 8601 basic timestamp (YYYYMMDDTHHMMSSZ), or null. */
function parseAmzDate(s: string): number | null {
  const m = AMZ_DATE.exec(s);
  if (!m) return null;
  const [y, mo, d, h, mi, se] = m.slice(1).map(Number) as [number, number, number, number, number, number];
  const t = Date.UTC(y, mo - 1, d, h, mi, se);
  // Only a real moment spells itself back the same (no 30 February, no hour 24, no year 0050 read as 1950).
  return formatAmzDate(t) === s ? t : null;
}

function formatAmzDate(t: number): string {
  return new Date(t)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}

// ---------------------------------------------------------------------------------------------
// Payload modes

type PayloadMode = { kind: "unsigned" } | { kind: "sha256"; hash: string } | { kind: "chunked"; signed: boolean; trailer: boolean };

/** The x-amz-content-sha256 values that name a payload mode (null: SigV4a's, not implemented), in the order S3's error lists them. */
const PAYLOAD_MODES = new Map<string, PayloadMode | null>([
  ["UNSIGNED-PAYLOAD", { kind: "unsigned" }],
  ["STREAMING-UNSIGNED-PAYLOAD-TRAILER", { kind: "chunked", signed: false, trailer: true }],
  ["STREAMING-AWS4-HMAC-SHA256-PAYLOAD", { kind: "chunked", signed: true, trailer: false }],
  ["STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", { kind: "chunked", signed: true, trailer: true }],
  ["STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", null],
  ["STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER", null],
]);

function payloadMode(value: string): PayloadMode {
  const mode = PAYLOAD_MODES.get(value);
  if (mode === null) throw new S3Error("NotImplemented", `x-amz-content-sha256 ${value} (SigV4a) is not implemented.`);
  if (mode) return mode;
  if (/^[0-9a-fA-F]{64}$/.test(value)) return { kind: "sha256", hash: value.toLowerCase() };
  throw new S3Error("InvalidArgument", `x-amz-content-sha256 must be ${[...PAYLOAD_MODES.keys()].join(", ")} or a valid sha256 value.`);
}

// ---------------------------------------------------------------------------------------------
// Parsing the two mechanisms

interface SignedRequest {
  accessKeyId: string;
  scopeDate: string;
  region: string;
  service: string;
  terminal: string;
  signedHeaders: string[];
  signature: string;
  /** ISO 8601 basic timestamp used in the string to sign */
  amzDate: string;
  time: number;
  /** the header that gave the timestamp, which must be signed (header auth) */
  dateHeader: string | null;
  payloadHash: string;
  presigned: boolean;
}

function parseCredential(value: string, fail: (detail: string) => S3Error) {
  const parts = value.split("/");
  const [scopeDate, region, service, terminal] = parts.slice(-4) as [string, string, string, string];
  const accessKeyId = parts.slice(0, -4).join("/");
  if (parts.length < 5 || accessKeyId === "" || !/^\d{8}$/.test(scopeDate)) {
    throw fail('the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".');
  }
  return { accessKeyId, scopeDate, region, service, terminal };
}

function parseSignedHeaders(value: string, fail: (detail: string) => S3Error): string[] {
  const names = value.split(";").map((h) => h.trim().toLowerCase());
  if (value === "" || names.some((h) => h === "")) throw fail("the SignedHeaders component is empty or malformed.");
  if (!names.includes("host")) throw fail("the SignedHeaders component must include host.");
  return names;
}

function parseAuthorizationHeader(authorization: string, headers: Headers, readPayloadHash?: string): SignedRequest {
  const trimmed = authorization.trim();
  const space = trimmed.indexOf(" ");
  const scheme = space < 0 ? trimmed : trimmed.slice(0, space);
  if (scheme !== ALGORITHM) {
    if (scheme === "AWS" || scheme === "AWS4-ECDSA-P256-SHA256") throw unsupportedMechanism();
    throw new S3Error("InvalidArgument", "Unsupported Authorization Type");
  }
  const fields = new Map<string, string>();
  for (const component of trimmed.slice(space + 1).split(",")) {
    const c = component.trim();
    if (c === "") continue;
    const eq = c.indexOf("=");
    if (eq <= 0) throw headerMalformed(`the authorization component "${c}" is malformed.`);
    fields.set(c.slice(0, eq).trim(), c.slice(eq + 1).trim());
  }
  const credential = fields.get("Credential");
  const signedHeaders = fields.get("SignedHeaders");
  const signature = fields.get("Signature");
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    throw headerMalformed("the authorization header requires the components Credential, SignedHeaders and Signature.");
  }
  const cred = parseCredential(credential, headerMalformed);

  // The timestamp: x-amz-date, else Date.
  const xAmzDate = headers.get("x-amz-date")?.trim();
  const date = Date.parse(headers.get("date") ?? "");
  const time = xAmzDate !== undefined ? parseAmzDate(xAmzDate) : Number.isFinite(date) ? date : null;
  if (time === null) throw accessDenied("AWS authentication requires a valid Date or x-amz-date header");

  const payloadHash = headers.get("x-amz-content-sha256") ?? readPayloadHash ?? null;
  if (payloadHash === null) throw new S3Error("InvalidRequest", "Missing required header for this request: x-amz-content-sha256");
  return {
    ...cred,
    signedHeaders: parseSignedHeaders(signedHeaders, headerMalformed),
    signature: signature.toLowerCase(),
    amzDate: xAmzDate ?? formatAmzDate(time),
    time,
    dateHeader: xAmzDate === undefined ? "date" : "x-amz-date",
    payloadHash: payloadHash.trim(),
    presigned: false,
  };
}

function parsePresigned(query: Map<string, string>, headers: Headers, now: number): SignedRequest {
  const params = ["Algorithm", "Credential", "Date", "Expires", "SignedHeaders", "Signature"].map((name) => query.get(`X-Amz-${name}`));
  if (params.includes(undefined)) {
    throw queryError(
      "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, " +
        "X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.",
    );
  }
  const [algorithm, credential, date, expires, signedHeaders, signature] = params as string[];
  if (algorithm !== ALGORITHM) throw queryError('X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
  const cred = parseCredential(credential, credentialParamError);
  const time = parseAmzDate(date);
  if (time === null) throw queryError(`X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd'T'HHmmss'Z'"`);
  if (!/^\d{1,7}$/.test(expires)) throw queryError("X-Amz-Expires should be a number");
  const seconds = Number(expires);
  // S3 treats a URL valid for 0 seconds as expired, not as malformed.
  if (seconds < 1) throw accessDenied("Request has expired");
  if (seconds > MAX_PRESIGNED_EXPIRES) throw queryError("X-Amz-Expires must be less than a week (in seconds) that is 604800");
  const sh = parseSignedHeaders(signedHeaders, (d) => queryError(`Error parsing the X-Amz-SignedHeaders parameter; ${d}`));
  // Validity window. (A presigned URL is not subject to the clock skew check.)
  if (time - now > MAX_SKEW_MS) throw accessDenied("Request is not valid yet");
  if (now > time + seconds * 1000) throw accessDenied("Request has expired");
  return {
    ...cred,
    signedHeaders: sh,
    signature: signature.toLowerCase(),
    amzDate: date,
    time,
    dateHeader: null,
    payloadHash: headers.get("x-amz-content-sha256")?.trim() ?? "UNSIGNED-PAYLOAD",
    presigned: true,
  };
}

// ---------------------------------------------------------------------------------------------
// Body wrappers

/** Passes `source` through while hashing it; errors with XAmzContentSHA256Mismatch at the end if the hash differs. */
function verifySha256(source: ReadableStream<Uint8Array>, expected: string): ReadableStream<Uint8Array> {
  // Large pieces (shared/piece-reader.ts), each handed on: not reused.
  const reader = new PieceReader(source, { pieceBytes: BODY_PIECE_BYTES, reuse: false });
  const hash = new Sha256Stream();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const value = await reader.read();
        if (value === null) {
          const actual = await hash.hex();
          if (!constantTimeEqual(expected, actual)) throw contentShaMismatch();
          controller.close();
          return;
        }
        await hash.update(value);
        controller.enqueue(value);
      } catch (err) {
        hash.abort();
        void reader.cancel(err);
        throw err;
      }
    },
    cancel(reason) {
      hash.abort();
      return reader.cancel(reason);
    },
  });
}

const contentShaMismatch = () => new S3Error("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.");

function parseLength(value: string | null, header: string): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (!/^\d{1,15}$/.test(v)) throw new S3Error("InvalidArgument", `${header} must be a non-negative integer.`);
  return Number(v);
}

const NO_TRAILERS: () => Promise<Headers> = () => Promise.resolve(new Headers());

/** Whether the request carries credentials of any kind (else it is anonymous). */
export function hasCredentials(request: Request, url: URL): boolean {
  if (request.headers.has("authorization")) return true;
  const q = url.searchParams;
  return q.has("X-Amz-Algorithm") || q.has("X-Amz-Credential") || q.has("X-Amz-Signature") || q.has("AWSAccessKeyId") || q.has("Signature");
}

/** The payload as it is, of an anonymous request (only a bucket policy can let it write) or one whose signature does not cover it (SigV2). */
export function anonymousRequest(request: Request): Authenticated {
  const contentLength = parseLength(request.headers.get("content-length"), "Content-Length");
  const body = request.body === null || contentLength === 0 ? null : request.body;
  return { accessKeyId: "", body, contentLength, trailers: NO_TRAILERS() };
}

/**
 * A signed header's value as the client sent it. The runtime replaces Accept-Encoding with its
 * own ("br, gzip", on Cloudflare's edge as under workerd) and keeps the client's value in
 * `request.cf.clientAcceptEncoding`; clients built on the Go SDK (rclone, mc) sign it.
 */
function signedHeaderValue(request: Request, url: URL, name: string): string {
  if (name === "host") return request.headers.get("host") ?? url.host;
  if (name === "accept-encoding") {
    const original = (request.cf as { clientAcceptEncoding?: unknown } | undefined)?.clientAcceptEncoding;
    if (typeof original === "string") return original;
  }
  return request.headers.get(name) ?? "";
}

// ---------------------------------------------------------------------------------------------
// Authentication, step by step (authenticate, at the end, runs them in this order)

/** What the request claims, from the one mechanism it may use: a presigned query or the Authorization header. */
function readSignedRequest(headers: Headers, query: Map<string, string>, opts: AuthOptions): SignedRequest {
  const authorization = headers.get("authorization");
  const presigned = query.has("X-Amz-Algorithm") || query.has("X-Amz-Credential") || query.has("X-Amz-Signature");
  if (presigned && authorization !== null) {
    throw new S3Error(
      "InvalidArgument",
      "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified",
    );
  }
  if (presigned) return parsePresigned(query, headers, opts.now);
  if (authorization === null) {
    // Signature Version 2 query authentication is not supported.
    if (query.has("AWSAccessKeyId") && query.has("Signature")) throw unsupportedMechanism();
    throw accessDenied("Access Denied");
  }
  return parseAuthorizationHeader(authorization, headers, opts.payloadHash);
}

/** The credential scope must name this endpoint's region, a service it serves, aws4_request, and the request's own date. */
function checkScope(req: SignedRequest, opts: AuthOptions): void {
  const fail = req.presigned ? credentialParamError : headerMalformed;
  if (req.region !== opts.region) throw fail(`the region '${req.region}' is wrong; expecting '${opts.region}'`);
  const services = opts.services ?? [SERVICE];
  if (!services.includes(req.service)) throw fail(`incorrect service '${req.service}'. This endpoint belongs to '${services.join("' or '")}'.`);
  if (req.terminal !== TERMINAL) throw fail(`incorrect terminal '${req.terminal}'. This endpoint uses '${TERMINAL}'.`);
  if (req.scopeDate !== req.amzDate.slice(0, 8)) {
    throw fail(`Invalid credential date "${req.scopeDate}". This date is not the same as X-Amz-Date: "${req.amzDate.slice(0, 8)}".`);
  }
}

/**
 * Every x-amz-* header (but x-amz-content-sha256, as S3 allows), every x-shardgate-* header (the
 * gateway's own, such as x-shardgate-replica) and the Date the timestamp came from must be signed:
 * otherwise anyone holding the request (a presigned URL) could add or change them.
 */
function checkHeadersSigned(req: SignedRequest, headers: Headers): void {
  const signed = new Set(req.signedHeaders);
  const mustSign = (name: string) => (name.startsWith("x-amz-") && name !== "x-amz-content-sha256") || name.startsWith(GATEWAY_HEADER_PREFIX);
  const unsigned = [...headers.keys()].filter((name) => mustSign(name) && !signed.has(name));
  if (req.dateHeader === "date" && !signed.has("date")) unsigned.push("date");
  if (unsigned.length > 0) throw accessDenied(`There were headers present in the request which were not signed (HeadersNotSigned: ${unsigned.join(", ")})`);
}

/** The canonical request (its rules are at the top of this file). */
function canonicalRequest(request: Request, url: URL, params: QueryParam[], req: SignedRequest): string {
  const canonicalHeaders = req.signedHeaders.map((name) => `${name}:${canonicalHeaderValue(signedHeaderValue(request, url, name))}\n`).join("");
  return [
    request.method.toUpperCase(),
    canonicalUri(url.pathname),
    canonicalQuery(params, req.presigned ? "X-Amz-Signature" : undefined),
    canonicalHeaders,
    req.signedHeaders.join(";"),
    req.payloadHash,
  ].join("\n");
}

/**
 * Checks the request's signature against the one `secret` gives, in constant time. Returns what
 * an aws-chunked payload's chunk signatures chain from: the signing key, scope and this signature.
 */
async function verifySignature(request: Request, url: URL, params: QueryParam[], req: SignedRequest, secret: string): Promise<ChunkSigning> {
  const canonical = canonicalRequest(request, url, params, req);
  const scope = `${req.scopeDate}/${req.region}/${req.service}/${TERMINAL}`;
  const stringToSign = [ALGORITHM, req.amzDate, scope, await sha256Hex(canonical)].join("\n");
  const key = await signingKey(secret, req.scopeDate, req.region, req.service);
  const expected = await hmacHex(key, stringToSign);
  if (!constantTimeEqual(expected, req.signature)) throw signatureMismatch();
  return { signingKey: key, amzDate: req.amzDate, scope, seedSignature: expected };
}

/** The payload to store, as `mode` says it was sent, verified as it streams. */
function payloadOf(request: Request, accessKeyId: string, mode: PayloadMode, seed: ChunkSigning): Authenticated {
  const source = request.body;
  const contentLength = parseLength(request.headers.get("content-length"), "Content-Length");
  const noBody = source === null || contentLength === 0;
  switch (mode.kind) {
    case "unsigned":
      return { accessKeyId, body: noBody ? null : source, contentLength, trailers: NO_TRAILERS() };
    case "sha256":
      if (noBody && !constantTimeEqual(mode.hash, EMPTY_SHA256)) throw contentShaMismatch();
      return { accessKeyId, body: noBody ? null : verifySha256(source!, mode.hash), contentLength, trailers: NO_TRAILERS() };
    case "chunked": {
      if (noBody) throw new S3Error("IncompleteBody", "The request body terminated unexpectedly before the end of the aws-chunked payload.");
      // Decoded (its chunk signatures checked, when signed) as it streams.
      const decodedLength = parseLength(request.headers.get("x-amz-decoded-content-length"), "x-amz-decoded-content-length");
      // The trailer names x-amz-trailer announces (lower-case), or null when it was not sent.
      const announced = request.headers.get("x-amz-trailer");
      const declaredTrailers = announced === null ? null : announced.split(",").flatMap((t) => (t.trim() === "" ? [] : [t.trim().toLowerCase()]));
      const decoded = decodeAwsChunked(source!, { signing: mode.signed ? seed : null, trailer: mode.trailer, declaredTrailers, decodedLength });
      return { accessKeyId, body: decoded.body, contentLength: decodedLength, trailers: decoded.trailers };
    }
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * Authenticates an S3 request signed with AWS Signature Version 4 (Authorization header or
 * presigned URL) with the secret `secretOf` finds for its key, and returns the payload to store, verified as it streams.
 * Throws an S3Error: 403 AccessDenied (no credentials, unsigned x-amz-* headers, expired or
 * not-yet-valid presigned URL, no valid date), 403 InvalidAccessKeyId, 403 SignatureDoesNotMatch,
 * 403 RequestTimeTooSkewed, 400 AuthorizationHeaderMalformed / AuthorizationQueryParametersError,
 * 400 InvalidArgument / InvalidRequest (unsupported mechanism or payload mode, missing
 * x-amz-content-sha256), 400 XAmzContentSHA256Mismatch (empty body), 501 NotImplemented (SigV4a).
 */
export async function authenticate(request: Request, secretOf: SecretLookup, opts: AuthOptions): Promise<Authenticated> {
  const url = new URL(request.url);
  const params = parseQuery(url.search);
  // The first value of each parameter, by its decoded name.
  const query = new Map<string, string>();
  for (const p of params) if (!query.has(p.name)) query.set(p.name, p.value);
  const req = readSignedRequest(request.headers, query, opts);
  checkScope(req, opts);
  // A header-signed request must be within 15 minutes of now (a presigned URL's window was checked as it was parsed).
  if (!req.presigned && Math.abs(opts.now - req.time) > MAX_SKEW_MS) throw timeTooSkewed();
  checkHeadersSigned(req, request.headers);
  const mode = payloadMode(req.payloadHash);

  // Only a request that could be valid costs a key lookup (a Durable Object call when the key is
  // not cached): everything above is checked first, the clock included (docs/security.md).
  const secret = await secretOf(req.accessKeyId);
  if (secret === null) throw invalidAccessKey();

  const seed = await verifySignature(request, url, params, req, secret);
  return payloadOf(request, req.accessKeyId, mode, seed);
}
