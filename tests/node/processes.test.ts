// `npm start -- --processes 2`: two workerd processes on one listening socket, the second reaching
// the Durable Objects through the first (worker/src/meta/remote.ts, scripts/serve.mjs). With the
// real AWS SDK on a new connection per request, so that both processes serve every kind of call:
// writes, versions, multipart (manifests as bytes), listings, answers that are "missing", errors.
// Admin jobs (the scrub) from either process. And the way in: the metadata socket lives in the
// data directory (0700), answers only the four metadata namespaces' public methods, and is not
// reachable on the S3 port; a second gateway on the same data directory is refused.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { Agent, request } from "node:http";
import { join } from "node:path";
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetBucketPolicyCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  ListObjectsV2Command,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
  type S3ServiceException,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";
import { VersityNode } from "./versity-node";

const gateway = new Gateway({ runtime: "workerd", processes: 2 });
let s3: S3Client;
const MIB = 1 << 20;
const bucket = "two-processes";

/** The gateway's workerd processes (by their config files in its data directory) and their CPU ticks. */
function workerdTicks(): Map<number, number> {
  const ticks = new Map<number, number>();
  for (const pid of readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      if (!cmdline.includes(`${gateway.persist}/workerd`)) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      ticks.set(Number(pid), Number(fields[11]) + Number(fields[12]));
    } catch {
      // gone meanwhile
    }
  }
  return ticks;
}

/** POSTs `body` to the metadata socket: the status and body. */
function metaCall(body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath: join(gateway.persist, "meta.sock"), path: "/", method: "POST", headers: { "content-length": Buffer.byteLength(body) } },
      (res) => {
        let text = "";
        res.on("data", (d: Buffer) => (text += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function bytesOf(key: string, versionId?: string): Promise<Uint8Array> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }));
  return await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
}

beforeAll(async () => {
  await gateway.start();
  // A new connection per request: the kernel hands each to either process.
  s3 = new S3Client({
    endpoint: gateway.base,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: CREDENTIALS,
    requestHandler: { httpAgent: new Agent({ keepAlive: false }) },
  });
}, 120_000);
afterAll(() => gateway.dispose());

describe("two workerd processes on one port", () => {
  it("runs as two workerd processes, and both serve S3 requests", async () => {
    const before = workerdTicks();
    expect(before.size).toBe(2);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    for (let i = 0; i < 40; i++) await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `spread/${i}`, Body: randomBytes(2048 + i, i + 1) }));
    for (let i = 0; i < 40; i++) await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: `spread/${i}` }));
    const after = workerdTicks();
    for (const [pid, ticks] of after) expect(ticks, `workerd ${pid} did no work`).toBeGreaterThan(before.get(pid) ?? 0);
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "spread/" }));
    expect(listed.KeyCount).toBe(40);
  });

  it("keeps versions, multipart uploads and byte-exact bodies whichever process answers", async () => {
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: "Enabled" } }));
    const first = randomBytes(300_000, 101);
    const second = randomBytes(70_000, 102);
    const v1 = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "doc", Body: first }));
    const v2 = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "doc", Body: second }));
    for (let round = 0; round < 4; round++) {
      expect(await bytesOf("doc")).toEqual(second);
      expect(await bytesOf("doc", v1.VersionId)).toEqual(first);
    }
    const versions = await s3.send(new ListObjectVersionsCommand({ Bucket: bucket, Prefix: "doc" }));
    expect(versions.Versions?.map((v) => v.VersionId).sort()).toEqual([v1.VersionId, v2.VersionId].sort());

    const parts = [randomBytes(5 * MIB, 103), randomBytes(MIB + 3, 104)];
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "big" }));
    const etags = [];
    for (const [i, Body] of parts.entries())
      etags.push((await s3.send(new UploadPartCommand({ Bucket: bucket, Key: "big", UploadId, PartNumber: i + 1, Body }))).ETag);
    await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: bucket,
        Key: "big",
        UploadId,
        MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
      }),
    );
    const whole = Buffer.concat(parts);
    for (let round = 0; round < 3; round++) expect(Buffer.from(await bytesOf("big")).equals(whole)).toBe(true);
  });

  it("answers what is missing with S3's errors from either process", async () => {
    for (let round = 0; round < 6; round++) {
      const missing = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "nothing-here" })).catch((e: S3ServiceException) => e);
      expect((missing as S3ServiceException).$metadata.httpStatusCode).toBe(404);
      const policy = await s3.send(new GetBucketPolicyCommand({ Bucket: bucket })).catch((e: S3ServiceException) => e);
      expect((policy as S3ServiceException).name).toBe("NoSuchBucketPolicy");
      const noBucket = await s3.send(new GetObjectCommand({ Bucket: "no-such-bucket-here", Key: "k" })).catch((e: S3ServiceException) => e);
      expect((noBucket as S3ServiceException).name).toBe("NoSuchBucket");
    }
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "spread/0" }));
    const gone = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "spread/0" })).catch((e: S3ServiceException) => e);
    expect((gone as S3ServiceException).$metadata.httpStatusCode).toBe(404);
  });

  it("runs an admin scrub pass from either process", async () => {
    // Unsigned-payload admin requests on a new connection each: both processes get some.
    const admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    for (let round = 0; round < 6; round++) {
      const res = await admin.fetch(`${gateway.base}/_shardgate/admin/scrub?mode=shallow`, { method: "POST", headers: { connection: "close" } });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      const { run } = JSON.parse(text) as { run: { stoppedBy: string; errors?: unknown[] } };
      expect(run.stoppedBy, text).not.toBe("error");
    }
  });

  it("refuses a second gateway on the same data directory, and the first keeps serving", async () => {
    const second = spawnSync(process.execPath, ["scripts/serve.mjs", "--quiet", "--port", "1", "--data-dir", gateway.persist, "--processes", "2"], {
      cwd: new URL("../..", import.meta.url).pathname,
      env: { ...process.env, SHARDGATE_ACCESS_KEY_ID: "", SHARDGATE_SECRET_ACCESS_KEY: "" },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(second.status).toBe(1);
    expect(second.stderr).toContain("another gateway serves"); // its serve.lock is held (a flock, scripts/lib/serve-gateway.mjs)
    for (let i = 0; i < 12; i++) await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "doc" }));
  });

  it("keeps the metadata socket to its owner, to the metadata objects and to their own methods", async () => {
    expect(statSync(gateway.persist).mode & 0o077).toBe(0);
    const call = (namespace: string, method: string, args: unknown[] = [], name = bucket) => metaCall(JSON.stringify({ namespace, name, method, args }));
    // What the other process sends: a bucket's record, through the socket.
    const info = await call("BUCKET_REGISTRY", "get", [bucket], "registry");
    expect(info.status).toBe(200);
    expect(JSON.parse(info.text)).toMatchObject({ name: bucket });
    for (const [namespace, method] of [
      ["JOB_SCHEDULER", "run"], // not a metadata namespace
      ["constructor", "get"],
      ["__proto__", "get"],
      ["BUCKET_INDEX", "fetch"], // what the runtime calls
      ["BUCKET_INDEX", "alarm"],
      ["BUCKET_INDEX", "connect"],
      ["BUCKET_INDEX", "deleteOne"], // private helpers
      ["KEY_STORE", "row"],
      ["BUCKET_REGISTRY", "scrubRow"],
      ["BUCKET_INDEX", "toString"], // inherited
      ["BUCKET_INDEX", "hasOwnProperty"],
      ["BUCKET_INDEX", "constructor"],
      ["BUCKET_INDEX", "__proto__"],
      ["BUCKET_INDEX", "x".repeat(100)],
    ]) {
      const refused = await call(namespace, method, ["doc", null, true]);
      expect(refused.status, `${namespace}.${method}`).toBe(400);
      expect(JSON.parse(refused.text).message).toMatch(/^MetaGate: no (namespace|method)/);
    }
    for (const body of [
      "",
      "{",
      "null",
      "[]",
      '{"namespace":"BUCKET_INDEX","name":1,"method":"info","args":[]}',
      '{"namespace":"BUCKET_INDEX","name":"b","method":"info","args":{}}',
      '"\\u0000x"',
    ]) {
      expect((await metaCall(body)).status, body).toBe(400);
    }
    // The object was not touched by any of it.
    expect(await bytesOf("doc")).toHaveLength(70_000);
    // The S3 port does not serve it: the same request there is an (unsigned) S3 request.
    const s3Port = await fetch(`${gateway.base}/`, {
      method: "POST",
      body: JSON.stringify({ namespace: "BUCKET_REGISTRY", name: "registry", method: "list", args: [] }),
    });
    expect(s3Port.status).toBe(403);
    expect(await s3Port.text()).toContain("<Code>AccessDenied</Code>");
  });

  it("sees a node added and a node marked draining in every process within seconds (the overlay, config.ts)", async () => {
    const versity = new VersityNode();
    await versity.start();
    try {
      const admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
      const call = async (method: string, path: string, body?: unknown) => {
        const init = {
          method,
          headers: { connection: "close", "content-type": "application/json" },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        };
        const res = await admin.fetch(`${gateway.base}/_shardgate/admin${path}`, init);
        const text = await res.text();
        expect(res.status, text).toBeLessThan(300);
        return JSON.parse(text) as Record<string, unknown>;
      };
      // Both processes have read the overlay (and keep it) before the changes.
      for (let i = 0; i < 10; i++) await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: "doc" }));
      await call("POST", "/nodes", {
        id: "S3_P",
        endpoint: versity.endpoint,
        bucket: versity.bucket,
        accessKeyId: versity.key.id,
        secretAccessKey: versity.key.secret,
      });
      await call("PATCH", "/nodes/NODE_3", { state: "draining" });
      await new Promise((r) => setTimeout(r, 5_500)); // OVERLAY_MAX_AGE_MS (5 s): every process has read it since
      const placements: string[][] = [];
      for (let i = 0; i < 30; i++) {
        const key = `after-change/${i}`;
        await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: randomBytes(40_000 + i, 500 + i) }));
        const layout = await call("GET", `/object?bucket=${bucket}&key=${encodeURIComponent(key)}`);
        placements.push((layout.parts as { shards: { node: string }[] }[])[0].shards.map((s) => s.node));
      }
      // From either process: nothing on the draining node, and the added node in use (6 of 7 writable: all six).
      expect(placements.filter((p) => p.includes("NODE_3"))).toEqual([]);
      expect(placements.every((p) => p.includes("S3_P"))).toBe(true);
      expect(versity.files()).toBeGreaterThanOrEqual(30);
    } finally {
      versity.stop();
    }
  });
});
