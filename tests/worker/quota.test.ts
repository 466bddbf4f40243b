// Bucket quotas (issue #33, meta/quota.ts, api/admin/quota.ts): a hard limit on a bucket's bytes and
// objects, set through the admin API, enforced in the commit's transaction (403 QuotaExceeded, the
// write rolled back whole: nothing visible, its shard files collected, an upload left to retry or
// abort); usage exact through overwrites, deletes, versions, delete markers, multipart uploads and
// copies; of racing writers exactly as many win as fit. Hostile quota input is refused with
// nothing changed. In workerd with real Durable Objects and R2 nodes.
import { AwsClient } from "aws4fetch";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { shardFiles } from "./nodes";
import { GATEWAY, s3, s3ok } from "./signed";

type Answer = {
  bucket: string;
  quota: { maxBytes: number | null; maxObjects: number | null } | null;
  usage: { bytes: number; objects: number; pending: number };
};

const code = (xml: string) => /<Code>([^<]*)<\/Code>/.exec(xml)?.[1];
const VERSIONED = `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`;

async function admin(method: string, path: string, body?: unknown): Promise<Response> {
  return s3(`/_shardgate/admin${path}`, {
    method,
    ...(body === undefined ? {} : { headers: { "content-type": "application/json" }, body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
}

async function setQuota(bucket: string, quota: { maxBytes?: number | null; maxObjects?: number | null }): Promise<Answer> {
  const res = await admin("PUT", `/buckets/${bucket}/quota`, quota);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Answer;
}

/** The bucket's usage: stored bytes and objects (uploads in progress: `pending`, checked where it matters). */
async function usage(bucket: string): Promise<Omit<Answer["usage"], "pending">> {
  const { pending: _, ...stored } = ((await (await admin("GET", `/buckets/${bucket}/quota`)).json()) as Answer).usage;
  return stored;
}

async function pending(bucket: string): Promise<number> {
  return ((await (await admin("GET", `/buckets/${bucket}/quota`)).json()) as Answer).usage.pending;
}

/** A PUT's status and error code (null for a success). */
async function put(path: string, body: BodyInit, headers: Record<string, string> = {}): Promise<[number, string | null]> {
  const res = await s3(path, { method: "PUT", body, headers });
  const text = await res.text();
  return [res.status, res.ok ? null : (code(text) ?? null)];
}

async function newBucket(name: string, versioned = false): Promise<void> {
  await s3ok(`/${name}`, { method: "PUT" });
  if (versioned) await s3ok(`/${name}?versioning`, { method: "PUT", body: VERSIONED });
}

describe("bucket quotas", () => {
  beforeAll(async () => {
    for (const name of ["q-bytes", "q-objects", "q-multipart", "q-race", "q-admin"]) await newBucket(name);
    await newBucket("q-versions", true);
  });

  it("a byte quota refuses the write that would exceed it (403 QuotaExceeded), nothing visible; overwrites count only their growth", async () => {
    const answer = await setQuota("q-bytes", { maxBytes: 1000 });
    expect(answer.quota).toEqual({ maxBytes: 1000, maxObjects: null });
    expect(await put("/q-bytes/a", "a".repeat(600))).toEqual([200, null]);
    expect(await put("/q-bytes/b", "b".repeat(500))).toEqual([403, "QuotaExceeded"]);
    expect((await s3("/q-bytes/b", { method: "HEAD" })).status).toBe(404);
    expect(await usage("q-bytes")).toEqual({ bytes: 600, objects: 1 });
    // An overwrite frees what it replaces (unversioned): 600 → 1000 fits, 1001 does not.
    expect(await put("/q-bytes/a", "a".repeat(1000))).toEqual([200, null]);
    expect(await put("/q-bytes/a", "a".repeat(1001))).toEqual([403, "QuotaExceeded"]);
    expect((await (await s3ok("/q-bytes/a")).text()).length).toBe(1000);
    // A delete frees its bytes; then the write that was refused fits.
    await s3ok("/q-bytes/a", { method: "DELETE" }, 204);
    expect(await usage("q-bytes")).toEqual({ bytes: 0, objects: 0 });
    expect(await put("/q-bytes/b", "b".repeat(500))).toEqual([200, null]);
  });

  it("a lowered quota stops growth only: a smaller overwrite and deletes still pass", async () => {
    await s3ok("/q-bytes/c", { method: "PUT", body: "c".repeat(400) });
    await setQuota("q-bytes", { maxBytes: 100 });
    expect(await put("/q-bytes/c", "c".repeat(300))).toEqual([200, null]);
    expect(await put("/q-bytes/d", "d")).toEqual([403, "QuotaExceeded"]);
    expect(await usage("q-bytes")).toEqual({ bytes: 800, objects: 2 });
    await admin("DELETE", "/buckets/q-bytes/quota");
    expect(await put("/q-bytes/d", "d")).toEqual([200, null]);
  });

  it("an object quota counts keys; an overwrite at the limit adds none", async () => {
    await setQuota("q-objects", { maxObjects: 2 });
    expect(await put("/q-objects/1", "1")).toEqual([200, null]);
    expect(await put("/q-objects/2", "2")).toEqual([200, null]);
    expect(await put("/q-objects/3", "3")).toEqual([403, "QuotaExceeded"]);
    expect(await put("/q-objects/2", "two")).toEqual([200, null]);
    // A copy to a new key is a new object too.
    const copy = await s3("/q-objects/copy", { method: "PUT", headers: { "x-amz-copy-source": "/q-objects/1" } });
    expect(copy.status).toBe(403);
    expect(code(await copy.text())).toBe("QuotaExceeded");
    expect(await usage("q-objects")).toEqual({ bytes: 4, objects: 2 });
  });

  it("versions count until deleted; delete markers do not", async () => {
    await setQuota("q-versions", { maxBytes: 1000 });
    expect(await put("/q-versions/k", "v".repeat(400))).toEqual([200, null]);
    expect(await put("/q-versions/k", "w".repeat(400))).toEqual([200, null]);
    expect(await usage("q-versions")).toEqual({ bytes: 800, objects: 2 });
    // A new version is new bytes even over the same key.
    expect(await put("/q-versions/k", "x".repeat(400))).toEqual([403, "QuotaExceeded"]);
    const marker = await s3("/q-versions/k", { method: "DELETE" });
    expect(marker.headers.get("x-amz-delete-marker")).toBe("true");
    expect(await usage("q-versions")).toEqual({ bytes: 800, objects: 2 });
    const listed = await (await s3ok("/q-versions?versions")).text();
    const ids = [...listed.matchAll(/<Version>.*?<VersionId>([^<]+)<\/VersionId>/g)].map((m) => m[1]);
    expect(ids).toHaveLength(2);
    await s3ok(`/q-versions/k?versionId=${ids[0]}`, { method: "DELETE" }, 204);
    expect(await usage("q-versions")).toEqual({ bytes: 400, objects: 1 });
    expect(await put("/q-versions/k", "y".repeat(400))).toEqual([200, null]);
  });

  it("counts the parts of uploads in progress: a part past the quota is refused (the upload stays), a completion turns them into the object's bytes", async () => {
    await setQuota("q-multipart", { maxBytes: 500_000 });
    const uploadId = /<UploadId>([^<]+)</.exec(await (await s3ok("/q-multipart/big?uploads", { method: "POST" })).text())?.[1] as string;
    const part = (n: number, size: number) => s3(`/q-multipart/big?partNumber=${n}&uploadId=${uploadId}`, { method: "PUT", body: randomBytes(size, n) });
    const first = await part(1, 400_000);
    expect(first.status).toBe(200);
    expect(await pending("q-multipart")).toBe(400_000);
    // A second part would keep 800,000 bytes on the nodes: refused, and the upload goes on.
    const second = await part(2, 400_000);
    expect(second.status).toBe(403);
    expect(code(await second.text())).toBe("QuotaExceeded");
    expect(await pending("q-multipart")).toBe(400_000);
    // The same part again replaces it: it grows nothing.
    const again = await part(1, 400_000);
    expect(again.status).toBe(200);
    const complete = `<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>${again.headers.get("etag")}</ETag></Part></CompleteMultipartUpload>`;
    // Completing grows nothing either (its parts become its bytes), even under a quota lowered meanwhile.
    await setQuota("q-multipart", { maxBytes: 100_000 });
    await s3ok(`/q-multipart/big?uploadId=${uploadId}`, { method: "POST", body: complete });
    expect(await usage("q-multipart")).toEqual({ bytes: 400_000, objects: 1 });
    expect(await pending("q-multipart")).toBe(0);
    // An aborted upload frees its parts.
    await setQuota("q-multipart", { maxBytes: 1_000_000 });
    const other = /<UploadId>([^<]+)</.exec(await (await s3ok("/q-multipart/other?uploads", { method: "POST" })).text())?.[1] as string;
    await s3ok(`/q-multipart/other?partNumber=1&uploadId=${other}`, { method: "PUT", body: randomBytes(300_000, 9) });
    expect(await pending("q-multipart")).toBe(300_000);
    await s3ok(`/q-multipart/other?uploadId=${other}`, { method: "DELETE" }, 204);
    expect(await pending("q-multipart")).toBe(0);
  });

  it("of eight racing writers exactly as many win as fit, and the refused ones' shard files are collected", async () => {
    await setQuota("q-race", { maxBytes: 3 * 300_000 });
    const before = (await shardFiles()).size;
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(300_000, 100 + i));
    const results = await Promise.all(bodies.map((b, i) => put(`/q-race/k${i}`, b)));
    expect(results.filter(([s]) => s === 200)).toHaveLength(3);
    expect(results.filter(([s, c]) => s === 403 && c === "QuotaExceeded")).toHaveLength(5);
    expect(await usage("q-race")).toEqual({ bytes: 900_000, objects: 3 });
    // Each stored object keeps its k + m = 6 shard files (wrangler.toml: 4 + 2); the refused ones'
    // are collected after their answers.
    await expect.poll(async () => (await shardFiles()).size - before, { timeout: 10_000 }).toBe(3 * 6);
  });

  it("refuses hostile quota input with nothing changed, and answers only the root key", async () => {
    await setQuota("q-admin", { maxBytes: 10, maxObjects: 5 });
    const bad: unknown[] = [
      { maxBytes: -1 },
      { maxBytes: 1.5 },
      { maxBytes: "10" },
      { maxBytes: 2 ** 53 },
      { maxObjects: true },
      { maxBytez: 1 },
      [1, 2],
      "not json",
      JSON.stringify({ maxBytes: 1, pad: "x".repeat(20_000) }),
    ];
    for (const body of bad) {
      const res = await admin("PUT", "/buckets/q-admin/quota", body);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(code(await res.text())).toBe("InvalidArgument");
    }
    const answer = (await (await admin("GET", "/buckets/q-admin/quota")).json()) as Answer;
    expect(answer.quota).toEqual({ maxBytes: 10, maxObjects: 5 });
    const missing = await admin("GET", "/buckets/no-such-bucket-here/quota");
    expect(missing.status).toBe(404);
    expect(code(await missing.text())).toBe("NoSuchBucket");
    const badName = await admin("PUT", "/buckets/Bad..Name/quota", { maxBytes: 1 });
    expect(badName.status).toBe(400);
    expect(code(await badName.text())).toBe("InvalidBucketName");
    // An access key that owns the bucket still may not change its quota: the admin API is the root key's.
    const key = (await (await admin("POST", "/keys", { name: "quota owner" })).json()) as { id: string; secret: string };
    await admin("PUT", `/keys/${key.id}/buckets/q-admin`, { read: true, write: true, owner: true });
    const client = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1" });
    const denied = await exports.default.fetch(await client.sign(`${GATEWAY}/_shardgate/admin/buckets/q-admin/quota`, { method: "PUT", body: "{}" }));
    expect(denied.status).toBe(403);
    expect(((await (await admin("GET", "/buckets/q-admin/quota")).json()) as Answer).quota).toEqual({ maxBytes: 10, maxObjects: 5 });
  });
});
