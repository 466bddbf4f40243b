// Conditional writes (issue #33): If-Match / If-None-Match on PutObject, CopyObject's destination and
// CompleteMultipartUpload, with S3's answers (404 NoSuchKey for If-Match over no object, 412
// PreconditionFailed otherwise), decided in the bucket's Durable Object transaction so that of
// racing writers exactly one wins; a refused write leaves nothing visible and its shard files are
// collected; a refused completion leaves the upload in place. A bucket that never had versioning
// names no version in any answer, as S3. In workerd with real R2 nodes.
import { AwsClient } from "aws4fetch";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { shardFiles } from "./nodes";
import { GATEWAY, s3, s3ok } from "./signed";

const MIB = 1 << 20;
const bucket = "cond-writes";
const versioned = "cond-writes-versioned";

const tag = (xml: string, name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
const bytesOf = async (res: Response) => new Uint8Array(await res.arrayBuffer());

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
  await s3ok(`/${versioned}`, { method: "PUT" });
  const enabled = `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`;
  await s3ok(`/${versioned}?versioning`, { method: "PUT", body: enabled });
});

/** A response's status and S3 error code (null for a success). */
async function outcome(res: Response): Promise<[number, string | null]> {
  const text = await res.text();
  return [res.status, res.ok ? null : (tag(text, "Code") ?? null)];
}

const put = (path: string, body: BodyInit, headers: Record<string, string> = {}) => s3(path, { method: "PUT", body, headers });
const etagOf = async (path: string) => (await s3ok(path, { method: "HEAD" })).headers.get("etag") as string;
const shardCount = async () => (await shardFiles()).size;

/** Waits until the nodes hold exactly `count` shard files (refused writes are collected after the answer). */
async function expectShardFiles(count: number): Promise<void> {
  await expect.poll(shardCount, { timeout: 10_000 }).toBe(count);
}

describe("PutObject with If-Match / If-None-Match", () => {
  it("If-Match on a key with no object: 404 NoSuchKey, for * and for any ETag; nothing stored, its shard files collected", async () => {
    const before = await shardCount();
    for (const ifMatch of ["*", '"0123456789abcdef0123456789abcdef"', "0123456789abcdef0123456789abcdef"]) {
      expect(await outcome(await put(`/${bucket}/missing.bin`, randomBytes(2 * MIB, 1), { "if-match": ifMatch }))).toEqual([404, "NoSuchKey"]);
    }
    expect((await s3(`/${bucket}/missing.bin`, { method: "HEAD" })).status).toBe(404);
    await expectShardFiles(before);
  });

  it("If-Match with another ETag: 412 PreconditionFailed; the object stays and the refused bytes are collected", async () => {
    await s3ok(`/${bucket}/wrong.txt`, { method: "PUT", body: "kept" });
    const before = await shardCount();
    expect(await outcome(await put(`/${bucket}/wrong.txt`, randomBytes(2 * MIB, 2), { "if-match": '"ffffffffffffffffffffffffffffffff"' }))).toEqual([
      412,
      "PreconditionFailed",
    ]);
    expect(await (await s3ok(`/${bucket}/wrong.txt`)).text()).toBe("kept");
    await expectShardFiles(before);
  });

  it("If-Match with the current ETag, quoted or not, and If-Match: * over an object: the write replaces it", async () => {
    await s3ok(`/${bucket}/cas.txt`, { method: "PUT", body: "v1" });
    const v1 = await etagOf(`/${bucket}/cas.txt`);
    expect((await put(`/${bucket}/cas.txt`, "v2", { "if-match": v1 })).status).toBe(200);
    const v2 = await etagOf(`/${bucket}/cas.txt`);
    expect((await put(`/${bucket}/cas.txt`, "v3", { "if-match": v2.replace(/"/g, "") })).status).toBe(200);
    expect((await put(`/${bucket}/cas.txt`, "v4", { "if-match": "*" })).status).toBe(200);
    expect(await (await s3ok(`/${bucket}/cas.txt`)).text()).toBe("v4");
  });

  it("If-None-Match: * over an object: 412 PreconditionFailed, the refused bytes collected; over no object: created", async () => {
    expect((await put(`/${bucket}/create-only.bin`, "first", { "if-none-match": "*" })).status).toBe(200);
    const before = await shardCount();
    expect(await outcome(await put(`/${bucket}/create-only.bin`, randomBytes(2 * MIB, 3), { "if-none-match": "*" }))).toEqual([412, "PreconditionFailed"]);
    expect(await (await s3ok(`/${bucket}/create-only.bin`)).text()).toBe("first");
    await expectShardFiles(before);
  });

  it("a large body under a condition that already fails is refused before it is stored: with Expect: 100-continue the answer comes while the body is still unsent", async () => {
    await s3ok(`/${bucket}/early.bin`, { method: "PUT", body: "here" });
    const size = 3 * MIB;
    for (const headers of [{ "if-none-match": "*" }, { "if-match": '"abc"' }] as Record<string, string>[]) {
      // A body that sends 64 KiB and then nothing: only an answer given before reading it returns.
      // (Without Expect: 100-continue an early answer reads the body away first: middleware.ts.)
      let pulled = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled++ === 0) controller.enqueue(new Uint8Array(64 * 1024));
          else return new Promise<void>(() => {});
        },
      });
      const init = {
        method: "PUT",
        body,
        headers: { ...headers, "content-length": String(size), "x-amz-content-sha256": "UNSIGNED-PAYLOAD", expect: "100-continue" },
        duplex: "half",
      };
      const timeout = new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 5000));
      const res = await Promise.race([s3(`/${bucket}/early.bin`, init as RequestInit), timeout]);
      expect(res).not.toBe("hung");
      expect(await outcome(res as Response)).toEqual([412, "PreconditionFailed"]);
      await body.cancel().catch(() => {});
    }
    expect(await (await s3ok(`/${bucket}/early.bin`)).text()).toBe("here");
  });

  it("eight racing writers with If-None-Match: * onto a new key: exactly one 200, seven 412, and the winner's bytes read back", async () => {
    const before = await shardCount();
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(MIB + 7 * i, 20 + i));
    const results = await Promise.all(bodies.map((body) => put(`/${bucket}/race-create.bin`, body, { "if-none-match": "*" })));
    const statuses = results.map((r) => r.status);
    expect([...statuses].sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    expectSameBytes(await bytesOf(await s3ok(`/${bucket}/race-create.bin`)), bodies[statuses.indexOf(200)]);
    await expectShardFiles(before + 6);
  });

  it("eight racing writers with If-Match on the same ETag: exactly one 200, seven 412, and the winner's bytes read back", async () => {
    await s3ok(`/${bucket}/race-cas.bin`, { method: "PUT", body: "base" });
    const base = await etagOf(`/${bucket}/race-cas.bin`);
    const before = await shardCount();
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(MIB + 100 * i, 10 + i));
    const results = await Promise.all(bodies.map((body) => put(`/${bucket}/race-cas.bin`, body, { "if-match": base })));
    const statuses = results.map((r) => r.status);
    expect([...statuses].sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    const winner = statuses.indexOf(200);
    expectSameBytes(await bytesOf(await s3ok(`/${bucket}/race-cas.bin`)), bodies[winner]);
    // The base object is inline (no shard files); of the eight writers' files only the winner's six stay.
    await expectShardFiles(before + 6);
  });
});

describe("hostile If-Match / If-None-Match values on a write", () => {
  const key = `/${bucket}/hostile.txt`;
  let current: string;
  beforeAll(async () => {
    await s3ok(key, { method: "PUT", body: "stays" });
    current = await etagOf(key);
  });

  it("refuses with 412 what cannot be the object's ETag: a weak W/ ETag (strong comparison), commas only, an unbalanced quote, garbage", async () => {
    // (An empty If-Match never reaches the Worker: the runtime drops empty headers, as absent.)
    for (const ifMatch of [`W/${current}`, ",,, ,", " , ", `"${current.replace(/"/g, "")}`, "<xml>&amp;", "\u0001"]) {
      const res = await put(key, "replaced", { "if-match": ifMatch }).catch(() => null);
      if (res === null) continue; // a value fetch itself refuses to send
      expect(await outcome(res), JSON.stringify(ifMatch)).toEqual([412, "PreconditionFailed"]);
    }
    expect(await (await s3ok(key)).text()).toBe("stays");
  });

  it("takes a list of ETags: If-Match holds when any listed ETag is the object's, If-None-Match fails when any is (weak comparison)", async () => {
    expect(await outcome(await put(key, "x", { "if-none-match": `"aaaa", W/${current}` }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await put(key, "x", { "if-match": '"aaaa", "bbbb"' }))).toEqual([412, "PreconditionFailed"]);
    expect((await put(key, "stays", { "if-match": `"aaaa", ${current}` })).status).toBe(200);
    expect(await etagOf(key)).toBe(current);
  });

  it("a huge If-Match header (2,000 ETags, 72 KB) is decided like any: 412 over another object, 200 when its ETag is listed last, 404 over none", async () => {
    const huge = Array.from({ length: 2000 }, (_, i) => `"${i.toString(16).padStart(32, "0")}"`).join(", ");
    expect(await outcome(await put(key, "x", { "if-match": huge }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await put(key, "stays", { "if-match": `${huge}, ${current}` }))).toEqual([200, null]);
    expect(await outcome(await put(`/${bucket}/hostile-missing.txt`, "x", { "if-match": huge }))).toEqual([404, "NoSuchKey"]);
    expect(await (await s3ok(key)).text()).toBe("stays");
  });

  it("If-Match together with If-None-Match: both must hold (If-Match decides first: 404 over no object)", async () => {
    expect(await outcome(await put(key, "x", { "if-match": current, "if-none-match": "*" }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await put(key, "x", { "if-match": current, "if-none-match": current }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await put(`/${bucket}/hostile-none.txt`, "x", { "if-match": "*", "if-none-match": "*" }))).toEqual([404, "NoSuchKey"]);
    expect((await put(key, "stays", { "if-match": current, "if-none-match": '"other"' })).status).toBe(200);
    expect((await s3(`/${bucket}/hostile-none.txt`, { method: "HEAD" })).status).toBe(404);
  });
});

describe("CopyObject with If-Match / If-None-Match on the destination", () => {
  const source = `/${bucket}/copy-source.bin`;
  const data = randomBytes(MIB + 5, 30);
  beforeAll(async () => {
    await s3ok(source, { method: "PUT", body: data });
  });
  const copy = (to: string, headers: Record<string, string>) => s3(to, { method: "PUT", headers: { "x-amz-copy-source": source, ...headers } });

  it("If-Match on a destination with no object: 404 NoSuchKey, nothing stored and the copied shard files collected", async () => {
    const before = await shardCount();
    expect(await outcome(await copy(`/${bucket}/copy-missing.bin`, { "if-match": "*" }))).toEqual([404, "NoSuchKey"]);
    expect(await outcome(await copy(`/${bucket}/copy-missing.bin`, { "if-match": '"abc"' }))).toEqual([404, "NoSuchKey"]);
    expect((await s3(`/${bucket}/copy-missing.bin`, { method: "HEAD" })).status).toBe(404);
    await expectShardFiles(before);
  });

  it("If-Match with another ETag on the destination: 412; with its ETag: copied; If-None-Match: * over it: 412", async () => {
    const to = `/${bucket}/copy-target.txt`;
    await s3ok(to, { method: "PUT", body: "target" });
    const etag = await etagOf(to);
    expect(await outcome(await copy(to, { "if-match": '"abc"' }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await copy(to, { "if-none-match": "*" }))).toEqual([412, "PreconditionFailed"]);
    expect(await (await s3ok(to)).text()).toBe("target");
    expect((await copy(to, { "if-match": etag })).status).toBe(200);
    expectSameBytes(await bytesOf(await s3ok(to)), data);
    expect((await copy(`/${bucket}/copy-new.bin`, { "if-none-match": "*" })).status).toBe(200);
  });

  it("a copy onto itself (new metadata) takes the same conditions: 412 with another ETag, replaced with its own", async () => {
    const etag = await etagOf(source);
    const self = (headers: Record<string, string>) => copy(source, { "x-amz-metadata-directive": "REPLACE", "x-amz-meta-round": "2", ...headers });
    expect(await outcome(await self({ "if-match": '"abc"' }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await self({ "if-none-match": "*" }))).toEqual([412, "PreconditionFailed"]);
    expect((await self({ "if-match": etag })).status).toBe(200);
    expect((await s3ok(source, { method: "HEAD" })).headers.get("x-amz-meta-round")).toBe("2");
  });
});

async function createUpload(b: string, key: string): Promise<string> {
  return tag(await (await s3ok(`/${b}/${key}?uploads`, { method: "POST" })).text(), "UploadId") as string;
}

/** An upload of one part (`body`) under `key`: its id and the part's ETag. */
async function uploadWithPart(b: string, key: string, body: Uint8Array): Promise<{ uploadId: string; etag: string }> {
  const uploadId = await createUpload(b, key);
  const res = await s3ok(`/${b}/${key}?partNumber=1&uploadId=${uploadId}`, { method: "PUT", body });
  return { uploadId, etag: res.headers.get("etag") as string };
}

function complete(b: string, key: string, upload: { uploadId: string; etag: string }, headers: Record<string, string> = {}): Promise<Response> {
  const body = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${upload.etag}</ETag></Part></CompleteMultipartUpload>`;
  return s3(`/${b}/${key}?uploadId=${upload.uploadId}`, { method: "POST", body, headers });
}

const uploadOpen = async (b: string, key: string, uploadId: string) => (await s3(`/${b}/${key}?uploadId=${uploadId}`)).status === 200;

describe("CompleteMultipartUpload with If-Match / If-None-Match", () => {
  it("If-Match on a key with no object: 404 NoSuchKey, for * and for an ETag; the upload stays, and completes when retried without it", async () => {
    const key = "mpu-missing.bin";
    const body = randomBytes(MIB, 40);
    const upload = await uploadWithPart(bucket, key, body);
    expect(await outcome(await complete(bucket, key, upload, { "if-match": "*" }))).toEqual([404, "NoSuchKey"]);
    expect(await outcome(await complete(bucket, key, upload, { "if-match": '"abc"' }))).toEqual([404, "NoSuchKey"]);
    expect((await s3(`/${bucket}/${key}`, { method: "HEAD" })).status).toBe(404);
    expect(await uploadOpen(bucket, key, upload.uploadId)).toBe(true);
    expect((await complete(bucket, key, upload, { "if-none-match": "*" })).status).toBe(200);
    expectSameBytes(await bytesOf(await s3ok(`/${bucket}/${key}`)), body);
  });

  it("If-Match with another ETag: 412 PreconditionFailed and the upload stays; with the object's ETag: completes", async () => {
    const key = "mpu-cas.bin";
    await s3ok(`/${bucket}/${key}`, { method: "PUT", body: "old" });
    const current = await etagOf(`/${bucket}/${key}`);
    const upload = await uploadWithPart(bucket, key, randomBytes(1000, 41));
    expect(await outcome(await complete(bucket, key, upload, { "if-match": '"abc"' }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await complete(bucket, key, upload, { "if-match": `W/${current}` }))).toEqual([412, "PreconditionFailed"]);
    expect(await uploadOpen(bucket, key, upload.uploadId)).toBe(true);
    expect(await (await s3ok(`/${bucket}/${key}`)).text()).toBe("old");
    expect((await complete(bucket, key, upload, { "if-match": current.replace(/"/g, "") })).status).toBe(200);
  });

  it("eight racing completes with If-None-Match: * onto one key: exactly one wins, the others 412 with their uploads left in place", async () => {
    const key = "mpu-race-create.bin";
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(64 * 1024 + i, 50 + i));
    const uploads = await Promise.all(bodies.map((body) => uploadWithPart(bucket, key, body)));
    const results = await Promise.all(uploads.map((u) => complete(bucket, key, u, { "if-none-match": "*" })));
    const statuses = results.map((r) => r.status);
    expect([...statuses].sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    const winner = statuses.indexOf(200);
    expectSameBytes(await bytesOf(await s3ok(`/${bucket}/${key}`)), bodies[winner]);
    for (const [i, u] of uploads.entries()) expect(await uploadOpen(bucket, key, u.uploadId)).toBe(i !== winner);
    for (const [i, u] of uploads.entries()) if (i !== winner) await s3ok(`/${bucket}/${key}?uploadId=${u.uploadId}`, { method: "DELETE" }, 204);
  });

  it("eight racing completes with If-Match on the same ETag: exactly one wins, the others 412", async () => {
    const key = "mpu-race-cas.bin";
    await s3ok(`/${bucket}/${key}`, { method: "PUT", body: "base" });
    const base = await etagOf(`/${bucket}/${key}`);
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(64 * 1024 + i, 60 + i));
    const uploads = await Promise.all(bodies.map((body) => uploadWithPart(bucket, key, body)));
    const results = await Promise.all(uploads.map((u) => complete(bucket, key, u, { "if-match": base })));
    const statuses = results.map((r) => r.status);
    expect([...statuses].sort()).toEqual([200, 412, 412, 412, 412, 412, 412, 412]);
    expectSameBytes(await bytesOf(await s3ok(`/${bucket}/${key}`)), bodies[statuses.indexOf(200)]);
  });
});

describe("conditional writes in a versioned bucket: against the current version", () => {
  it("If-Match compares with the current version (an older version's ETag is 412); a delete marker as current version is no object (404), If-None-Match: * then creates", async () => {
    const key = `/${versioned}/doc.txt`;
    await s3ok(key, { method: "PUT", body: "one" });
    const one = await etagOf(key);
    await s3ok(key, { method: "PUT", body: "two" });
    expect(await outcome(await put(key, "x", { "if-match": one }))).toEqual([412, "PreconditionFailed"]);
    expect(await outcome(await put(key, "x", { "if-none-match": "*" }))).toEqual([412, "PreconditionFailed"]);
    await s3ok(key, { method: "DELETE" }, 204);
    expect(await outcome(await put(key, "x", { "if-match": "*" }))).toEqual([404, "NoSuchKey"]);
    expect(await outcome(await put(key, "x", { "if-match": one }))).toEqual([404, "NoSuchKey"]);
    const created = await put(key, "three", { "if-none-match": "*" });
    expect(created.status).toBe(200);
    expect(created.headers.get("x-amz-version-id")).toMatch(/./);
    expect(await (await s3ok(key)).text()).toBe("three");
  });

  it("CompleteMultipartUpload: If-Match over a delete marker is 404 NoSuchKey, If-None-Match: * completes", async () => {
    const key = "mpu-doc.bin";
    await s3ok(`/${versioned}/${key}`, { method: "PUT", body: "old" });
    await s3ok(`/${versioned}/${key}`, { method: "DELETE" }, 204);
    const upload = await uploadWithPart(versioned, key, randomBytes(1000, 70));
    expect(await outcome(await complete(versioned, key, upload, { "if-match": "*" }))).toEqual([404, "NoSuchKey"]);
    expect(await uploadOpen(versioned, key, upload.uploadId)).toBe(true);
    const done = await complete(versioned, key, upload, { "if-none-match": "*" });
    expect(done.status).toBe(200);
    expect(done.headers.get("x-amz-version-id")).toMatch(/./);
  });
});

describe("a bucket that never had versioning", () => {
  it("PutObject, CopyObject and CompleteMultipartUpload answer without x-amz-version-id, nor do GET, HEAD and GetObjectAttributes", async () => {
    const putRes = await s3ok(`/${bucket}/plain.txt`, { method: "PUT", body: "plain" });
    expect(putRes.headers.has("x-amz-version-id")).toBe(false);
    for (const read of [{}, { method: "HEAD" }]) expect((await s3ok(`/${bucket}/plain.txt`, read)).headers.has("x-amz-version-id")).toBe(false);
    const attributes = await s3ok(`/${bucket}/plain.txt?attributes`, { headers: { "x-amz-object-attributes": "ETag" } });
    expect(attributes.headers.has("x-amz-version-id")).toBe(false);
    const copyRes = await s3ok(`/${bucket}/plain-copy.txt`, { method: "PUT", headers: { "x-amz-copy-source": `/${bucket}/plain.txt` } });
    expect(copyRes.headers.has("x-amz-version-id")).toBe(false);
    const upload = await uploadWithPart(bucket, "plain-mpu.bin", randomBytes(1000, 80));
    const done = await complete(bucket, "plain-mpu.bin", upload);
    expect(done.status).toBe(200);
    expect(done.headers.has("x-amz-version-id")).toBe(false);
    expect(await done.text()).not.toContain("VersionId");
  });
});

describe("who may write conditionally", () => {
  const permBucket = "cond-writes-perm";
  type Key = { id: string; secret: string };
  const admin = (method: string, path: string, body?: unknown) =>
    s3(`/_shardgate/admin${path}`, { method, ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }) });
  async function keyWith(rights: { read?: boolean; write?: boolean }): Promise<Key> {
    const key = (await (await admin("POST", "/keys", { name: `cond ${JSON.stringify(rights)}` })).json()) as Key;
    expect((await admin("PUT", `/keys/${key.id}/buckets/${permBucket}`, rights)).status).toBe(200);
    return key;
  }
  const as = (key: Key) => {
    const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
    return async (path: string, init: RequestInit = {}) => exports.default.fetch(await client.sign(`${GATEWAY}${path}`, init));
  };
  beforeAll(async () => {
    await s3ok(`/${permBucket}`, { method: "PUT" });
    await s3ok(`/${permBucket}/k.txt`, { method: "PUT", body: "kept" });
  });

  it("If-Match needs the read right (s3:GetObject) besides write, as S3 asks; If-None-Match: * needs write only", async () => {
    const etag = await etagOf(`/${permBucket}/k.txt`);
    const writeOnly = as(await keyWith({ write: true }));
    const putAs = async (path: string, headers: Record<string, string>) => outcome(await writeOnly(path, { method: "PUT", body: "x", headers }));
    for (const ifMatch of [etag, "*", '"abc"']) {
      expect(await putAs(`/${permBucket}/k.txt`, { "if-match": ifMatch })).toEqual([403, "AccessDenied"]);
      expect(await putAs(`/${permBucket}/none.txt`, { "if-match": ifMatch })).toEqual([403, "AccessDenied"]);
    }
    const copy = { "x-amz-copy-source": `/${permBucket}/k.txt` };
    expect(await outcome(await writeOnly(`/${permBucket}/c.txt`, { method: "PUT", headers: { ...copy, "if-match": "*" } }))).toEqual([403, "AccessDenied"]);
    expect(await putAs(`/${permBucket}/k.txt`, { "if-none-match": "*" })).toEqual([412, "PreconditionFailed"]);
    expect((await writeOnly(`/${permBucket}/new.txt`, { method: "PUT", body: "x", headers: { "if-none-match": "*" } })).status).toBe(200);
    const upload = await uploadWithPart(permBucket, "mpu.bin", randomBytes(1000, 90));
    const body = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${upload.etag}</ETag></Part></CompleteMultipartUpload>`;
    const completeAs = (headers: Record<string, string>) => writeOnly(`/${permBucket}/mpu.bin?uploadId=${upload.uploadId}`, { method: "POST", body, headers });
    expect(await outcome(await completeAs({ "if-match": "*" }))).toEqual([403, "AccessDenied"]);
    expect((await completeAs({ "if-none-match": "*" })).status).toBe(200);
    expect(await (await s3ok(`/${permBucket}/k.txt`)).text()).toBe("kept");

    const readWrite = as(await keyWith({ read: true, write: true }));
    expect(await outcome(await readWrite(`/${permBucket}/none.txt`, { method: "PUT", body: "x", headers: { "if-match": "*" } }))).toEqual([404, "NoSuchKey"]);
    expect((await readWrite(`/${permBucket}/k.txt`, { method: "PUT", body: "new", headers: { "if-match": etag } })).status).toBe(200);
  });

  it("an anonymous writer that a policy lets PutObject (not GetObject): If-Match refused (403), If-None-Match: * allowed", async () => {
    const policy = {
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:PutObject", Resource: `arn:aws:s3:::${permBucket}/public/*` }],
    };
    await s3ok(`/${permBucket}?policy`, { method: "PUT", body: JSON.stringify(policy) }, 204);
    const anonymous = (path: string, headers: Record<string, string>) =>
      exports.default.fetch(new Request(`${GATEWAY}${path}`, { method: "PUT", body: "anon", headers }));
    expect((await anonymous(`/${permBucket}/public/a.txt`, { "if-none-match": "*" })).status).toBe(200);
    expect(await outcome(await anonymous(`/${permBucket}/public/a.txt`, { "if-match": "*" }))).toEqual([403, "AccessDenied"]);
    expect(await outcome(await anonymous(`/${permBucket}/public/a.txt`, { "if-none-match": "*" }))).toEqual([412, "PreconditionFailed"]);
  });
});
