// End to end with the AWS SDK for JavaScript v3 beyond single PUTs: @aws-sdk/lib-storage's
// `Upload` of stream bodies (multipart, each part aws-chunked with a CRC32 trailer, the SDK's
// default), a create-only PUT race, conditional writes (IfMatch / IfNoneMatch on PutObject,
// CopyObject and CompleteMultipartUpload, racing writers), CopyObject, DeleteObjects and aborting
// an upload.
import { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { AwsClient } from "aws4fetch";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";

const gateway = new Gateway();
let s3: S3Client;
const MIB = 1 << 20;
const bucket = "sdk-multipart";

beforeAll(async () => {
  await gateway.start();
  s3 = new S3Client({ endpoint: gateway.base, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
}, 90_000);
afterAll(() => gateway.dispose());

async function getBytes(key: string): Promise<Uint8Array> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const md5 = (b: Uint8Array) => createHash("md5").update(b).digest();

/** A stream of `data` in uneven pieces, as a file or network source would deliver it. */
function streamOf(data: Uint8Array): Readable {
  let at = 0;
  return new Readable({
    read() {
      if (at >= data.length) return void this.push(null);
      const n = 50_000 + ((at / 7) % 300_000);
      this.push(Buffer.from(data.subarray(at, at + n)));
      at += n;
    },
  });
}

async function s3Error(p: Promise<unknown>): Promise<{ name: string; status: number | undefined }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof S3ServiceException) return { name: e.name, status: e.$metadata.httpStatusCode };
    throw e;
  }
  throw new Error("expected an S3 error");
}

describe("lib-storage Upload", () => {
  it("uploads a 37 MiB stream as multipart (5 MiB parts, 4 in flight) and reads it back byte for byte", async () => {
    const data = randomBytes(37 * MIB + 4321, 1);
    const parts: number[] = [];
    const upload = new Upload({
      client: s3,
      params: { Bucket: bucket, Key: "stream/big.bin", Body: streamOf(data), ContentType: "application/x-big" },
      partSize: 5 * MIB,
      queueSize: 4,
    });
    upload.on("httpUploadProgress", (p) => {
      if (p.part !== undefined) parts.push(p.part);
    });
    const result = await upload.done();
    const count = Math.ceil(data.length / (5 * MIB));
    expect(new Set(parts).size).toBe(count);
    // S3's multipart ETag: md5 of the parts' md5s, then "-" and the number of parts.
    const partMd5s = Buffer.concat(Array.from({ length: count }, (_, i) => md5(data.subarray(i * 5 * MIB, (i + 1) * 5 * MIB))));
    const etag = `"${createHash("md5").update(partMd5s).digest("hex")}-${count}"`;
    expect(result.ETag).toBe(etag);
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "stream/big.bin" }));
    expect(head).toMatchObject({ ContentLength: data.length, ContentType: "application/x-big", ETag: etag });
    expect(sha256(await getBytes("stream/big.bin"))).toBe(sha256(data));
    const part3 = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "stream/big.bin", PartNumber: 3 }));
    expect(part3.PartsCount).toBe(count);
    expect(sha256(await (part3.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toBe(
      sha256(data.subarray(10 * MIB, 15 * MIB)),
    );
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).toEqual([]);
  }, 120_000);

  it("uploads a stream smaller than a part with one PutObject", async () => {
    const data = randomBytes(3 * MIB + 1, 2);
    const result = await new Upload({ client: s3, params: { Bucket: bucket, Key: "stream/small.bin", Body: streamOf(data) }, partSize: 5 * MIB }).done();
    expect(result.ETag).toBe(`"${md5(data).toString("hex")}"`);
    expect(sha256(await getBytes("stream/small.bin"))).toBe(sha256(data));
  });
});

describe("the rest of a client's day", () => {
  it("a create-only PUT race: of 6 writers exactly one wins, and its bytes are stored", async () => {
    const bodies = Array.from({ length: 6 }, (_, i) => randomBytes(MIB + i, 100 + i));
    const results = await Promise.allSettled(
      bodies.map((Body) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: "race/once.bin", Body, IfNoneMatch: "*" }))),
    );
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
    expect(won).toHaveLength(1);
    for (const r of results) {
      if (r.status === "rejected") expect(r.reason).toMatchObject({ name: "PreconditionFailed", $metadata: { httpStatusCode: 412 } });
    }
    expect(sha256(await getBytes("race/once.bin"))).toBe(sha256(bodies[won[0]]));
  });

  it("copies an object (a multipart one too), then deletes a batch of keys", async () => {
    await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: "copies/big.bin", CopySource: `${bucket}/stream/big.bin` }));
    await s3.send(
      new CopyObjectCommand({
        Bucket: bucket,
        Key: "copies/small.bin",
        CopySource: `${bucket}/stream/small.bin`,
        MetadataDirective: "REPLACE",
        Metadata: { note: "copied" },
      }),
    );
    expect(sha256(await getBytes("copies/big.bin"))).toBe(sha256(await getBytes("stream/big.bin")));
    expect((await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "copies/small.bin" }))).Metadata).toEqual({ note: "copied" });

    const res = await s3.send(
      new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: [{ Key: "copies/big.bin" }, { Key: "copies/small.bin" }, { Key: "copies/never" }] } }),
    );
    expect((res.Deleted ?? []).map((d) => d.Key).sort()).toEqual(["copies/big.bin", "copies/never", "copies/small.bin"]);
    expect(res.Errors ?? []).toEqual([]);
    expect((await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "copies/" }))).KeyCount).toBe(0);
  }, 60_000);

  it("aborts an upload: its parts are gone and completing it fails", async () => {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "aborted.bin" }));
    await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "aborted.bin", UploadId, PartNumber: 1, Body: randomBytes(MIB, 3) }));
    const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    expect(listed.Uploads?.map((u) => [u.Key, u.UploadId])).toEqual([["aborted.bin", UploadId]]);
    await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: "aborted.bin", UploadId }));
    expect(await s3Error(s3.send(new UploadPartCommand({ Bucket: bucket, Key: "aborted.bin", UploadId, PartNumber: 2, Body: "x" })))).toMatchObject({
      name: "NoSuchUpload",
      status: 404,
    });
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).toEqual([]);
  });
});

describe("conditional writes with the JS SDK (IfMatch, IfNoneMatch)", () => {
  const put = (Key: string, Body: Uint8Array | string, cond: { IfMatch?: string; IfNoneMatch?: string }) =>
    s3.send(new PutObjectCommand({ Bucket: bucket, Key, Body, ...cond }));

  async function uploadOnePart(Key: string, Body: Uint8Array): Promise<{ UploadId: string; ETag: string }> {
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key }));
    const { ETag } = await s3.send(new UploadPartCommand({ Bucket: bucket, Key, UploadId, PartNumber: 1, Body }));
    return { UploadId: UploadId as string, ETag: ETag as string };
  }
  const complete = (Key: string, up: { UploadId: string; ETag: string }, cond: { IfMatch?: string; IfNoneMatch?: string }) =>
    s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key,
        UploadId: up.UploadId,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: up.ETag }] },
        ...cond,
      }),
    );

  it("PutObject and CopyObject with IfMatch over no object: NoSuchKey 404; with another ETag: PreconditionFailed 412; with the ETag: written", async () => {
    expect(await s3Error(put("cond/none.txt", "x", { IfMatch: "*" }))).toEqual({ name: "NoSuchKey", status: 404 });
    expect(await s3Error(put("cond/none.txt", "x", { IfMatch: '"abc"' }))).toEqual({ name: "NoSuchKey", status: 404 });
    const { ETag } = await put("cond/one.txt", "one", { IfNoneMatch: "*" });
    expect(await s3Error(put("cond/one.txt", "x", { IfNoneMatch: "*" }))).toEqual({ name: "PreconditionFailed", status: 412 });
    expect(await s3Error(put("cond/one.txt", "x", { IfMatch: '"abc"' }))).toEqual({ name: "PreconditionFailed", status: 412 });
    await put("cond/one.txt", "two", { IfMatch: ETag });
    const copy = (Key: string, cond: { IfMatch?: string; IfNoneMatch?: string }) =>
      s3.send(new CopyObjectCommand({ Bucket: bucket, Key, CopySource: `${bucket}/cond/one.txt`, ...cond }));
    expect(await s3Error(copy("cond/copy.txt", { IfMatch: "*" }))).toEqual({ name: "NoSuchKey", status: 404 });
    await copy("cond/copy.txt", { IfNoneMatch: "*" });
    expect(await s3Error(copy("cond/copy.txt", { IfNoneMatch: "*" }))).toEqual({ name: "PreconditionFailed", status: 412 });
  });

  it("eight racing PutObject calls with IfMatch on one ETag: exactly one wins, seven PreconditionFailed, the winner's bytes read back", async () => {
    const { ETag } = await put("cond/race.bin", "base", {});
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(MIB + i, 200 + i));
    const results = await Promise.allSettled(bodies.map((Body) => put("cond/race.bin", Body, { IfMatch: ETag })));
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === "rejected") expect(r.reason).toMatchObject({ name: "PreconditionFailed", $metadata: { httpStatusCode: 412 } });
    expect(sha256(await getBytes("cond/race.bin"))).toBe(sha256(bodies[won[0]]));
  });

  it("CompleteMultipartUpload: IfMatch over no object is NoSuchKey and leaves the upload; eight racing completes with IfNoneMatch: * have one winner", async () => {
    const lone = await uploadOnePart("cond/mpu.bin", randomBytes(1000, 300));
    expect(await s3Error(complete("cond/mpu.bin", lone, { IfMatch: "*" }))).toEqual({ name: "NoSuchKey", status: 404 });
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(64 * 1024 + i, 310 + i));
    const uploads = await Promise.all(bodies.map((b) => uploadOnePart("cond/mpu.bin", b)));
    const results = await Promise.allSettled(uploads.map((u) => complete("cond/mpu.bin", u, { IfNoneMatch: "*" })));
    const won = results.flatMap((r, i) => (r.status === "fulfilled" ? [i] : []));
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === "rejected") expect(r.reason).toMatchObject({ name: "PreconditionFailed", $metadata: { httpStatusCode: 412 } });
    expect(sha256(await getBytes("cond/mpu.bin"))).toBe(sha256(bodies[won[0]]));
    // The refused upload is still there: completed with the current ETag it wins.
    const { ETag } = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "cond/mpu.bin" }));
    await complete("cond/mpu.bin", lone, { IfMatch: ETag });
    for (const [i, u] of uploads.entries())
      if (i !== won[0]) await s3.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: "cond/mpu.bin", UploadId: u.UploadId }));
  });
  it("over HTTP as npm start serves it: a 216 KB If-Match list is decided like any (412, and 200 with the ETag last), an empty If-Match is no condition", async () => {
    const signer = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    const send = async (key: string, body: string, headers: Record<string, string>) => {
      const res = await signer.fetch(`${gateway.base}/${bucket}/${key}`, { method: "PUT", body, headers });
      return [res.status, /<Code>([^<]*)</.exec(await res.text())?.[1] ?? null];
    };
    const { ETag } = await put("cond/http.txt", "one", {});
    const huge = Array.from({ length: 6000 }, (_, i) => `"${i.toString(16).padStart(32, "0")}"`).join(", ");
    expect(await send("cond/http.txt", "x", { "if-match": huge })).toEqual([412, "PreconditionFailed"]);
    expect(await send("cond/http-none.txt", "x", { "if-match": huge })).toEqual([404, "NoSuchKey"]);
    expect(await send("cond/http.txt", "two", { "if-match": `${huge}, ${ETag}` })).toEqual([200, null]);
    expect(await send("cond/http.txt", "three", { "if-match": "" })).toEqual([200, null]);
    expect(sha256(await getBytes("cond/http.txt"))).toBe(sha256(new TextEncoder().encode("three")));
  });
});
