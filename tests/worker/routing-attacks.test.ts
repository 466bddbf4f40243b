// Hostile requests against the operations table and its middleware (api/operations.ts,
// api/http/router.ts, api/middleware.ts): whatever a request piles into its query, method, path
// and headers, the operation that runs is the one that was authorized, with that operation's own
// authentication; what no route takes is refused by name to anyone without a key; parameters are
// parsed after authorization (a malformed one tells nothing to whoever may not ask); every answer,
// errors included, carries its request id and no stack; unread bodies are settled; and the bucket
// index's NoSuchBucket comes out as S3's 404 (meta/stubs.ts) and nothing else does.
import { AwsClient } from "aws4fetch";
import { env as workersEnv, exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { handleS3 } from "../../worker/src/api/handle";
import { routeRequest } from "../../worker/src/api/operations";
import type { Env } from "../../worker/src/config";
import { bucketIndex } from "../../worker/src/meta/stubs";
import { S3Error } from "../../worker/src/s3-error";
import { METRICS_TOKEN } from "../shared/credentials";
import { GATEWAY, s3, s3ok } from "./signed";

const env = workersEnv as unknown as Env;
const errorCode = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];

type Key = { id: string; secret: string };

async function newKey(name: string): Promise<Key> {
  const res = await s3("/_shardgate/admin/keys", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name }) });
  expect(res.status).toBe(201);
  return (await res.json()) as Key;
}

async function grant(key: Key, bucket: string, rights: { read?: boolean; write?: boolean; owner?: boolean }): Promise<void> {
  const res = await s3(`/_shardgate/admin/keys/${key.id}/buckets/${bucket}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(rights),
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** A request signed with `key` (SigV4, headers). */
async function as(key: Key, path: string, init: RequestInit = {}): Promise<Response> {
  const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
  return exports.default.fetch(await client.sign(`${GATEWAY}${path}`, init));
}

/** A request without credentials. */
const anon = (path: string, init: RequestInit = {}) => exports.default.fetch(new Request(`${GATEWAY}${path}`, init));

/** Status and S3 error code of an answer (its body read). */
async function outcome(res: Response): Promise<[number, string | undefined]> {
  return [res.status, errorCode(await res.text())];
}

const doc = (...statements: Record<string, unknown>[]) => JSON.stringify({ Version: "2012-10-17", Statement: statements });

const B = "ra-main"; // an object `k` (unversioned: its version is the null version), no policy
const P = "ra-public"; // a policy letting everyone GetObject and DeleteObject under public/, PutObject under drop/
const SRC = "ra-source"; // a copy source no test key may read
const EMPTY = "ra-empty"; // empty: DeleteBucket would succeed
const MISSING = "ra-missing-bucket";

let reader: Key; // read on B
let writer: Key; // write on B (no read on SRC)

beforeAll(async () => {
  for (const b of [B, P, SRC, EMPTY]) await s3ok(`/${b}`, { method: "PUT" });
  await s3ok(`/${B}/k`, { method: "PUT", body: "main" });
  await s3ok(`/${SRC}/secret`, { method: "PUT", body: "secret" });
  for (const k of ["public/a", "public/b", "private/c"]) await s3ok(`/${P}/${k}`, { method: "PUT", body: k });
  await s3ok(
    `/${P}?policy`,
    {
      method: "PUT",
      body: doc(
        { Effect: "Allow", Principal: "*", Action: ["s3:GetObject", "s3:DeleteObject"], Resource: `arn:aws:s3:::${P}/public/*` },
        { Effect: "Allow", Principal: "*", Action: "s3:PutObject", Resource: `arn:aws:s3:::${P}/drop/*` },
      ),
    },
    204,
  );
  reader = await newKey("ra-reader");
  writer = await newKey("ra-writer");
  await grant(reader, B, { read: true });
  await grant(writer, B, { write: true });
});

describe("a query that names several sub-resources", () => {
  it("runs the operation that was authorized: ?acl&policy is GetBucketPolicy (owner) for everyone, never GetBucketAcl (read)", async () => {
    // The table tries policy before acl whatever the query's order; a reader may not have it ...
    expect(await outcome(await as(reader, `/${B}?acl&policy`))).toEqual([403, "AccessDenied"]);
    expect(await outcome(await as(reader, `/${B}?policy&acl`))).toEqual([403, "AccessDenied"]);
    // ... and the root key gets the policy's answer, not an ACL.
    expect(await outcome(await s3(`/${B}?acl&policy`))).toEqual([404, "NoSuchBucketPolicy"]);
    // The reader's own GetBucketAcl still works alone.
    expect((await as(reader, `/${B}?acl`)).status).toBe(200);
  });

  it("a sub-resource no route takes with this method is refused by name, never falls through to the bucket itself", async () => {
    // The hand-written router let DELETE ?policyStatus through to DeleteBucket and PUT/DELETE ?location to Create/DeleteBucket.
    for (const [method, path, name] of [
      ["DELETE", `/${EMPTY}?policyStatus`, "DeleteBucketPolicyStatus"],
      ["DELETE", `/${EMPTY}?location`, "DELETE on ?location"],
      ["PUT", `/${MISSING}?location`, "PUT on ?location"],
      ["DELETE", `/${EMPTY}?versions`, "DELETE on ?versions"],
      ["POST", `/${EMPTY}/k?attributes&retention`, "PostObjectAttributes"],
    ]) {
      const res = await s3(path, { method });
      const body = await res.text();
      expect([res.status, errorCode(body)], `${method} ${path}`).toEqual([501, "NotImplemented"]);
      expect(body, `${method} ${path}`).toContain(`${name} is not implemented`);
    }
    expect((await s3(`/${EMPTY}`, { method: "HEAD" })).status).toBe(200);
    expect((await s3(`/${MISSING}`, { method: "HEAD" })).status).toBe(404);
  });

  it("a form content type makes a POST a self-authenticated PostObject only on a bucket with no sub-resource", async () => {
    const form = { "content-type": "multipart/form-data; boundary=xyz" };
    const body = '--xyz\r\nContent-Disposition: form-data; name="key"\r\n\r\npublic/a\r\n--xyz--\r\n';
    // ?delete with a form: DeleteObjects, which needs credentials like any other.
    expect(await outcome(await anon(`/${B}?delete`, { method: "POST", headers: form, body }))).toEqual([403, "AccessDenied"]);
    // (the root key's: DeleteObjects ran, and asks for its Content-MD5)
    expect(await outcome(await s3(`/${P}?delete`, { method: "POST", headers: form, body }))).toEqual([400, "InvalidRequest"]);
    // ?policy, ?location, ?uploads with a form: refused by name (the old router took POST ?policy for PostObject).
    for (const sub of ["policy", "location", "uploads", "tagging"]) {
      expect(await outcome(await anon(`/${P}?${sub}`, { method: "POST", headers: form, body })), sub).toEqual([403, "AccessDenied"]);
      expect(await outcome(await s3(`/${P}?${sub}`, { method: "POST", headers: form, body })), sub).toEqual([501, "NotImplemented"]);
    }
    // On an object's path a form is nothing: POST on an object.
    expect(await outcome(await anon(`/${P}/public/a`, { method: "POST", headers: form, body }))).toEqual([403, "AccessDenied"]);
    expect((await anon(`/${P}/public/a`)).status).toBe(200);
  });
});

describe("OPTIONS, methods and HEAD", () => {
  it("a preflight on a bucket, an object or a shard URL is answered by the bucket's rules without credentials, whatever its query", async () => {
    const ask = { origin: "http://evil.example", "access-control-request-method": "DELETE" };
    for (const path of [
      `/${B}?delete`,
      `/${B}/k?uploadId=x&partNumber=1`,
      `/${B}/k?versionId=null&shardgate-upload`,
      `/${B}/k?versionId=garbage`,
      `/_shardgate/shards/${B}/ticket`,
    ]) {
      const res = await anon(path, { method: "OPTIONS", headers: ask });
      expect(await outcome(res), path).toEqual([403, "AccessForbidden"]);
      expect(res.headers.get("x-amz-request-id"), path).toMatch(/\S/);
    }
    // Without an Origin: S3's 400, still without credentials.
    expect(await outcome(await anon(`/${MISSING}/k?acl`, { method: "OPTIONS" }))).toEqual([400, "BadRequest"]);
    // Nothing was deleted or started.
    expect((await s3(`/${B}/k`)).status).toBe(200);
  });

  it("OPTIONS where no preflight is (the service, the metrics, the admin API) needs a key like anything else", async () => {
    const ask = { origin: "http://evil.example", "access-control-request-method": "GET" };
    for (const path of ["/", "/_shardgate/metrics", "/_shardgate/admin/keys"]) {
      const res = await anon(path, { method: "OPTIONS", headers: ask });
      expect(await outcome(res), path).toEqual([403, "AccessDenied"]);
      expect(res.headers.get("access-control-allow-origin"), path).toBeNull();
    }
    // With a key that holds nothing: the admin API still needs the root key.
    expect(await outcome(await as(reader, "/_shardgate/admin/keys", { method: "OPTIONS" }))).toEqual([403, "AccessDenied"]);
  });

  it("methods no route takes are NotImplemented to a key, AccessDenied to anyone else, on every scope", async () => {
    for (const method of ["PATCH", "PROPFIND"]) {
      for (const path of ["/", `/${B}`, `/${B}/k`, `/${B}/k?uploadId=u`, `/${B}?cors`, "/_shardgate/metrics"]) {
        expect(await outcome(await anon(path, { method })), `${method} ${path}`).toEqual([403, "AccessDenied"]);
        expect(await outcome(await s3(path, { method })), `${method} ${path}`).toEqual([501, "NotImplemented"]);
      }
    }
    expect((await s3(`/${B}/k`)).status).toBe(200);
  });

  it("HEAD is not GET where a sub-resource is named, and the metrics' bearer token opens GET only", async () => {
    // HeadBucket only without a sub-resource: HEAD ?location and ?acl are refused (no body on a HEAD).
    for (const path of [`/${B}?location`, `/${B}?acl`, `/${B}/k?uploadId=u`, `/${B}/k?tagging`]) {
      const res = await s3(path, { method: "HEAD" });
      expect(res.status, path).toBe(501);
      expect(await res.text(), path).toBe("");
    }
    const bearer = { authorization: `Bearer ${METRICS_TOKEN}` };
    const get = await anon("/_shardgate/metrics", { headers: bearer });
    expect(get.status).toBe(200);
    await get.arrayBuffer();
    for (const method of ["HEAD", "POST", "DELETE"]) {
      // Not the metrics: NotImplemented, which takes a signature (a bearer header is a malformed one).
      const res = await anon("/_shardgate/metrics", { method, headers: bearer });
      expect([400, 403], method).toContain(res.status);
      expect(await res.text(), method).not.toContain("shardgate_requests_total");
    }
    // The token is the metrics' alone: not the admin API, not a bucket.
    for (const path of ["/_shardgate/admin/keys", `/${B}/k`, "/"]) {
      const res = await anon(path, { headers: bearer });
      expect([400, 403], path).toContain(res.status);
      await res.arrayBuffer();
    }
    expect((await anon("/_shardgate/metrics", { headers: { authorization: "Bearer not-the-token" } })).status).toBe(403);
  });
});

describe("the gateway's own paths", () => {
  it("a virtual-hosted bucket cannot shadow them, and they cannot be reached by an encoded or near-miss path", async () => {
    // Host `<bucket>.localhost`: /_shardgate/admin/ is the admin API still, root only.
    const hosted = (path: string, init: RequestInit = {}) => exports.default.fetch(new Request(`http://${B}.localhost${path}`, init));
    expect(await outcome(await hosted("/_shardgate/admin/keys"))).toEqual([403, "AccessDenied"]);
    expect(await outcome(await hosted("/_shardgate/metrics"))).toEqual([403, "AccessDenied"]);
    // An encoded underscore or a missing slash is a bucket "_shardgate" (which cannot exist), not the admin API.
    for (const path of ["/%5Fshardgate/admin/keys", "/_shardgate/admin", "/_shardgate/metrics/"]) {
      const res = await anon(path);
      expect(res.status, path).toBe(403);
      expect(res.headers.get("content-type"), path).not.toContain("json");
    }
  });

  it("a shard URL is only ever TransferShard, authorized by its ticket alone, whatever the method", async () => {
    for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
      const res = await anon(`/_shardgate/shards/${B}/not-a-ticket?uploadId=x&delete`, { method, body: method === "PUT" ? "x" : undefined });
      const [status] = await outcome(res);
      expect(status, method).toBeGreaterThanOrEqual(400);
      expect(status, method).toBeLessThan(500);
    }
    expect((await s3(`/${B}/k`)).status).toBe(200);
  });
});

describe("parameters are parsed after authorization", () => {
  it("?versionId: anyone allowed s3:GetObject but not s3:GetObjectVersion is refused whatever the versionId, even an empty or malformed one", async () => {
    expect((await anon(`/${P}/public/a`)).status).toBe(200);
    for (const q of ["versionId=null", "versionId=", "versionId=garbage", "versionId=null&versionId=null"]) {
      expect(await outcome(await anon(`/${P}/public/a?${q}`)), q).toEqual([403, "AccessDenied"]);
      expect(await outcome(await anon(`/${P}/public/a?${q}`, { method: "HEAD" })), q).toEqual([403, undefined]);
    }
    // Whoever may ask learns it is malformed. (Repeated parameters are not signed here: aws4fetch drops duplicates for s3.)
    expect(await outcome(await s3(`/${P}/public/a?versionId=`))).toEqual([400, "InvalidArgument"]);
    expect(await outcome(await s3(`/${P}/public/a?versionId=garbage`))).toEqual([400, "InvalidArgument"]);
    expect((await s3(`/${P}/public/a?versionId=null`)).status).toBe(200);
  });

  it("DELETE ?versionId is s3:DeleteObjectVersion: an Allow of s3:DeleteObject does not delete a version", async () => {
    expect(await outcome(await anon(`/${P}/public/b?versionId=null`, { method: "DELETE" }))).toEqual([403, "AccessDenied"]);
    expect(await outcome(await anon(`/${P}/public/b?versionId=`, { method: "DELETE" }))).toEqual([403, "AccessDenied"]);
    expect((await anon(`/${P}/public/b`)).status).toBe(200);
  });

  it("?uploadId and ?partNumber, empty, repeated or malformed: AccessDenied to whoever may not write, S3's errors to whoever may", async () => {
    for (const q of [
      "uploadId=&partNumber=1",
      "uploadId=u&partNumber=0",
      "uploadId=u&partNumber=abc",
      "uploadId=u",
      "uploadId=u&uploadId=&partNumber=1&partNumber=x",
    ]) {
      expect(await outcome(await anon(`/${B}/k?${q}`, { method: "PUT", body: "x" })), q).toEqual([403, "AccessDenied"]);
      if (!q.includes("&uploadId=")) expect(await outcome(await as(reader, `/${B}/k?${q}`, { method: "PUT", body: "x" })), q).toEqual([403, "AccessDenied"]);
    }
    expect(await outcome(await as(writer, `/${B}/k?uploadId=&partNumber=1`, { method: "PUT", body: "x" }))).toEqual([404, "NoSuchUpload"]);
    expect(await outcome(await as(writer, `/${B}/k?uploadId=u&partNumber=0`, { method: "PUT", body: "x" }))).toEqual([400, "InvalidArgument"]);
    expect(await outcome(await as(writer, `/${B}/k?uploadId=u`, { method: "PUT", body: "x" }))).toEqual([400, "InvalidArgument"]);
    // A GET's ?partNumber too: refused to anyone without the read, malformed to a reader.
    expect(await outcome(await anon(`/${B}/k?partNumber=0`))).toEqual([403, "AccessDenied"]);
    expect(await outcome(await as(reader, `/${B}/k?partNumber=0`))).toEqual([400, "InvalidArgument"]);
    // And the object is what it was.
    expect(await (await s3(`/${B}/k`)).text()).toBe("main");
  });
});

describe("x-amz-copy-source", () => {
  it("makes a PUT a copy whose source is checked in its own bucket, for CopyObject and UploadPartCopy, before anything else", async () => {
    const copy = { "x-amz-copy-source": `/${SRC}/secret` };
    expect(await outcome(await as(writer, `/${B}/stolen`, { method: "PUT", headers: copy }))).toEqual([403, "AccessDenied"]);
    expect(await outcome(await as(writer, `/${B}/stolen?uploadId=u&partNumber=1`, { method: "PUT", headers: copy }))).toEqual([403, "AccessDenied"]);
    // A versioned source is s3:GetObjectVersion: the public prefix's s3:GetObject does not cover it.
    const versioned = { "x-amz-copy-source": `/${P}/public/a?versionId=null` };
    expect(await outcome(await as(writer, `/${B}/stolen`, { method: "PUT", headers: versioned }))).toEqual([403, "AccessDenied"]);
    expect((await s3(`/${B}/stolen`, { method: "HEAD" })).status).toBe(404);
  });

  it("an empty, slashless or malformed copy source is a copy refused as such, never a PutObject of the body", async () => {
    for (const source of ["", "/", `${SRC}`, `/${SRC}/`, `/${SRC}/%E0%A4%A`, "/%E0%A4%A/secret", `/${SRC}/secret?versionId=garbage`]) {
      const res = await as(writer, `/${B}/from-empty`, { method: "PUT", headers: { "x-amz-copy-source": source }, body: "written?" });
      expect(await outcome(res), JSON.stringify(source)).toEqual([400, "InvalidArgument"]);
    }
    expect((await s3(`/${B}/from-empty`, { method: "HEAD" })).status).toBe(404);
    // The same from anyone a policy lets write, and for the root key: S3's 400, never a 500.
    const badBucket = { "x-amz-copy-source": "/%E0%A4%A/secret" };
    expect(await outcome(await anon(`/${P}/drop/x1`, { method: "PUT", headers: badBucket }))).toEqual([400, "InvalidArgument"]);
    expect(await outcome(await s3(`/${B}/x1`, { method: "PUT", headers: badBucket }))).toEqual([400, "InvalidArgument"]);
    expect(await outcome(await s3(`/${B}/k?uploadId=u&partNumber=1`, { method: "PUT", headers: badBucket }))).toEqual([400, "InvalidArgument"]);
  });
});

describe("DeleteObjects per key", () => {
  it("anyone allowed s3:DeleteObject under a prefix deletes those keys only, and no version", async () => {
    await s3ok(`/${P}/public/d`, { method: "PUT", body: "d" });
    const body =
      "<Delete><Object><Key>public/d</Key></Object><Object><Key>private/c</Key></Object>" +
      "<Object><Key>public/a</Key><VersionId>null</VersionId></Object></Delete>";
    const md5 = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("MD5", new TextEncoder().encode(body)))));
    const res = await anon(`/${P}?delete`, { method: "POST", body, headers: { "content-md5": md5 } });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(text).toContain("<Deleted><Key>public/d</Key>");
    expect(text).toMatch(/<Error><Key>private\/c<\/Key><Code>AccessDenied<\/Code>/);
    expect(text).toMatch(/<Error><Key>public\/a<\/Key><VersionId>null<\/VersionId><Code>AccessDenied<\/Code>/);
    expect((await s3(`/${P}/private/c`)).status).toBe(200);
    expect((await s3(`/${P}/public/a`)).status).toBe(200);
    // Where the policy allows no deletion at all, the batch is refused whole.
    expect(await outcome(await anon(`/${B}?delete`, { method: "POST", body, headers: { "content-md5": md5 } }))).toEqual([403, "AccessDenied"]);
  });
});

describe("a gateway without credentials configured", () => {
  const bare = { ...env, SHARDGATE_ACCESS_KEY_ID: undefined, SHARDGATE_SECRET_ACCESS_KEY: undefined } as unknown as Env;
  const exec = { waitUntil: () => {} };
  const call = (path: string, init: RequestInit = {}) => handleS3(new Request(`${GATEWAY}${path}`, init), bare, exec);

  it("answers preflights and the bearer scrape, and nothing else: not a form, a shard URL, NotImplemented or STS", async () => {
    expect(
      await outcome(await call(`/${B}/k`, { method: "OPTIONS", headers: { origin: "http://x.example", "access-control-request-method": "GET" } })),
    ).toEqual([403, "AccessForbidden"]);
    expect((await call("/_shardgate/metrics", { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).status).toBe(200);
    const form = { "content-type": "multipart/form-data; boundary=xyz" };
    for (const [path, init] of [
      [`/${B}`, { method: "POST", headers: form, body: "--xyz--\r\n" }],
      [`/_shardgate/shards/${B}/ticket`, { method: "GET" }],
      [`/${B}`, { method: "PATCH" }],
      [`/${B}/k`, {}],
      ["/_shardgate/admin/keys", {}],
    ] as [string, RequestInit][]) {
      const res = await call(path, init);
      const text = await res.text();
      expect([res.status, errorCode(text)], path).toEqual([403, "AccessDenied"]);
      expect(text, path).toContain("no credentials configured");
    }
    const sts = await call("/", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "Action=GetSessionToken" });
    const text = await sts.text();
    expect(sts.status).toBe(403);
    expect(text).toContain("<ErrorResponse");
    expect(text).toContain("<Code>AccessDenied</Code>");
  });
});

describe("error answers", () => {
  it("STS errors are STS's format with the request id; an unsigned STS body is not read as credentials", async () => {
    const res = await anon("/", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "Action=GetSessionToken&Version=2011-06-15",
    });
    const text = await res.text();
    expect(res.status).toBe(403);
    expect(text).toMatch(/^<ErrorResponse[^>]*><Error><Type>Sender<\/Type><Code>AccessDenied<\/Code>/);
    const id = res.headers.get("x-amz-request-id");
    expect(id).toMatch(/\S/);
    expect(text).toContain(`<RequestId>${id}</RequestId>`);
  });

  it("every answer carries a request id and no stack, and an error gets the bucket's CORS headers", async () => {
    await s3ok(`/${P}?cors`, {
      method: "PUT",
      body: "<CORSConfiguration><CORSRule><AllowedOrigin>http://app.example</AllowedOrigin><AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod></CORSRule></CORSConfiguration>",
    });
    const origin = { origin: "http://app.example" };
    const denied = await anon(`/${P}/private/c`, { headers: origin });
    expect(await outcome(denied)).toEqual([403, "AccessDenied"]);
    expect(denied.headers.get("access-control-allow-origin")).toBe("http://app.example");
    // Another origin: none.
    const other = await anon(`/${P}/private/c`, { headers: { origin: "http://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    await other.arrayBuffer();
    const answers = [
      await anon(`/${P}/private/c`),
      await anon(`/${B}`, { method: "PATCH" }),
      await s3(`/${B}`, { method: "PATCH" }),
      await s3(`/${MISSING}?cors`),
      await s3(`/${B}/k?versionId=garbage`),
      await anon(`/${P}/k`, { method: "OPTIONS" }),
      await anon("/_shardgate/metrics", { headers: { authorization: "Bearer nope" } }),
    ];
    for (const res of answers) {
      expect(res.headers.get("x-amz-request-id"), res.url).toMatch(/\S/);
      const text = await res.text();
      expect(text).not.toMatch(/\bat .*\.(ts|js):\d+|worker\/src|Error:/);
      expect(text).toContain(`<RequestId>${res.headers.get("x-amz-request-id")}</RequestId>`);
    }
  });

  it("an unread body is settled on an early refusal: read away, or cancelled when the client sent Expect: 100-continue", async () => {
    const exec = { waitUntil: () => {} };
    const counted = () => {
      const state = { pulls: 0, closed: false, cancelled: false };
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (state.pulls === 4) {
            state.closed = true;
            c.close();
            return;
          }
          state.pulls++;
          c.enqueue(new Uint8Array(64 * 1024));
        },
        cancel() {
          state.cancelled = true;
        },
      });
      return { state, body };
    };
    for (const [path, method] of [
      [`/${B}/k`, "PUT"],
      [`/${B}`, "PATCH"],
      [`/${B}?delete`, "POST"],
      ["/_shardgate/admin/keys", "POST"],
    ]) {
      const { state, body } = counted();
      const res = await handleS3(new Request(`${GATEWAY}${path}`, { method, body, headers: { "content-length": String(4 * 64 * 1024) } }), env, exec);
      expect(res.status, path).toBe(403);
      expect(state.closed || state.cancelled, path).toBe(true);
      expect(res.headers.get("x-amz-request-id")).toMatch(/\S/);
    }
    const { state, body } = counted();
    const res = await handleS3(new Request(`${GATEWAY}/${B}/k`, { method: "PUT", body, headers: { expect: "100-continue" } }), env, exec);
    expect(res.status).toBe(403);
    expect(state.cancelled).toBe(true);
  });
});

describe("the bucket index's NoSuchBucket (meta/stubs.ts)", () => {
  it("the stub is not a thenable, a missing bucket is S3's 404 naming it, any other error passes unchanged", async () => {
    const index = bucketIndex(env, MISSING);
    // Awaiting the stub gives the stub, not a remote call named "then".
    expect(await Promise.resolve(index)).toBe(index);
    const missing = await index.info().then(
      () => null,
      (e: unknown) => e,
    );
    expect(missing).toBeInstanceOf(S3Error);
    expect((missing as S3Error).code).toBe("NoSuchBucket");
    expect((missing as S3Error).status).toBe(404);
    expect((missing as S3Error).message).toContain(MISSING);
    // An existing bucket's index, asked something it fails on for another reason: not NoSuchBucket.
    const other = await bucketIndex(env, B)
      .deleteMany(null as never)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(other).toBeInstanceOf(Error);
    expect(other).not.toBeInstanceOf(S3Error);
  });

  it("every operation on a bucket that does not exist answers 404 NoSuchBucket to the root key", async () => {
    for (const [path, init] of [
      [`/${MISSING}?cors`, {}],
      [`/${MISSING}?tagging`, {}],
      [`/${MISSING}?uploads`, {}],
      [`/${MISSING}?versions`, {}],
      [`/${MISSING}/k`, {}],
      [`/${MISSING}/k`, { method: "DELETE" }],
      [`/${MISSING}/k?tagging`, {}],
      [`/${MISSING}/k?uploadId=u`, {}],
      [`/${MISSING}/k?uploads`, { method: "POST" }],
      [`/${MISSING}?versioning`, { method: "PUT", body: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>" }],
    ] as [string, RequestInit][]) {
      const res = await s3(path, init);
      const text = await res.text();
      expect([res.status, errorCode(text)], `${init.method ?? "GET"} ${path}`).toEqual([404, "NoSuchBucket"]);
    }
  });
});

describe("routing cost", () => {
  // How long routing takes is for the benchmarks; here, that a huge query routes as the table says.
  it("routes a query of 20,000 parameters, or of 20,000 sub-resource names, as the table says", () => {
    const many = new URLSearchParams();
    for (let i = 0; i < 20_000; i++) many.append(`p${i}`, "x");
    const repeated = new URLSearchParams();
    for (let i = 0; i < 20_000; i++) repeated.append(i % 2 ? "website" : "logging", "");
    const plain = routeRequest("GET", new URL(`http://localhost/b?${many}`), "localhost", new Headers());
    const refused = routeRequest("GET", new URL(`http://localhost/b/k?${repeated}`), "localhost", new Headers());
    const both = routeRequest("GET", new URL(`http://localhost/b?${repeated}&cors`), "localhost", new Headers());
    expect(plain.op).toBe("ListObjects");
    expect(refused.op).toBe("GetObject");
    expect(both.op).toBe("GetBucketCors");
  });
});
