// Bucket replication end to end: the gateway as `npm start` serves it (scripts/serve.mjs) with a
// remote target configured in shardgate.json's "vars" (SHARDGATE_REPLICATION_TARGETS, credentials
// there and never in the rule), replicating to a versitygw server. The AWS SDK configures the
// bucket and writes; versitygw is read back directly. While the remote server is down (its
// process killed) writes go on and stay PENDING; once it is back every object arrives byte-exact
// (sha256), each source version ends COMPLETED, nothing is lost, an overwritten key ends with its
// last version, and a delete marker removes the key there. The retry schedule is short here
// (SHARDGATE_NOTIFY_RETRY_MS 100 ms, at most 400 ms).
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetBucketReplicationCommand,
  HeadObjectCommand,
  PutBucketReplicationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, servingWithVars } from "./gateway";
import { startServe } from "./tools";
import { VersityNode } from "./versity-node";

const scratch = mkdtempSync(join(tmpdir(), "shardgate-replication-"));
const running: ChildProcess[] = [];
const SOURCE = "repl-source";
const ARN = "arn:shardgate:s3:::offsite/shards";
let remote: VersityNode;
let remoteClient: AwsClient;
let s3: S3Client;
let serverOutput: () => string = () => "";
let base = "";

beforeAll(async () => {
  remote = new VersityNode();
  await remote.start();
  remoteClient = new AwsClient({ accessKeyId: remote.key.id, secretAccessKey: remote.key.secret, service: "s3", region: "us-east-1", retries: 0 });
  const target = { endpoint: remote.endpoint, region: "us-east-1", accessKeyId: remote.key.id, secretAccessKey: remote.key.secret };
  const vars = {
    SHARDGATE_REPLICATION_TARGETS: JSON.stringify({ offsite: target }),
    SHARDGATE_NOTIFY_RETRY_MS: "100",
    SHARDGATE_NOTIFY_RETRY_MAX_MS: "400",
    SHARDGATE_NOTIFY_ATTEMPTS: "1000",
    SHARDGATE_NOTIFY_TIMEOUT_MS: "2000",
  };
  const serve = await servingWithVars(vars, scratch);
  base = serve.base;
  ({ output: serverOutput } = await startServe(serve.args, serve.env, serve.healthy, running));
  s3 = new S3Client({ endpoint: base, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
  await s3.send(new CreateBucketCommand({ Bucket: SOURCE }));
  await s3.send(new PutBucketVersioningCommand({ Bucket: SOURCE, VersioningConfiguration: { Status: "Enabled" } }));
  await s3.send(
    new PutBucketReplicationCommand({
      Bucket: SOURCE,
      ReplicationConfiguration: {
        Role: "",
        Rules: [
          {
            ID: "offsite",
            Priority: 1,
            Status: "Enabled",
            Filter: { Prefix: "" },
            DeleteMarkerReplication: { Status: "Enabled" },
            Destination: { Bucket: ARN },
          },
        ],
      },
    }),
  );
}, 180_000);

afterAll(async () => {
  for (const child of running) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, "SIGTERM");
  remote?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const sha = (b: Uint8Array | Buffer) => createHash("sha256").update(b).digest("hex");

/** The object at the remote server: its sha256 and content type, or null when it has none. */
async function atRemote(key: string): Promise<{ sha: string; type: string | null; meta: string | null } | null> {
  const res = await remoteClient.fetch(`${remote.endpoint}/${remote.bucket}/${key}`);
  if (res.status === 404) {
    await res.arrayBuffer();
    return null;
  }
  expect(res.status).toBe(200);
  return { sha: sha(new Uint8Array(await res.arrayBuffer())), type: res.headers.get("content-type"), meta: res.headers.get("x-amz-meta-origin") };
}

async function status(key: string, versionId?: string): Promise<string | undefined> {
  return (await s3.send(new HeadObjectCommand({ Bucket: SOURCE, Key: key, VersionId: versionId }))).ReplicationStatus;
}

/** Waits until every version of `versions` is no longer PENDING; their statuses. */
async function settle(versions: { key: string; versionId: string }[], ms = 120_000): Promise<string[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const statuses = await Promise.all(versions.map((v) => status(v.key, v.versionId)));
    if (statuses.every((s) => s !== "PENDING") || Date.now() > deadline) return statuses.map(String);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function put(key: string, body: Uint8Array | string): Promise<{ key: string; versionId: string }> {
  const out = await s3.send(
    new PutObjectCommand({ Bucket: SOURCE, Key: key, Body: body, ContentType: "application/x-replica", Metadata: { origin: "gateway" } }),
  );
  return { key, versionId: out.VersionId as string };
}

describe("replication to a remote S3 server", () => {
  it("answers the configuration back, naming the target and no credentials", async () => {
    const got = await s3.send(new GetBucketReplicationCommand({ Bucket: SOURCE }));
    expect(got.ReplicationConfiguration?.Rules?.[0]).toMatchObject({ ID: "offsite", Status: "Enabled", Destination: { Bucket: ARN } });
    expect(JSON.stringify(got)).not.toContain(remote.key.secret);
  });

  it("replicates byte-exact with content type and metadata; status PENDING then COMPLETED", async () => {
    const bytes = randomBytes(2 * 1024 * 1024 + 5);
    const v = await put("first.bin", bytes);
    expect(await settle([v])).toEqual(["COMPLETED"]);
    expect(await atRemote("first.bin")).toEqual({ sha: sha(bytes), type: "application/x-replica", meta: "gateway" });
  });

  it("loses nothing while the remote server is down, keeps the order per key, and replicates a delete marker", async () => {
    await remote.pause();
    const expected = new Map<string, string>();
    const written: { key: string; versionId: string }[] = [];
    const big = randomBytes(64 * 1024 * 1024 + 3);
    written.push(await put("big.bin", big));
    expected.set("big.bin", sha(big));
    for (let i = 0; i < 6; i++) {
      const body = randomBytes(100_000 + i);
      written.push(await put("overwritten.bin", body));
      expected.set("overwritten.bin", sha(body));
    }
    for (let i = 0; i < 10; i++) {
      const body = `small object ${i} ${"x".repeat(i * 1000)}`;
      written.push(await put(`dir/small-${i}.txt`, body));
      expected.set(`dir/small-${i}.txt`, sha(Buffer.from(body)));
    }
    // A multipart upload and a copy are commits like any other.
    const parts = [randomBytes(5 * 1024 * 1024), randomBytes(1234)];
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: SOURCE, Key: "multi.bin" }));
    const etags = [];
    for (const [i, body] of parts.entries()) {
      etags.push((await s3.send(new UploadPartCommand({ Bucket: SOURCE, Key: "multi.bin", UploadId, PartNumber: i + 1, Body: body }))).ETag);
    }
    const multipart = { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) };
    const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: SOURCE, Key: "multi.bin", UploadId, MultipartUpload: multipart }));
    written.push({ key: "multi.bin", versionId: done.VersionId as string });
    expected.set("multi.bin", sha(Buffer.concat(parts)));
    const copy = await s3.send(new CopyObjectCommand({ Bucket: SOURCE, Key: "copied.bin", CopySource: `${SOURCE}/dir/small-3.txt` }));
    written.push({ key: "copied.bin", versionId: copy.VersionId as string });
    expected.set("copied.bin", expected.get("dir/small-3.txt") as string);
    // Down for a while: attempts fail and are retried; nothing is COMPLETED.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await status(written[0]?.key as string, written[0]?.versionId)).toBe("PENDING");
    await remote.resume();
    const statuses = await settle(written);
    expect(statuses, serverOutput().slice(-3000)).toEqual(written.map(() => "COMPLETED"));
    for (const [key, digest] of expected) expect((await atRemote(key))?.sha, key).toBe(digest);
    // The attempts while it was down failed and were retried; the backlog is empty now.
    const admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    const metrics = await (await admin.fetch(`${base}/_shardgate/metrics`)).text();
    expect(metrics).toMatch(/shardgate_replication_versions_total\{result="retried"\} [1-9]/);
    expect(metrics).toMatch(/shardgate_replication_versions_total\{result="completed"\} [1-9]/);
    expect(metrics).toMatch(/^shardgate_replication_pending 0$/m);
    expect(metrics).toMatch(/^shardgate_replication_failed 0$/m);

    await s3.send(new DeleteObjectCommand({ Bucket: SOURCE, Key: "first.bin" }));
    const deadline = Date.now() + 60_000;
    while ((await atRemote("first.bin")) !== null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect(await atRemote("first.bin")).toBeNull();
  }, 240_000);
});
