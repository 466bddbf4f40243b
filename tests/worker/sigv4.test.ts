// SigV4 verification (worker/src/auth/sigv4.ts) and the aws-chunked decoder, inside workerd.
// Requests are signed by an independent implementation (aws4fetch's AwsV4Signer), and the
// streaming mode is checked against AWS's documented example.
import { AwsV4Signer } from "aws4fetch";
import { describe, expect, it } from "vitest";
import { decodeAwsChunked } from "../../worker/src/auth/aws-chunked";
import { constantTimeEqual } from "../../worker/src/auth/crypto";
import { authenticate, canonicalUri, onlyKey, type Authenticated, type Credentials } from "../../worker/src/auth/sigv4";
import { S3Error } from "../../worker/src/s3-error";

const CREDS: Credentials = { accessKeyId: "AKIDSHARDGATETEST", secretAccessKey: "s3cr3t/with+special=chars" };
const REGION = "us-east-1";
const DATETIME = "20260301T101500Z";
const NOW = Date.UTC(2026, 2, 1, 10, 15, 0);
const OPTS = { region: REGION, now: NOW };
const HOST = "http://gateway.test";

const te = new TextEncoder();
const td = new TextDecoder();

interface SignInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array | null;
  signQuery?: boolean;
  datetime?: string;
  region?: string;
  creds?: Credentials;
}

/** Signs with aws4fetch (service s3) and returns the Request as the worker would see it. */
async function signed(url: string, init: SignInit = {}): Promise<Request> {
  const creds = init.creds ?? CREDS;
  const signer = new AwsV4Signer({
    url,
    method: init.method ?? "GET",
    headers: init.headers,
    body: init.body ?? undefined,
    accessKeyId: creds.accessKeyId,
    secretAccessKey: creds.secretAccessKey,
    service: "s3",
    region: init.region ?? REGION,
    datetime: init.datetime ?? DATETIME,
    signQuery: init.signQuery,
  });
  const s = await signer.sign();
  return new Request(s.url.toString(), { method: s.method, headers: s.headers, body: init.body ?? null });
}

/** A copy of `req` with changes (headers merged, url/method/body replaced). */
function alter(req: Request, change: { url?: string; method?: string; headers?: Record<string, string | null>; body?: BodyInit | null }) {
  const headers = new Headers(req.headers);
  for (const [k, v] of Object.entries(change.headers ?? {})) {
    if (v === null) headers.delete(k);
    else headers.set(k, v);
  }
  return new Request(change.url ?? req.url, {
    method: change.method ?? req.method,
    headers,
    // (clone: the same request can be altered several times)
    body: "body" in change ? change.body : req.body ? req.clone().body : null,
  });
}

async function readAll(stream: ReadableStream<Uint8Array> | null): Promise<Uint8Array> {
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const parts: Uint8Array[] = [];
  let n = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    n += value.byteLength;
  }
  const out = new Uint8Array(n);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.byteLength;
  }
  return out;
}

/** The byte pieces a stream yields (to check that the decoder does not re-chunk). */
async function pieces(stream: ReadableStream<Uint8Array>): Promise<number[]> {
  const reader = stream.getReader();
  const sizes: number[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return sizes;
    sizes.push(value.byteLength);
  }
}

/** A stream of `bytes` in pieces of the given sizes (cycled). */
function piecewise(bytes: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
  let pos = 0;
  let i = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pos >= bytes.length) {
        controller.close();
        return;
      }
      const n = sizes[i++ % sizes.length]!;
      controller.enqueue(bytes.slice(pos, pos + n));
      pos += n;
    },
  });
}

/** Byte equality (vitest's toEqual is slow on large typed arrays). */
function expectBytes(actual: Uint8Array, expected: Uint8Array) {
  expect(actual.length).toBe(expected.length);
  let firstDiff = -1;
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i]) {
      firstDiff = i;
      break;
    }
  }
  expect(firstDiff, "first differing byte").toBe(-1);
}

async function s3Error(p: Promise<unknown>): Promise<S3Error> {
  const result = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(result, "expected an S3Error").toBeInstanceOf(S3Error);
  return result as S3Error;
}

async function expectError(p: Promise<unknown>, status: number, code: string, message?: RegExp | string) {
  const err = await s3Error(p);
  expect({ status: err.status, code: err.code }).toEqual({ status, code });
  if (message !== undefined) expect(err.message).toMatch(message);
  return err;
}

function concat(...parts: (string | Uint8Array)[]): Uint8Array {
  const bytes = parts.map((p) => (typeof p === "string" ? te.encode(p) : p));
  const out = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let off = 0;
  for (const b of bytes) {
    out.set(b, off);
    off += b.length;
  }
  return out;
}

function hex(buf: ArrayBuffer): string {
  return [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function sha256(data: string | Uint8Array): Promise<string> {
  return hex(await crypto.subtle.digest("SHA-256", typeof data === "string" ? te.encode(data) : data));
}

async function hmacRaw(key: ArrayBuffer | Uint8Array, data: string): Promise<ArrayBuffer> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return crypto.subtle.sign("HMAC", k, te.encode(data));
}

/** Test-side SigV4 signing key (independent of the implementation). */
async function testSigningKey(secret: string, date: string, region: string): Promise<ArrayBuffer> {
  let k = await hmacRaw(te.encode("AWS4" + secret), date);
  k = await hmacRaw(k, region);
  k = await hmacRaw(k, "s3");
  return hmacRaw(k, "aws4_request");
}

function crc32(data: Uint8Array): number {
  let c = ~0;
  for (const b of data) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function crc32Base64(data: Uint8Array): string {
  const v = crc32(data);
  return btoa(String.fromCharCode(v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255));
}

function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i += 65536) crypto.getRandomValues(out.subarray(i, Math.min(n, i + 65536)));
  return out;
}

// -------------------------------------------------------------------------------------------------

describe("authenticate: Authorization header", () => {
  it("accepts a signed GET (UNSIGNED-PAYLOAD) and reports the key, no body, no trailers", async () => {
    const req = await signed(`${HOST}/bucket/key.txt`);
    expect(req.headers.get("authorization")).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDSHARDGATETEST\//);
    const auth = await authenticate(req, onlyKey(CREDS), OPTS);
    expect(auth.accessKeyId).toBe(CREDS.accessKeyId);
    expect(auth.body).toBeNull();
    expect([...(await auth.trailers)]).toEqual([]);
  });

  it("passes an UNSIGNED-PAYLOAD body through with its content-length", async () => {
    const body = randomBytes(100_000);
    const req = await signed(`${HOST}/bucket/big.bin`, { method: "PUT", body, headers: { "content-length": String(body.length) } });
    const auth = await authenticate(req, onlyKey(CREDS), OPTS);
    expect(auth.contentLength).toBe(body.length);
    expectBytes(await readAll(auth.body), body);
  });

  it("verifies a signed payload hash as the body streams", async () => {
    const body = randomBytes(200_000);
    const req = await signed(`${HOST}/bucket/signed.bin`, {
      method: "PUT",
      body,
      headers: { "x-amz-content-sha256": await sha256(body) },
    });
    const auth = await authenticate(req, onlyKey(CREDS), OPTS);
    expectBytes(await readAll(auth.body), body);
  });

  it("a body that does not match the signed payload hash makes the stream error (XAmzContentSHA256Mismatch)", async () => {
    const body = te.encode("the real body");
    const req = await signed(`${HOST}/bucket/signed.bin`, {
      method: "PUT",
      body,
      headers: { "x-amz-content-sha256": await sha256(body) },
    });
    const tampered = alter(req, { body: "the fake body" });
    const auth = await authenticate(tampered, onlyKey(CREDS), OPTS);
    await expectError(readAll(auth.body), 400, "XAmzContentSHA256Mismatch");
  });

  it("checks the signed hash of an empty body at once", async () => {
    const ok = await signed(`${HOST}/bucket/empty`, { method: "PUT", headers: { "x-amz-content-sha256": await sha256("") } });
    expect((await authenticate(ok, onlyKey(CREDS), OPTS)).body).toBeNull();
    const bad = await signed(`${HOST}/bucket/empty`, { method: "PUT", headers: { "x-amz-content-sha256": await sha256("x") } });
    await expectError(authenticate(bad, onlyKey(CREDS), OPTS), 400, "XAmzContentSHA256Mismatch");
  });

  it("accepts keys with spaces, unicode and special characters", async () => {
    const keys = [
      "dir with spaces/file name.txt",
      "ünïcödé/日本語/😀.bin",
      "special !'()*~@$&=,;:[]#%?.txt",
      "a+plus%2Bencoded",
      "trailing/slash/",
      "double//slash",
      "dots.and-dashes_and~tilde",
    ];
    for (const key of keys) {
      // Encode each segment, as SDKs do (they differ on the details; decode-then-encode copes).
      const path = key.split("/").map(encodeURIComponent).join("/");
      const req = await signed(`${HOST}/bucket/${path}`, { method: "PUT", body: "x" });
      const auth = await authenticate(req, onlyKey(CREDS), OPTS);
      expect(auth.accessKeyId, key).toBe(CREDS.accessKeyId);
    }
    // A raw (unencoded) path as a client might send it: the URL parser encodes it on the way.
    const raw = await signed(`${HOST}/bucket/raw path/ü/it's (1).txt`);
    await authenticate(raw, onlyKey(CREDS), OPTS);
  });

  it("accepts query strings with special characters and empty values", async () => {
    const q = new URLSearchParams({
      prefix: "dir with space/ü",
      delimiter: "/",
      marker: "a&b=c+d%e",
      "list-type": "2",
      "max-keys": "10",
      "encoding-type": "url",
      "weird!'()*": "~._-",
    });
    const req = await signed(`${HOST}/bucket?${q.toString()}&uploads`);
    await authenticate(req, onlyKey(CREDS), OPTS);
    // Equivalent escaping of the same parameters verifies too (decode-then-encode).
    const reencoded = alter(req, { url: req.url.replace("prefix=dir+with+space", "prefix=dir%20with%20space") });
    expect(reencoded.url).not.toBe(req.url);
    await authenticate(reencoded, onlyKey(CREDS), OPTS);
  });

  it("rejects a tampered method, path, query or signed header (SignatureDoesNotMatch)", async () => {
    const req = await signed(`${HOST}/bucket/key.txt?versionId=1`, {
      method: "PUT",
      body: "data",
      headers: { "x-amz-meta-color": "blue", "content-type": "text/plain" },
    });
    await authenticate(alter(req, {}), onlyKey(CREDS), OPTS);
    const cases = [
      alter(req, { method: "POST" }),
      alter(req, { url: `${HOST}/bucket/key.txT?versionId=1` }),
      alter(req, { url: `${HOST}/other/key.txt?versionId=1` }),
      alter(req, { url: `${HOST}/bucket/key.txt?versionId=2` }),
      alter(req, { url: `${HOST}/bucket/key.txt?versionId=1&acl` }),
      alter(req, { url: `${HOST}/bucket/key.txt` }),
      alter(req, { headers: { "x-amz-meta-color": "red" } }),
      alter(req, { headers: { host: "evil.test" } }),
      alter(req, { headers: { "x-amz-content-sha256": await sha256("data") } }),
    ];
    for (const bad of cases) {
      await expectError(authenticate(bad, onlyKey(CREDS), OPTS), 403, "SignatureDoesNotMatch");
    }
  });

  it("tolerates whitespace differences in header values (trimmed, runs collapsed)", async () => {
    const req = await signed(`${HOST}/bucket/k`, { headers: { "x-amz-meta-note": "a  b   c" } });
    await authenticate(alter(req, { headers: { "x-amz-meta-note": "  a b c " } }), onlyKey(CREDS), OPTS);
  });

  it("verifies a signed Accept-Encoding against the client's value, which the runtime keeps in cf", async () => {
    // Go SDK clients (rclone, mc) sign accept-encoding: identity; workerd and Cloudflare's edge
    // hand the Worker "br, gzip" instead and the original in request.cf.clientAcceptEncoding.
    const req = await signed(`${HOST}/bucket/k`, { headers: { "accept-encoding": "identity" } });
    const asSeen = alter(req, { headers: { "accept-encoding": "br, gzip" } });
    const withCf = new Request(asSeen, { cf: { clientAcceptEncoding: "identity" } });
    await authenticate(withCf, onlyKey(CREDS), OPTS);
    const lied = new Request(asSeen, { cf: { clientAcceptEncoding: "gzip" } });
    await expect(authenticate(lied, onlyKey(CREDS), OPTS)).rejects.toMatchObject({ code: "SignatureDoesNotMatch" });
  });

  it("rejects a wrong secret and an unknown access key", async () => {
    const wrongSecret = await signed(`${HOST}/bucket/k`, { creds: { ...CREDS, secretAccessKey: "not-the-secret" } });
    await expectError(authenticate(wrongSecret, onlyKey(CREDS), OPTS), 403, "SignatureDoesNotMatch");
    const unknownKey = await signed(`${HOST}/bucket/k`, { creds: { ...CREDS, accessKeyId: "AKIDSOMEONEELSE" } });
    await expectError(authenticate(unknownKey, onlyKey(CREDS), OPTS), 403, "InvalidAccessKeyId");
    // The signing key cache is per secret: the right secret still verifies after a wrong one.
    await authenticate(await signed(`${HOST}/bucket/k`), onlyKey(CREDS), OPTS);
  });

  it("enforces the 15-minute clock skew", async () => {
    const req = await signed(`${HOST}/bucket/k`);
    const min = 60_000;
    await authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW + 14 * min });
    await authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW - 14 * min });
    await expectError(authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW + 16 * min }), 403, "RequestTimeTooSkewed");
    await expectError(authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW - 16 * min }), 403, "RequestTimeTooSkewed");
  });

  it("rejects a request without any credentials (AccessDenied)", async () => {
    await expectError(authenticate(new Request(`${HOST}/bucket/k`), onlyKey(CREDS), OPTS), 403, "AccessDenied");
    await expectError(authenticate(new Request(`${HOST}/`, { method: "PUT", body: "x" }), onlyKey(CREDS), OPTS), 403, "AccessDenied");
  });

  it("rejects a wrong region, service or scope date (AuthorizationHeaderMalformed)", async () => {
    const eu = await signed(`${HOST}/bucket/k`, { region: "eu-west-1" });
    await expectError(authenticate(eu, onlyKey(CREDS), OPTS), 400, "AuthorizationHeaderMalformed", "the region 'eu-west-1' is wrong; expecting 'us-east-1'");
    const auto = await signed(`${HOST}/bucket/k`, { region: "auto" });
    await expectError(authenticate(auto, onlyKey(CREDS), OPTS), 400, "AuthorizationHeaderMalformed");

    const req = await signed(`${HOST}/bucket/k`);
    const authz = req.headers.get("authorization")!;
    const service = alter(req, { headers: { authorization: authz.replace("/s3/", "/ec2/") } });
    await expectError(authenticate(service, onlyKey(CREDS), OPTS), 400, "AuthorizationHeaderMalformed", "incorrect service");
    const date = alter(req, { headers: { authorization: authz.replace("/20260301/", "/20260302/") } });
    await expectError(authenticate(date, onlyKey(CREDS), OPTS), 400, "AuthorizationHeaderMalformed", "Invalid credential date");
    const credential = alter(req, { headers: { authorization: authz.replace(/Credential=[^,]+/, "Credential=AKID/20260301") } });
    await expectError(authenticate(credential, onlyKey(CREDS), OPTS), 400, "AuthorizationHeaderMalformed", "Credential is mal-formed");
    const noSignature = alter(req, { headers: { authorization: authz.replace(/, Signature=.*/, "") } });
    await expectError(authenticate(noSignature, onlyKey(CREDS), OPTS), 400, "AuthorizationHeaderMalformed");
  });

  it("requires host among the signed headers", async () => {
    const req = await signed(`${HOST}/bucket/k`);
    const authz = req.headers.get("authorization")!;
    expect(authz).toContain("SignedHeaders=host;");
    const noHost = alter(req, { headers: { authorization: authz.replace("SignedHeaders=host;", "SignedHeaders=") } });
    await expectError(authenticate(noHost, onlyKey(CREDS), OPTS), 400, "AuthorizationHeaderMalformed", "host");
  });

  it("accepts the header in AWS's compact form (no spaces after commas)", async () => {
    const req = await signed(`${HOST}/bucket/k`);
    const compact = req.headers.get("authorization")!.replace(/, /g, ",");
    await authenticate(alter(req, { headers: { authorization: compact } }), onlyKey(CREDS), OPTS);
  });

  it("rejects x-amz-* headers that were not signed (AccessDenied)", async () => {
    const req = await signed(`${HOST}/bucket/k`, { method: "PUT", body: "x" });
    const err = await expectError(
      authenticate(alter(req, { headers: { "x-amz-copy-source": "/bucket/secret" } }), onlyKey(CREDS), OPTS),
      403,
      "AccessDenied",
      /not signed.*x-amz-copy-source/,
    );
    expect(err.message).toContain("There were headers present in the request which were not signed");
  });

  it("requires x-amz-content-sha256 and a valid date", async () => {
    const req = await signed(`${HOST}/bucket/k`);
    await expectError(
      authenticate(alter(req, { headers: { "x-amz-content-sha256": null } }), onlyKey(CREDS), OPTS),
      400,
      "InvalidRequest",
      "x-amz-content-sha256",
    );
    await expectError(authenticate(alter(req, { headers: { "x-amz-date": null } }), onlyKey(CREDS), OPTS), 403, "AccessDenied", /Date/);
    await expectError(authenticate(alter(req, { headers: { "x-amz-date": "2026-03-01T10:15:00Z" } }), onlyKey(CREDS), OPTS), 403, "AccessDenied", /Date/);
  });

  it("answers unknown payload modes with InvalidArgument and SigV4a with NotImplemented", async () => {
    const bogus = await signed(`${HOST}/bucket/k`, { method: "PUT", body: "x", headers: { "x-amz-content-sha256": "GIBBERISH" } });
    await expectError(authenticate(bogus, onlyKey(CREDS), OPTS), 400, "InvalidArgument", /x-amz-content-sha256 must be UNSIGNED-PAYLOAD/);
    const ecdsa = await signed(`${HOST}/bucket/k`, {
      method: "PUT",
      body: "x",
      headers: { "x-amz-content-sha256": "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD" },
    });
    await expectError(authenticate(ecdsa, onlyKey(CREDS), OPTS), 501, "NotImplemented");
  });

  it("takes the timestamp from Date when there is no x-amz-date (and Date must be signed)", async () => {
    // Signed by hand: aws4fetch always adds x-amz-date.
    const date = new Date(NOW).toUTCString(); // "Sun, 01 Mar 2026 10:15:00 GMT"
    const sign = async (signedHeaders: string[]) => {
      const values: Record<string, string> = { date, host: "gateway.test", "x-amz-content-sha256": "UNSIGNED-PAYLOAD" };
      const canonical = [
        "GET",
        "/bucket/dated%20key",
        "",
        signedHeaders.map((h) => `${h}:${values[h]}\n`).join(""),
        signedHeaders.join(";"),
        "UNSIGNED-PAYLOAD",
      ].join("\n");
      const scope = `${DATETIME.slice(0, 8)}/${REGION}/s3/aws4_request`;
      const sts = ["AWS4-HMAC-SHA256", DATETIME, scope, await sha256(canonical)].join("\n");
      const key = await testSigningKey(CREDS.secretAccessKey, DATETIME.slice(0, 8), REGION);
      const signature = hex(await hmacRaw(key, sts));
      return new Request(`${HOST}/bucket/dated key`, {
        headers: {
          date,
          "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
          authorization: `AWS4-HMAC-SHA256 Credential=${CREDS.accessKeyId}/${scope}, SignedHeaders=${signedHeaders.join(";")}, Signature=${signature}`,
        },
      });
    };
    const req = await sign(["date", "host", "x-amz-content-sha256"]);
    expect((await authenticate(req, onlyKey(CREDS), OPTS)).accessKeyId).toBe(CREDS.accessKeyId);
    await expectError(authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW + 20 * 60_000 }), 403, "RequestTimeTooSkewed");
    await expectError(authenticate(await sign(["host", "x-amz-content-sha256"]), onlyKey(CREDS), OPTS), 403, "AccessDenied", /date/);
  });

  it("rejects other authorization schemes", async () => {
    const v2 = new Request(`${HOST}/bucket/k`, { headers: { authorization: "AWS AKIDSHARDGATETEST:c2lnbmF0dXJl" } });
    await expectError(authenticate(v2, onlyKey(CREDS), OPTS), 400, "InvalidRequest", /AWS4-HMAC-SHA256/);
    const bearer = new Request(`${HOST}/bucket/k`, { headers: { authorization: "Bearer abc" } });
    await expectError(authenticate(bearer, onlyKey(CREDS), OPTS), 400, "InvalidArgument");
    const v2query = new Request(`${HOST}/bucket/k?AWSAccessKeyId=AKID&Expires=1&Signature=abc`);
    await expectError(authenticate(v2query, onlyKey(CREDS), OPTS), 400, "InvalidRequest");
  });
});

describe("authenticate: presigned URLs", () => {
  it("accepts a presigned GET within its validity and rejects it once expired", async () => {
    const req = await signed(`${HOST}/bucket/dir/ü file.txt?X-Amz-Expires=3600`, { signQuery: true });
    const url = new URL(req.url);
    expect(url.searchParams.get("X-Amz-Signature")).toMatch(/^[0-9a-f]{64}$/);
    expect(req.headers.get("authorization")).toBeNull();
    const auth = await authenticate(req, onlyKey(CREDS), OPTS);
    expect(auth.accessKeyId).toBe(CREDS.accessKeyId);
    // Not subject to the 15-minute skew: valid for the whole hour.
    await authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW + 3600_000 });
    await expectError(authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW + 3601_000 }), 403, "AccessDenied", "Request has expired");
    await expectError(authenticate(req, onlyKey(CREDS), { region: REGION, now: NOW - 3600_000 }), 403, "AccessDenied", "not valid yet");
  });

  it("accepts a presigned PUT with a body (UNSIGNED-PAYLOAD) and query parameters", async () => {
    const body = randomBytes(50_000);
    const req = await signed(`${HOST}/bucket/upload.bin?partNumber=3&uploadId=a%2Fb%3Dc&X-Amz-Expires=600`, {
      method: "PUT",
      body,
      signQuery: true,
    });
    const auth = await authenticate(req, onlyKey(CREDS), OPTS);
    expectBytes(await readAll(auth.body), body);
  });

  it("rejects tampering with the path, query, method or signature", async () => {
    const req = await signed(`${HOST}/bucket/k.txt?partNumber=1`, { signQuery: true });
    const u = new URL(req.url);
    const withParam = (name: string, value: string) => {
      const x = new URL(u);
      x.searchParams.set(name, value);
      return x.toString();
    };
    const cases = [
      alter(req, { url: req.url.replace("/bucket/k.txt", "/bucket/k.txu") }),
      alter(req, { url: withParam("partNumber", "2") }),
      alter(req, { url: withParam("X-Amz-Expires", "86401") }),
      alter(req, { url: withParam("X-Amz-Signature", "0".repeat(64)) }),
      alter(req, { url: withParam("extra", "1") }),
      alter(req, { method: "DELETE" }),
    ];
    for (const bad of cases) await expectError(authenticate(bad, onlyKey(CREDS), OPTS), 403, "SignatureDoesNotMatch");
  });

  it("checks X-Amz-Expires (1..604800), the algorithm and the parameters", async () => {
    const week = await signed(`${HOST}/bucket/k?X-Amz-Expires=604800`, { signQuery: true });
    await authenticate(week, onlyKey(CREDS), OPTS);
    // A URL valid for 0 seconds has expired (403, as S3), not a malformed one.
    const zero = await signed(`${HOST}/bucket/k?X-Amz-Expires=0`, { signQuery: true });
    await expectError(authenticate(zero, onlyKey(CREDS), OPTS), 403, "AccessDenied", "Request has expired");
    for (const expires of ["604801", "-5", "abc"]) {
      const req = await signed(`${HOST}/bucket/k?X-Amz-Expires=${expires}`, { signQuery: true });
      await expectError(authenticate(req, onlyKey(CREDS), OPTS), 400, "AuthorizationQueryParametersError");
    }
    const req = await signed(`${HOST}/bucket/k`, { signQuery: true });
    const u = new URL(req.url);
    u.searchParams.set("X-Amz-Algorithm", "AWS4-HMAC-SHA1");
    await expectError(authenticate(new Request(u), onlyKey(CREDS), OPTS), 400, "AuthorizationQueryParametersError");
    const v = new URL(req.url);
    v.searchParams.delete("X-Amz-Date");
    await expectError(authenticate(new Request(v), onlyKey(CREDS), OPTS), 400, "AuthorizationQueryParametersError");
  });

  it("rejects a wrong region, an unknown key and a second auth mechanism", async () => {
    const eu = await signed(`${HOST}/bucket/k`, { signQuery: true, region: "eu-west-1" });
    await expectError(authenticate(eu, onlyKey(CREDS), OPTS), 400, "AuthorizationQueryParametersError", "the region 'eu-west-1' is wrong");
    const other = await signed(`${HOST}/bucket/k`, { signQuery: true, creds: { accessKeyId: "AKIDX", secretAccessKey: "y" } });
    await expectError(authenticate(other, onlyKey(CREDS), OPTS), 403, "InvalidAccessKeyId");
    const both = await signed(`${HOST}/bucket/k`, { signQuery: true });
    const header = await signed(`${HOST}/bucket/k`);
    await expectError(
      authenticate(alter(both, { headers: { authorization: header.headers.get("authorization") } }), onlyKey(CREDS), OPTS),
      400,
      "InvalidArgument",
      "Only one auth mechanism",
    );
  });

  it("rejects x-amz-* headers added to a presigned request", async () => {
    const req = await signed(`${HOST}/bucket/k`, { method: "PUT", signQuery: true, body: "x" });
    await expectError(authenticate(alter(req, { headers: { "x-amz-copy-source": "/bucket/other" } }), onlyKey(CREDS), OPTS), 403, "AccessDenied");
  });

  it("uses x-amz-content-sha256 as the payload hash when a presigned request carries it", async () => {
    const body = te.encode("presigned with hash");
    const req = await signed(`${HOST}/bucket/k`, {
      method: "PUT",
      body,
      signQuery: true,
      headers: { "x-amz-content-sha256": await sha256(body) },
    });
    const auth = await authenticate(req, onlyKey(CREDS), OPTS);
    expect(td.decode(await readAll(auth.body))).toBe("presigned with hash");
    const bad = await authenticate(alter(req, { body: "something else" }), onlyKey(CREDS), OPTS);
    await expectError(readAll(bad.body), 400, "XAmzContentSHA256Mismatch");
  });
});

// -------------------------------------------------------------------------------------------------
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD: AWS's example ("Signature Calculations for the Authorization
// Header: Transferring Payload in Multiple Chunks"): 65 KiB of 'a' in 64 KiB chunks.

const EXAMPLE = {
  creds: { accessKeyId: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY" },
  now: Date.UTC(2013, 4, 24, 0, 0, 0),
  seed: "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
  chunkSignatures: [
    "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648",
    "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497",
    "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9",
  ],
};

function exampleBody(): Uint8Array {
  const [s1, s2, s3] = EXAMPLE.chunkSignatures;
  return concat(
    `10000;chunk-signature=${s1}\r\n`,
    new Uint8Array(65536).fill(0x61),
    `\r\n400;chunk-signature=${s2}\r\n`,
    new Uint8Array(1024).fill(0x61),
    `\r\n0;chunk-signature=${s3}\r\n\r\n`,
  );
}

function exampleRequest(body: Uint8Array | ReadableStream<Uint8Array>): Request {
  return new Request("http://s3.amazonaws.com/examplebucket/chunkObject.txt", {
    method: "PUT",
    headers: {
      authorization:
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request," +
        "SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-storage-class," +
        `Signature=${EXAMPLE.seed}`,
      "content-encoding": "aws-chunked",
      "content-length": "66824",
      "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
      "x-amz-date": "20130524T000000Z",
      "x-amz-decoded-content-length": "66560",
      "x-amz-storage-class": "REDUCED_REDUNDANCY",
    },
    body,
  });
}

const EXAMPLE_OPTS = { region: "us-east-1", now: EXAMPLE.now };

describe("aws-chunked, signed (STREAMING-AWS4-HMAC-SHA256-PAYLOAD)", () => {
  it("AWS's example: the seed signature verifies and the body decodes to 66560 'a's", async () => {
    const body = exampleBody();
    expect(body.length).toBe(66824);
    const auth = await authenticate(exampleRequest(body), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS);
    expect(auth.accessKeyId).toBe("AKIAIOSFODNN7EXAMPLE");
    expect(auth.contentLength).toBe(66560);
    const decoded = await readAll(auth.body);
    expect(decoded.length).toBe(66560);
    expect(decoded.every((b) => b === 0x61)).toBe(true);
    expect([...(await auth.trailers)]).toEqual([]);
  });

  it("decodes the same whatever the network's piece boundaries, passing pieces through", async () => {
    for (const sizes of [[7], [1, 7, 4096, 13], [65536 + 90], [100_000]]) {
      const auth = await authenticate(exampleRequest(piecewise(exampleBody(), sizes)), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS);
      const [a, b] = auth.body!.tee();
      const [decoded, sizesOut] = await Promise.all([readAll(a), pieces(b)]);
      expect(decoded.length, String(sizes)).toBe(66560);
      expect(decoded.every((x) => x === 0x61)).toBe(true);
      // No re-chunking: never more output pieces than there are input pieces, none empty.
      expect(sizesOut.length).toBeLessThanOrEqual(Math.ceil(66824 / Math.min(...sizes)) + 2);
      expect(sizesOut.every((n) => n > 0)).toBe(true);
    }
    // One byte at a time through the header lines and the CRLFs.
    const tiny = exampleBody();
    const auth = await authenticate(
      exampleRequest(piecewise(tiny, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5000])),
      onlyKey(EXAMPLE.creds),
      EXAMPLE_OPTS,
    );
    expect((await readAll(auth.body)).length).toBe(66560);
  });

  it("a flipped data byte makes the stream error with SignatureDoesNotMatch", async () => {
    for (const at of [100, 65536 + 88 + 2 + 86 + 500]) {
      const body = exampleBody();
      body[at] = 0x62;
      const auth = await authenticate(exampleRequest(piecewise(body, [8192])), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS);
      await expectError(readAll(auth.body), 403, "SignatureDoesNotMatch");
    }
  });

  it("errors at the chunk that fails, after passing on only what came before it", async () => {
    const body = exampleBody();
    body[65536 + 88 + 2 + 86 + 10] = 0x62; // in the second chunk
    const auth = await authenticate(exampleRequest(piecewise(body, [4096])), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS);
    const reader = auth.body!.getReader();
    let received = 0;
    const err = await (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return null;
        received += value.byteLength;
      }
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(S3Error);
    expect((err as S3Error).code).toBe("SignatureDoesNotMatch");
    expect(received).toBeGreaterThan(60_000); // the first chunk (its tail may share a piece with the bad one)
    expect(received).toBeLessThan(66560);
    await expect(auth.trailers).rejects.toBeInstanceOf(S3Error);
  });

  it("a wrong chunk signature or final signature is SignatureDoesNotMatch; a wrong seed fails at once", async () => {
    const body = exampleBody();
    const text = td.decode(body.subarray(0, 100));
    expect(text.startsWith("10000;chunk-signature=ad80")).toBe(true);
    const wrongFirst = body.slice();
    wrongFirst[30] = wrongFirst[30] === 0x30 ? 0x31 : 0x30;
    await expectError(readAll((await authenticate(exampleRequest(wrongFirst), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS)).body), 403, "SignatureDoesNotMatch");
    const wrongFinal = body.slice();
    wrongFinal[body.length - 10] = wrongFinal[body.length - 10] === 0x30 ? 0x31 : 0x30;
    await expectError(readAll((await authenticate(exampleRequest(wrongFinal), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS)).body), 403, "SignatureDoesNotMatch");
    const req = exampleRequest(body);
    const badSeed = alter(req, { headers: { authorization: req.headers.get("authorization")!.replace("Signature=4f23", "Signature=4f24") } });
    await expectError(authenticate(badSeed, onlyKey(EXAMPLE.creds), EXAMPLE_OPTS), 403, "SignatureDoesNotMatch");
  });

  it("a truncated body is IncompleteBody", async () => {
    const body = exampleBody();
    for (const cut of [10, 88, 30_000, 65536 + 88, 65536 + 89, 66824 - 86, 66824 - 3]) {
      const auth = await authenticate(exampleRequest(body.slice(0, cut)), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS);
      await expectError(readAll(auth.body), 400, "IncompleteBody");
    }
    // The end of the body may stand in for the last empty line.
    const auth = await authenticate(exampleRequest(body.slice(0, 66822)), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS);
    expect((await readAll(auth.body)).length).toBe(66560);
  });

  it("rejects extra data after the final chunk and broken framing", async () => {
    const extra = concat(exampleBody(), "junk");
    await expectError(readAll((await authenticate(exampleRequest(extra), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS)).body), 400, "InvalidRequest");
    const noCrlf = exampleBody();
    noCrlf[88 + 65536] = 0x41; // the \r after the first chunk's data
    await expectError(readAll((await authenticate(exampleRequest(noCrlf), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS)).body), 400, "InvalidRequest");
  });

  it("chains chunk signatures from an aws4fetch-signed seed, for many chunks of any size", async () => {
    const data = randomBytes(300_000);
    const sizes = [65536, 65536, 8192, 100_000, 60_000, 736];
    // Without Content-Encoding, as mc sends it.
    const headers = {
      "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
      "x-amz-decoded-content-length": String(data.length),
    };
    const req = await signed(`${HOST}/bucket/multi chunk.bin`, { method: "PUT", headers });
    const seed = /Signature=([0-9a-f]{64})/.exec(req.headers.get("authorization")!)![1]!;
    const key = await testSigningKey(CREDS.secretAccessKey, DATETIME.slice(0, 8), REGION);
    const scope = `${DATETIME.slice(0, 8)}/${REGION}/s3/aws4_request`;
    let prev = seed;
    const parts: (string | Uint8Array)[] = [];
    let off = 0;
    for (const size of [...sizes, 0]) {
      const chunk = data.subarray(off, off + size);
      off += size;
      const sts = ["AWS4-HMAC-SHA256-PAYLOAD", DATETIME, scope, prev, await sha256(""), await sha256(chunk)].join("\n");
      prev = hex(await hmacRaw(key, sts));
      parts.push(`${size.toString(16)};chunk-signature=${prev}\r\n`, chunk, "\r\n");
    }
    const body = concat(...parts);
    const auth = await authenticate(alter(req, { body: piecewise(body, [3, 1000, 77_777]) }), onlyKey(CREDS), OPTS);
    expect(auth.contentLength).toBe(data.length);
    expectBytes(await readAll(auth.body), data);

    // Swapping two chunks of the same size breaks the chain.
    const swapped = body.slice();
    const first = 88 + 0; // header of the first 64 KiB chunk is 88 bytes
    swapped.set(body.subarray(first + 65536 + 2 + 88, first + 65536 + 2 + 88 + 65536), first);
    swapped.set(body.subarray(first, first + 65536), first + 65536 + 2 + 88);
    if (!data.subarray(0, 65536).every((b, i) => b === data[65536 + i])) {
      const bad = await authenticate(alter(req, { body: swapped }), onlyKey(CREDS), OPTS);
      await expectError(readAll(bad.body), 403, "SignatureDoesNotMatch");
    }

    // A decoded length that disagrees with the chunks.
    const shortReq = await signed(`${HOST}/bucket/multi chunk.bin`, {
      method: "PUT",
      headers: { ...headers, "x-amz-decoded-content-length": "1000" },
    });
    const short = await authenticate(alter(shortReq, { body }), onlyKey(CREDS), OPTS);
    await expectError(readAll(short.body), 400, "InvalidRequest", /x-amz-decoded-content-length/);
  });

  it("caps the chunk size (InvalidChunkSizeError) and requires a chunk signature", async () => {
    const huge = concat(`1000001;chunk-signature=${"0".repeat(64)}\r\n`, new Uint8Array(10));
    await expectError(readAll((await authenticate(exampleRequest(huge), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS)).body), 400, "InvalidChunkSizeError");
    const unsignedChunk = concat("400\r\n", new Uint8Array(1024), "\r\n0\r\n\r\n");
    await expectError(readAll((await authenticate(exampleRequest(unsignedChunk), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS)).body), 403, "SignatureDoesNotMatch");
  });

  it("an aws-chunked request without a body is IncompleteBody", async () => {
    const req = await signed(`${HOST}/bucket/k`, {
      method: "PUT",
      headers: { "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" },
    });
    await expectError(authenticate(req, onlyKey(CREDS), OPTS), 400, "IncompleteBody");
  });
});

// -------------------------------------------------------------------------------------------------
// STREAMING-UNSIGNED-PAYLOAD-TRAILER (what @aws-sdk/client-s3 sends for stream bodies) and
// STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER.

describe("aws-chunked with trailers", () => {
  const data = te.encode("Hello, aws-chunked world! ".repeat(40)); // 1040 bytes
  const crc = crc32Base64(data);
  const unsignedBody = (trailer = `x-amz-checksum-crc32:${crc}\r\n\r\n`) =>
    concat("200\r\n", data.subarray(0, 512), "\r\n", "a\r\n", data.subarray(512, 522), "\r\n", "206\r\n", data.subarray(522), "\r\n0\r\n", trailer);
  const trailerHeaders = {
    "content-encoding": "aws-chunked",
    "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    "x-amz-decoded-content-length": String(data.length),
    "x-amz-trailer": "x-amz-checksum-crc32",
  };

  it("decodes the data and exposes the trailer, in 1-byte and 7-byte pieces", async () => {
    expect(crc32(te.encode("123456789"))).toBe(0xcbf43926);
    const req = await signed(`${HOST}/bucket/trailer.txt`, { method: "PUT", headers: trailerHeaders });
    for (const sizes of [[1], [7], [1, 7], [5000]]) {
      const auth = await authenticate(alter(req, { body: piecewise(unsignedBody(), sizes) }), onlyKey(CREDS), OPTS);
      expect(auth.contentLength).toBe(data.length);
      const [decoded, trailers] = await Promise.all([readAll(auth.body), auth.trailers]);
      expect(td.decode(decoded)).toBe(td.decode(data));
      expect([...trailers]).toEqual([["x-amz-checksum-crc32", crc]]);
    }
  });

  it("passes data on as it arrives (views of the network's pieces)", async () => {
    const req = await signed(`${HOST}/bucket/trailer.txt`, { method: "PUT", headers: trailerHeaders });
    const auth = await authenticate(alter(req, { body: piecewise(unsignedBody(), [100]) }), onlyKey(CREDS), OPTS);
    const sizes = await pieces(auth.body!);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(data.length);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(100);
    expect(sizes.length).toBeGreaterThanOrEqual(11);
  });

  it("accepts the AWS SDK's ending without a trailer (`0\\r\\n` then the end)", async () => {
    const req = await signed(`${HOST}/bucket/t`, {
      method: "PUT",
      headers: { ...trailerHeaders, "x-amz-trailer": "" },
    });
    const auth = await authenticate(alter(req, { body: unsignedBody("") }), onlyKey(CREDS), OPTS);
    expect((await readAll(auth.body)).length).toBe(data.length);
    expect([...(await auth.trailers)]).toEqual([]);
  });

  it("rejects malformed framing, truncation and undeclared or missing trailers", async () => {
    const req = await signed(`${HOST}/bucket/t`, { method: "PUT", headers: trailerHeaders });
    const run = async (body: Uint8Array) => {
      const auth = await authenticate(alter(req, { body: piecewise(body, [1, 7]) }), onlyKey(CREDS), OPTS);
      return Promise.all([readAll(auth.body), auth.trailers]);
    };
    await expectError(run(concat("zz\r\n", data)), 400, "InvalidRequest", /chunk size/);
    await expectError(run(concat("200\n", data)), 400, "InvalidRequest");
    await expectError(run(concat("200\r\n", data.subarray(0, 512), "XX0\r\n\r\n")), 400, "InvalidRequest");
    await expectError(run(unsignedBody().subarray(0, 600)), 400, "IncompleteBody");
    await expectError(run(unsignedBody(`x-amz-checksum-crc32:${crc}`)), 400, "IncompleteBody");
    await expectError(run(unsignedBody(`x-amz-checksum-sha256:abc=\r\n\r\n`)), 400, "MalformedTrailerError");
    await expectError(run(unsignedBody(`\r\n`)), 400, "MalformedTrailerError", /missing/);
    await expectError(run(unsignedBody(`no colon here\r\n\r\n`)), 400, "MalformedTrailerError");
    await expectError(run(unsignedBody(`x-amz-checksum-crc32:${"A".repeat(20_000)}\r\n\r\n`)), 400, "MalformedTrailerError");
    const chunkLine = concat(`${"0".repeat(5000)}\r\n`);
    await expectError(run(chunkLine), 400, "InvalidRequest", /too long/);
  });

  it("STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: verifies chunks and the trailer signature", async () => {
    const headers = { ...trailerHeaders, "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" };
    const req = await signed(`${HOST}/bucket/signed-trailer.txt`, { method: "PUT", headers });
    const seed = /Signature=([0-9a-f]{64})/.exec(req.headers.get("authorization")!)![1]!;
    const key = await testSigningKey(CREDS.secretAccessKey, DATETIME.slice(0, 8), REGION);
    const scope = `${DATETIME.slice(0, 8)}/${REGION}/s3/aws4_request`;
    const build = async (trailerValue: string, signedValue = trailerValue) => {
      let prev = seed;
      const parts: (string | Uint8Array)[] = [];
      for (const chunk of [data.subarray(0, 1000), data.subarray(1000), new Uint8Array(0)]) {
        const sts = ["AWS4-HMAC-SHA256-PAYLOAD", DATETIME, scope, prev, await sha256(""), await sha256(chunk)].join("\n");
        prev = hex(await hmacRaw(key, sts));
        parts.push(`${chunk.length.toString(16)};chunk-signature=${prev}\r\n`);
        if (chunk.length > 0) parts.push(chunk, "\r\n");
      }
      const canonical = `x-amz-checksum-crc32:${signedValue}\n`;
      const trailerSig = hex(await hmacRaw(key, ["AWS4-HMAC-SHA256-TRAILER", DATETIME, scope, prev, await sha256(canonical)].join("\n")));
      parts.push(`x-amz-checksum-crc32:${trailerValue}\r\n`, `x-amz-trailer-signature:${trailerSig}\r\n`, "\r\n");
      return concat(...parts);
    };
    const auth = await authenticate(alter(req, { body: piecewise(await build(crc), [1, 7, 333]) }), onlyKey(CREDS), OPTS);
    const [decoded, trailers] = await Promise.all([readAll(auth.body), auth.trailers]);
    expectBytes(decoded, data);
    expect(trailers.get("x-amz-checksum-crc32")).toBe(crc);

    // A trailer changed after signing.
    const forged = await authenticate(alter(req, { body: await build("AAAAAA==", crc) }), onlyKey(CREDS), OPTS);
    await expectError(Promise.all([readAll(forged.body), forged.trailers]), 403, "SignatureDoesNotMatch");
    // No trailer signature at all.
    const unsignedTrailer = concat(...[await build(crc)].map((b) => td.decode(b).replace(/x-amz-trailer-signature:[0-9a-f]+\r\n/, "")));
    const missing = await authenticate(alter(req, { body: unsignedTrailer }), onlyKey(CREDS), OPTS);
    await expectError(readAll(missing.body), 400, "MalformedTrailerError");
  });

  it("trailer lines are refused in a mode without trailers", async () => {
    const withTrailer = concat(exampleBody().subarray(0, 66824 - 2), `x-amz-checksum-crc32:${crc}\r\n\r\n`);
    const auth = await authenticate(exampleRequest(withTrailer), onlyKey(EXAMPLE.creds), EXAMPLE_OPTS);
    await expectError(readAll(auth.body), 400, "MalformedTrailerError");
  });

  it("decodeAwsChunked can be cancelled, which rejects the trailers", async () => {
    const { body, trailers } = decodeAwsChunked(piecewise(unsignedBody(), [10]), {
      signing: null,
      trailer: true,
      declaredTrailers: ["x-amz-checksum-crc32"],
      decodedLength: null,
    });
    const reader = body.getReader();
    await reader.read();
    await reader.cancel(new Error("client went away"));
    await expect(trailers).rejects.toThrow("client went away");
  });
});

describe("helpers", () => {
  it("constantTimeEqual compares whole strings", () => {
    const a = "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648";
    expect(constantTimeEqual(a, a)).toBe(true);
    expect(constantTimeEqual(a, a.slice(0, -1) + "9")).toBe(false);
    expect(constantTimeEqual(a, "b" + a.slice(1))).toBe(false);
    expect(constantTimeEqual(a, a.slice(0, 63))).toBe(false);
    expect(constantTimeEqual(a, a + "0")).toBe(false);
    expect(constantTimeEqual(a, "")).toBe(false);
  });

  it("canonicalUri decodes then encodes with AWS's rules", () => {
    expect(canonicalUri("/")).toBe("/");
    expect(canonicalUri("/bucket/a%20b/%7e~/%2A*")).toBe("/bucket/a%20b/~~/%2A%2A");
    expect(canonicalUri("/b/%C3%BC/\u00fc")).toBe("/b/%C3%BC/%C3%BC");
    expect(canonicalUri("/b/a+b/%2B")).toBe("/b/a%2Bb/%2B");
    expect(canonicalUri("/b/100%/%zz")).toBe("/b/100%25/%25zz");
    expect(canonicalUri("/b//x/")).toBe("/b//x/");
  });

  it("exposes the Authenticated shape", async () => {
    const auth: Authenticated = await authenticate(await signed(`${HOST}/b/k`), onlyKey(CREDS), OPTS);
    expect(Object.keys(auth).sort()).toEqual(["accessKeyId", "body", "contentLength", "trailers"]);
  });
});
