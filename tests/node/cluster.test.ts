// Faults with real separate node processes (`npm run cluster`: the gateway over six versitygw S3
// servers): nodes killed while objects are written and read, and a write with more than m nodes
// down. Every read is compared byte for byte (sha256).
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3ServiceException } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { Cluster, sha256, signal } from "./cluster";

const MIB = 1 << 20;
const c = new Cluster();

beforeAll(async () => {
  await c.start();
  await c.s3.send(new CreateBucketCommand({ Bucket: "chaos" }));
}, 180_000);

afterAll(() => c.stop());

async function getSha(key: string, range?: string): Promise<string> {
  const res = await c.s3.send(new GetObjectCommand({ Bucket: "chaos", Key: key, Range: range }));
  return sha256(await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

describe("the gateway over six versitygw nodes", () => {
  const objects = new Map<string, Uint8Array>();
  let writesAcknowledged = 0;
  let readsVerified = 0;

  it("stores and reads objects with every node up", async () => {
    for (const [i, size] of [100, 300_000, 3 * MIB + 17, 9 * MIB].entries()) {
      const data = randomBytes(size, i + 1);
      await c.s3.send(new PutObjectCommand({ Bucket: "chaos", Key: `obj-${i}`, Body: data }));
      objects.set(`obj-${i}`, data);
      writesAcknowledged += 1;
    }
    for (const [key, data] of objects) {
      expect(await getSha(key)).toBe(sha256(data));
      readsVerified += 1;
    }
    expect(c.info.nodes.reduce((n, node) => n + c.shardFiles(node).length, 0)).toBe(3 * 6);
    // The orphan sweep lists every S3 node (ListObjectsV2) and finds nothing to delete.
    expect(await c.adminJson("/_shardgate/admin/sweep?grace-seconds=0", "POST")).toEqual({
      filesListed: 18,
      orphans: 0,
      removed: 0,
      failed: 0,
      nodesSkipped: [],
    });
    expect(c.info.nodes.reduce((n, node) => n + c.shardFiles(node).length, 0)).toBe(3 * 6);
  }, 120_000);

  it("with one node killed: every read is right, and writes still reach their quorum (5 of 6)", async () => {
    signal(c.info.nodes[0], "SIGKILL");
    const data = randomBytes(2 * MIB + 3, 50);
    await c.s3.send(new PutObjectCommand({ Bucket: "chaos", Key: "written-degraded", Body: data }));
    objects.set("written-degraded", data);
    writesAcknowledged += 1;
    await expectAllReadsRight();
  }, 120_000);

  it("with a second node killed (m = 2 lost): every read, full and ranged, is still right", async () => {
    signal(c.info.nodes[1], "SIGKILL");
    await expectAllReadsRight();
  }, 120_000);

  it("a write with a third node paused (SIGSTOP) fails with 503 within the stall limit, and leaves nothing visible", async () => {
    signal(c.info.nodes[2], "SIGSTOP");
    try {
      const started = Date.now();
      const err = await c.s3.send(new PutObjectCommand({ Bucket: "chaos", Key: "never", Body: randomBytes(MIB, 60) })).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(S3ServiceException);
      expect((err as S3ServiceException).$metadata.httpStatusCode).toBe(503);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      signal(c.info.nodes[2], "SIGCONT");
    }
    const head = await c.s3.send(new HeadObjectCommand({ Bucket: "chaos", Key: "never" })).then(
      () => 200,
      (e: S3ServiceException) => e.$metadata.httpStatusCode,
    );
    expect(head).toBe(404);
    await expectAllReadsRight();
    console.log(JSON.stringify({ faults: "2 nodes killed, 1 paused", writesAcknowledged, readsVerified, wrongBytes: 0 }));
  }, 120_000);

  async function expectAllReadsRight(): Promise<void> {
    for (const [key, bytes] of objects) {
      expect(await getSha(key), key).toBe(sha256(bytes));
      const to = Math.min(bytes.length - 1, 200_000);
      expect(await getSha(key, `bytes=10-${to}`), key).toBe(sha256(bytes.subarray(10, to + 1)));
      readsVerified += 2;
    }
  }
});
