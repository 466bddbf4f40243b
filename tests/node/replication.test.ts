// Bucket replication end to end: the gateway as `npm start` serves it (scripts/serve.mjs) with a
// remote target configured in shardgate.json's "vars" (SHARDGATE_REPLICATION_TARGETS, credentials
// there and never in the rule), replicating to a versitygw server. The AWS SDK configures the
// bucket and writes; versitygw is read back directly. While the remote server is down (its
// process killed) writes go on and stay PENDING; once it is back every object arrives byte-exact
// (sha256), each source version ends COMPLETED, nothing is lost, an overwritten key ends with its
// last version, and a delete marker removes the key there. A multipart object is replicated as a
// multipart upload with the same parts: byte-exact, with the source's "…-N" ETag; when the remote
// dies in the middle of one (killed as its second part arrives, through a proxy of ours) it still
// ends COMPLETED once the remote is back, and the upload left there is aborted (none stays). A
// remote that answers CompleteMultipartUpload with a 200 carrying an <Error> (as S3 may) never
// makes the version COMPLETED, and its uploads are aborted. A configuration the AWS SDK writes with a
// tag filter (And: Prefix and Tags) and ExistingObjectReplication Enabled is answered back as given;
// the objects already in the bucket that carry the tags reach the remote with their tags, the
// others never. The retry schedule is short here
// (SHARDGATE_NOTIFY_RETRY_MS 100 ms, at most 400 ms).
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
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
  PutObjectTaggingCommand,
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
/** Source buckets replicating to the same remote bucket through a proxy of ours (startProxy). */
const FLAKY = "repl-flaky";
const HOSTILE = "repl-hostile";
let remote: VersityNode;
let flaky: Proxy;
let hostile: Proxy;
let remoteClient: AwsClient;
let s3: S3Client;
let serverOutput: () => string = () => "";
let base = "";

beforeAll(async () => {
  remote = new VersityNode();
  await remote.start();
  remoteClient = new AwsClient({ accessKeyId: remote.key.id, secretAccessKey: remote.key.secret, service: "s3", region: "us-east-1", retries: 0 });
  const target = { endpoint: remote.endpoint, region: "us-east-1", accessKeyId: remote.key.id, secretAccessKey: remote.key.secret };
  flaky = await startProxy();
  hostile = await startProxy();
  const vars = {
    SHARDGATE_REPLICATION_TARGETS: JSON.stringify({
      offsite: target,
      flaky: { ...target, endpoint: flaky.endpoint },
      hostile: { ...target, endpoint: hostile.endpoint },
    }),
    SHARDGATE_NOTIFY_RETRY_MS: "100",
    SHARDGATE_NOTIFY_RETRY_MAX_MS: "400",
    SHARDGATE_NOTIFY_ATTEMPTS: "1000",
    SHARDGATE_NOTIFY_TIMEOUT_MS: "2000",
  };
  const serve = await servingWithVars(vars, scratch);
  base = serve.base;
  ({ output: serverOutput } = await startServe(serve.args, serve.env, serve.healthy, running));
  s3 = new S3Client({ endpoint: base, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
  await replicatedBucket(SOURCE, ARN);
  await replicatedBucket(FLAKY, "arn:shardgate:s3:::flaky/shards");
  await replicatedBucket(HOSTILE, "arn:shardgate:s3:::hostile/shards");
}, 180_000);

afterAll(async () => {
  for (const child of running) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, "SIGTERM");
  remote?.stop();
  for (const proxy of [flaky, hostile]) proxy?.server.close();
  rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }); // a gateway just sent SIGTERM may still be writing there
});

/** Makes `bucket`, versioned, replicating every key (and delete markers) to `arn`. */
async function replicatedBucket(bucket: string, arn: string): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: "Enabled" } }));
  const rule = { ID: "offsite", Priority: 1, Status: "Enabled" as const, Filter: { Prefix: "" }, DeleteMarkerReplication: { Status: "Enabled" as const } };
  await s3.send(
    new PutBucketReplicationCommand({ Bucket: bucket, ReplicationConfiguration: { Role: "", Rules: [{ ...rule, Destination: { Bucket: arn } }] } }),
  );
}

/** What a proxy does with a request: pass it to the remote, answer it itself, or drop the connection. */
type Verdict = "forward" | "drop" | { status: number; body: string };

/** One request through a proxy: method, path with query, and the status it got ("drop": none). */
interface Passed {
  method: string;
  url: string;
  status: number | "drop";
}

interface Proxy {
  endpoint: string;
  server: Server;
  /** Decides each request (default: forward). */
  judge: (req: IncomingMessage, url: URL) => Promise<Verdict> | Verdict;
  passed: Passed[];
}

/**
 * An HTTP proxy to the remote versitygw (the Host header and so the signature kept as sent), whose
 * `judge` may answer for the remote or drop the connection: a remote that dies mid-way, or lies.
 */
async function startProxy(): Promise<Proxy> {
  const proxy: Proxy = { endpoint: "", server: createServer(), judge: () => "forward", passed: [] };
  proxy.server.on("request", async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://proxy");
    const verdict = await proxy.judge(req, url);
    const note = (status: number | "drop") => proxy.passed.push({ method: req.method ?? "", url: req.url ?? "", status });
    if (verdict === "drop") {
      note("drop");
      req.socket.destroy();
      return;
    }
    if (verdict !== "forward") {
      req.resume();
      req.on("end", () => {
        note(verdict.status);
        res.writeHead(verdict.status, { "content-type": "application/xml" });
        res.end(verdict.body);
      });
      return;
    }
    const upstream = new URL(remote.endpoint);
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      note(answer.statusCode ?? 0);
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on("error", () => {
      note("drop");
      req.socket.destroy();
    });
    req.pipe(out);
  });
  await new Promise<void>((resolve) => proxy.server.listen(0, "127.0.0.1", resolve));
  const address = proxy.server.address();
  proxy.endpoint = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return proxy;
}

/** The multipart uploads in progress at the remote bucket under `prefix` (ListMultipartUploads). */
async function uploadsAtRemote(prefix: string): Promise<string[]> {
  const res = await remoteClient.fetch(`${remote.endpoint}/${remote.bucket}?uploads&prefix=${encodeURIComponent(prefix)}`);
  const xml = await res.text();
  expect(res.status, xml).toBe(200);
  return [...xml.matchAll(/<UploadId>([^<]+)<\/UploadId>/g)].map((m) => m[1] as string);
}

/** The remote's object `key`: its bytes' sha256 and ETag (unquoted); null when it has none. */
async function remoteObject(key: string): Promise<{ sha: string; etag: string } | null> {
  const res = await remoteClient.fetch(`${remote.endpoint}/${remote.bucket}/${key}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (res.status === 404) return null;
  expect(res.status).toBe(200);
  return { sha: sha(bytes), etag: (res.headers.get("etag") ?? "").replace(/"/g, "") };
}

/** Uploads `parts` as a multipart upload of `bucket`/`key`: its version and ETag (unquoted). */
async function multipartPut(bucket: string, key: string, parts: Buffer[]): Promise<{ key: string; versionId: string; etag: string }> {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: key, ContentType: "application/x-parts" }));
  const etags = [];
  for (const [i, body] of parts.entries()) {
    etags.push((await s3.send(new UploadPartCommand({ Bucket: bucket, Key: key, UploadId, PartNumber: i + 1, Body: body }))).ETag);
  }
  const multipart = { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) };
  const done = await s3.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId, MultipartUpload: multipart }));
  return { key, versionId: done.VersionId as string, etag: (done.ETag ?? "").replace(/"/g, "") };
}

/** Parts of 5 MiB (S3's least but for the last) and a short last one. */
const fiveMiBParts = (count: number, last: number) => [...Array.from({ length: count }, () => randomBytes(5 * 1024 * 1024)), randomBytes(last)];

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

async function status(key: string, versionId?: string, bucket = SOURCE): Promise<string | undefined> {
  return (await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId }))).ReplicationStatus;
}

/** Waits until every version of `versions` is no longer PENDING; their statuses. */
async function settle(versions: { key: string; versionId: string }[], ms = 120_000, bucket = SOURCE): Promise<string[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const statuses = await Promise.all(versions.map((v) => status(v.key, v.versionId, bucket)));
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

  it("replicates a multipart object as a multipart upload with the same parts: byte-exact, with the source's ETag", async () => {
    const parts = fiveMiBParts(3, 777);
    const v = await multipartPut(SOURCE, "parts/three.bin", parts);
    expect(v.etag).toMatch(/^[0-9a-f]{32}-4$/);
    expect(await settle([v]), serverOutput().slice(-3000)).toEqual(["COMPLETED"]);
    expect(await remoteObject("parts/three.bin")).toEqual({ sha: sha(Buffer.concat(parts)), etag: v.etag });
    const head = await remoteClient.fetch(`${remote.endpoint}/${remote.bucket}/parts/three.bin`, { method: "HEAD" });
    expect(head.headers.get("content-type")).toBe("application/x-parts");
    expect(await uploadsAtRemote("parts/")).toEqual([]);
  }, 120_000);

  it("ends COMPLETED, byte-exact, when the remote dies in the middle of a multipart upload and comes back; the upload left there is aborted", async () => {
    const key = "flaky/six.bin";
    let firstUpload = "";
    let killed: Promise<void> | null = null;
    flaky.judge = async (req, url): Promise<Verdict> => {
      // The remote dies as the first attempt's second part arrives: that part, the abort and every
      // attempt until it is back find nothing listening.
      if (killed === null && req.method === "PUT" && url.searchParams.get("partNumber") === "2") {
        firstUpload = url.searchParams.get("uploadId") ?? "";
        killed = remote.pause();
      }
      if (killed) await killed;
      return "forward";
    };
    const parts = fiveMiBParts(5, 4321);
    const v = await multipartPut(FLAKY, key, parts);
    const deadline = Date.now() + 60_000;
    while (killed === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(firstUpload).not.toBe("");
    await new Promise((r) => setTimeout(r, 2000));
    expect(await status(key, v.versionId, FLAKY)).toBe("PENDING");
    // Back: the next attempt uploads it whole again, and the run aborts the first attempt's upload.
    await remote.resume();
    expect(await settle([v], 120_000, FLAKY), serverOutput().slice(-3000)).toEqual(["COMPLETED"]);
    expect(await remoteObject(key)).toEqual({ sha: sha(Buffer.concat(parts)), etag: v.etag });
    const until = Date.now() + 30_000;
    while ((await uploadsAtRemote("flaky/")).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    expect(await uploadsAtRemote("flaky/")).toEqual([]);
    const aborted = flaky.passed.filter((p) => p.method === "DELETE" && p.url.includes(`uploadId=${encodeURIComponent(firstUpload)}`));
    expect(aborted.map((p) => p.status)).toContain(204);
  }, 180_000);

  it("never takes a 200 whose body is an <Error>, or a result whose ETag is no multipart ETag of its parts, as a completed upload; each attempt's upload is aborted", async () => {
    const key = "hostile/lied.bin";
    let lies = 0;
    let closed = false;
    hostile.judge = (req, url) => {
      if (req.method === "POST" && url.searchParams.has("uploadId")) {
        lies++;
        const error = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`;
        // A result the remote never made (the upload not completed), its ETag no "…-2".
        const result = `<?xml version="1.0" encoding="UTF-8"?>\n<CompleteMultipartUploadResult><Key>${key}</Key><ETag>&quot;not-the-etag&quot;</ETag></CompleteMultipartUploadResult>`;
        return { status: 200, body: lies % 2 === 1 ? error : result };
      }
      // Once closed, no upload begins (the ones begun go on to their complete and abort).
      if (closed && req.method === "POST" && url.searchParams.has("uploads")) return { status: 503, body: "<Error><Code>SlowDown</Code></Error>" };
      return "forward";
    };
    const v = await multipartPut(HOSTILE, key, fiveMiBParts(1, 10));
    const deadline = Date.now() + 60_000;
    while (lies < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(lies).toBeGreaterThanOrEqual(3);
    expect(await status(key, v.versionId, HOSTILE)).toBe("PENDING");
    closed = true;
    const until = Date.now() + 30_000;
    while ((await uploadsAtRemote("hostile/")).length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    expect(await uploadsAtRemote("hostile/")).toEqual([]);
    expect(await remoteObject(key)).toBeNull();
    expect(await status(key, v.versionId, HOSTILE)).not.toBe("COMPLETED");
    const aborts = hostile.passed.filter((p) => p.method === "DELETE" && p.url.includes("uploadId="));
    expect(aborts.length).toBeGreaterThanOrEqual(3);
  }, 120_000);
});

describe("tag filters and existing objects, configured with the AWS SDK", () => {
  it("replicates the objects already there that carry the filter's tags, with their tags; the others never", async () => {
    const bucket = "repl-existing";
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: bucket, VersioningConfiguration: { Status: "Enabled" } }));
    const write = async (key: string, tagging: string) => {
      const out = await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: `body of ${key}`, Tagging: tagging }));
      return { key, versionId: out.VersionId as string };
    };
    const gold = await Promise.all(["existing/a", "existing/b", "existing/c"].map((k) => write(k, "class=gold&team=x")));
    const silver = await write("existing/silver", "class=silver&team=x");
    const outside = await write("elsewhere/gold", "class=gold&team=x");
    const Rules = [
      {
        ID: "gold",
        Priority: 1,
        Status: "Enabled" as const,
        Filter: {
          And: {
            Prefix: "existing/",
            Tags: [
              { Key: "class", Value: "gold" },
              { Key: "team", Value: "x" },
            ],
          },
        },
        DeleteMarkerReplication: { Status: "Disabled" as const },
        ExistingObjectReplication: { Status: "Enabled" as const },
        Destination: { Bucket: ARN },
      },
    ];
    await s3.send(new PutBucketReplicationCommand({ Bucket: bucket, ReplicationConfiguration: { Role: "", Rules } }));
    const got = await s3.send(new GetBucketReplicationCommand({ Bucket: bucket }));
    expect(got.ReplicationConfiguration?.Rules?.[0]).toMatchObject(Rules[0] as object);
    // A write after the configuration is replicated by its tags as any new write.
    const later = await write("existing/later", "team=x&class=gold");
    expect(await settle([...gold, later], 60_000, bucket)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"]);
    for (const v of [...gold, later]) {
      const res = await remoteClient.fetch(`${remote.endpoint}/${remote.bucket}/${v.key}?tagging`);
      const xml = await res.text();
      expect(res.status, xml).toBe(200);
      expect(xml).toMatch(/<Key>class<\/Key>\s*<Value>gold<\/Value>/);
      expect(await (await remoteClient.fetch(`${remote.endpoint}/${remote.bucket}/${v.key}`)).text()).toBe(`body of ${v.key}`);
    }
    for (const v of [silver, outside]) {
      expect(await status(v.key, v.versionId, bucket)).toBeUndefined();
      expect(await remoteObject(v.key)).toBeNull();
    }
    // A tag change after the write replicates nothing and leaves the status as it was.
    await s3.send(
      new PutObjectTaggingCommand({
        Bucket: bucket,
        Key: silver.key,
        Tagging: {
          TagSet: [
            { Key: "class", Value: "gold" },
            { Key: "team", Value: "x" },
          ],
        },
      }),
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(await status(silver.key, silver.versionId, bucket)).toBeUndefined();
    expect(await remoteObject(silver.key)).toBeNull();
    expect(await status("existing/a", gold[0]?.versionId, bucket)).toBe("COMPLETED");
  }, 120_000);
});
