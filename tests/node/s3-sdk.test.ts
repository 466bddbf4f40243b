// End to end with the real AWS SDK for JavaScript v3 (default settings: it signs every request,
// sends CRC32 checksums, and streams bodies as aws-chunked with trailers) against the gateway
// as `npm start` serves it (and, in the "node-dev" project, as `npm run dev` does).
import { Readable } from "node:stream";
import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  GetBucketLocationCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";

const gateway = new Gateway();
let s3: S3Client;
const MIB = 1 << 20;

function client(): S3Client {
  return new S3Client({ endpoint: gateway.base, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
}

beforeAll(async () => {
  await gateway.start();
  s3 = client();
}, 90_000);
afterAll(() => gateway.dispose());

async function getBytes(bucket: string, key: string, range?: string): Promise<Uint8Array> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, Range: range }));
  return await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.length), Buffer.from(b.buffer, b.byteOffset, b.length)) === 0;
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

describe("buckets", () => {
  it("creates, heads, lists, locates and deletes a bucket", async () => {
    await s3.send(new CreateBucketCommand({ Bucket: "sdk-buckets" }));
    await s3.send(new HeadBucketCommand({ Bucket: "sdk-buckets" }));
    const list = await s3.send(new ListBucketsCommand({}));
    expect(list.Buckets?.map((b) => b.Name)).toContain("sdk-buckets");
    const loc = await s3.send(new GetBucketLocationCommand({ Bucket: "sdk-buckets" }));
    expect(loc.LocationConstraint ?? "").toBe("");
    expect(await s3Error(s3.send(new CreateBucketCommand({ Bucket: "sdk-buckets" })))).toMatchObject({ name: "BucketAlreadyOwnedByYou", status: 409 });
    await s3.send(new PutObjectCommand({ Bucket: "sdk-buckets", Key: "x", Body: "x" }));
    expect(await s3Error(s3.send(new DeleteBucketCommand({ Bucket: "sdk-buckets" })))).toMatchObject({ name: "BucketNotEmpty", status: 409 });
    await s3.send(new DeleteObjectCommand({ Bucket: "sdk-buckets", Key: "x" }));
    await s3.send(new DeleteBucketCommand({ Bucket: "sdk-buckets" }));
    expect(await s3Error(s3.send(new HeadBucketCommand({ Bucket: "sdk-buckets" })))).toMatchObject({ status: 404 });
  });

  it("refuses invalid bucket names", async () => {
    for (const name of ["ab", "Upper", "-dash", "a..b", "192.168.1.1"]) {
      expect(await s3Error(s3.send(new CreateBucketCommand({ Bucket: name })))).toMatchObject({ name: "InvalidBucketName", status: 400 });
    }
  });
});

describe("objects", () => {
  const bucket = "sdk-objects";
  beforeAll(async () => {
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });

  // Around the inline threshold (4 KiB), piece (256 KiB), chunk (16 KiB) and block (1 MiB) edges.
  const sizes = [0, 1, 4096, 4097, 16383, 262145, MIB - 1, MIB, MIB + 1, 5 * MIB + 12345];

  it.each(sizes)(
    "round-trips %i bytes from a buffer body, full and ranged",
    async (size) => {
      const data = randomBytes(size, size + 11);
      const key = `sizes/buffer-${size}.bin`;
      const put = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: data }));
      expect(put.ETag).toMatch(/^"[0-9a-f]{32}"$/);
      expect(sameBytes(await getBytes(bucket, key), data)).toBe(true);
      if (size > 0) {
        for (let i = 0; i < 4; i++) {
          const a = Math.floor((((i * 7919) % 997) / 997) * size);
          const b = Math.min(size - 1, a + Math.floor(size / (i + 2)));
          expect(sameBytes(await getBytes(bucket, key, `bytes=${a}-${b}`), data.subarray(a, b + 1))).toBe(true);
        }
        expect(sameBytes(await getBytes(bucket, key, "bytes=-100"), data.subarray(Math.max(0, size - 100)))).toBe(true);
      }
    },
    60_000,
  );

  it("round-trips a 40 MiB stream body (aws-chunked with a CRC32 trailer)", async () => {
    const data = randomBytes(40 * MIB + 3, 40);
    const body = Readable.from(
      (function* () {
        for (let i = 0; i < data.length; i += 1_000_003) yield Buffer.from(data.subarray(i, i + 1_000_003));
      })(),
    );
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "big/stream.bin", Body: body, ContentLength: data.length }));
    expect(sameBytes(await getBytes(bucket, "big/stream.bin"), data)).toBe(true);
    const a = 13 * MIB + 777;
    expect(sameBytes(await getBytes(bucket, "big/stream.bin", `bytes=${a}-${a + 3 * MIB}`), data.subarray(a, a + 3 * MIB + 1))).toBe(true);
  }, 120_000);

  it("keeps content headers and user metadata, and answers conditional requests", async () => {
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: "meta/hello.txt",
        Body: "hello, world",
        ContentType: "text/plain; charset=utf-8",
        ContentDisposition: 'attachment; filename="hello.txt"',
        CacheControl: "max-age=60",
        Metadata: { colour: "blue", "with-dash": "yes" },
      }),
    );
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "meta/hello.txt" }));
    expect(head).toMatchObject({
      ContentLength: 12,
      ContentType: "text/plain; charset=utf-8",
      ContentDisposition: 'attachment; filename="hello.txt"',
      CacheControl: "max-age=60",
      Metadata: { colour: "blue", "with-dash": "yes" },
      ETag: put.ETag,
    });
    expect(await s3Error(s3.send(new GetObjectCommand({ Bucket: bucket, Key: "meta/hello.txt", IfNoneMatch: put.ETag })))).toMatchObject({ status: 304 });
    expect(await s3Error(s3.send(new GetObjectCommand({ Bucket: bucket, Key: "meta/hello.txt", IfMatch: '"0000"' })))).toMatchObject({
      name: "PreconditionFailed",
      status: 412,
    });
    const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "meta/hello.txt", ResponseContentType: "application/x-custom" }));
    expect(got.ContentType).toBe("application/x-custom");
  });

  it("answers 416 for an unsatisfiable range and 404 for missing keys and buckets", async () => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "small", Body: "abc" }));
    expect(await s3Error(getBytes(bucket, "small", "bytes=10-20"))).toMatchObject({ name: "InvalidRange", status: 416 });
    expect(await s3Error(getBytes(bucket, "nope"))).toMatchObject({ name: "NoSuchKey", status: 404 });
    expect(await s3Error(getBytes("no-such-bucket", "x"))).toMatchObject({ name: "NoSuchBucket", status: 404 });
  });

  it("overwrites and deletes (idempotently)", async () => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "ow", Body: randomBytes(2 * MIB, 1) }));
    const second = randomBytes(3 * MIB + 5, 2);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "ow", Body: second }));
    expect(sameBytes(await getBytes(bucket, "ow"), second)).toBe(true);
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "ow" }));
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "ow" }));
    expect(await s3Error(getBytes(bucket, "ow"))).toMatchObject({ name: "NoSuchKey" });
  });

  it("lists with prefixes, delimiters and pagination (v2 and v1)", async () => {
    const keys: string[] = [];
    for (let d = 0; d < 6; d++) for (let f = 0; f < 40; f++) keys.push(`tree/dir${d}/file${String(f).padStart(3, "0")}.txt`);
    keys.push("tree/top.txt");
    for (let i = 0; i < keys.length; i += 24) {
      await Promise.all(keys.slice(i, i + 24).map((k) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: k, Body: k }))));
    }
    const top = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "tree/", Delimiter: "/" }));
    expect(top.CommonPrefixes?.map((p) => p.Prefix)).toEqual([0, 1, 2, 3, 4, 5].map((d) => `tree/dir${d}/`));
    expect(top.Contents?.map((o) => o.Key)).toEqual(["tree/top.txt"]);
    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "tree/", MaxKeys: 37, ContinuationToken: token }));
      seen.push(...(page.Contents ?? []).map((o) => o.Key as string));
      token = page.NextContinuationToken;
      expect(page.IsTruncated).toBe(token !== undefined);
    } while (token);
    expect(seen).toEqual([...keys].sort());
    const v1 = await s3.send(new ListObjectsCommand({ Bucket: bucket, Prefix: "tree/dir1/", MaxKeys: 10, Marker: "tree/dir1/file004.txt" }));
    expect(v1.Contents?.[0]?.Key).toBe("tree/dir1/file005.txt");
    expect(v1.IsTruncated).toBe(true);
  }, 120_000);

  it("refuses a wrong secret, and unsupported operations by name", async () => {
    const bad = new S3Client({ endpoint: gateway.base, region: "us-east-1", forcePathStyle: true, credentials: { ...CREDENTIALS, secretAccessKey: "wrong" } });
    expect(await s3Error(bad.send(new ListBucketsCommand({})))).toMatchObject({ name: "SignatureDoesNotMatch", status: 403 });
    const res = await fetch(`${gateway.base}/${bucket}?cors`);
    expect(res.status).toBe(403); // anonymous: refused before anything else
  });

  it("keeps objects across a restart of the gateway", async () => {
    const data = randomBytes(3 * MIB + 17, 99);
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "durable.bin", Body: data }));
    await gateway.stop();
    await gateway.start();
    s3 = client();
    expect(sameBytes(await getBytes(bucket, "durable.bin"), data)).toBe(true);
  }, 120_000);
});
