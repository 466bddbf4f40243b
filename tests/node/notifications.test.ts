// Event notifications end to end: the gateway as `npm start` serves it (scripts/serve.mjs, the
// webhook configured through shardgate.json's "vars"), the AWS SDK configuring a bucket, and a
// local Node HTTP receiver that checks every POST's signature. Every event of a sequence of puts,
// copies, a multipart upload and deletes arrives with S3's names, keys, sizes and ETags; a refused
// conditional PUT (412) sends nothing; with the receiver answering 503 and then refusing
// connections for a while, nothing is lost and the events of each key arrive in order; events
// committed but not yet delivered when the gateway is killed (kill -9) arrive after its restart,
// with no new write to wake them (the bucket's alarm is stored with it). The retry
// schedule is short here (SHARDGATE_NOTIFY_RETRY_MS 100 ms, at most 400 ms).
import type { ChildProcess } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetBucketNotificationConfigurationCommand,
  PutBucketNotificationConfigurationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, freePort, servingWithVars } from "./gateway";
import { startServe } from "./tools";

const SECRET = "notify-test-secret-0123456789";
const ARN = "arn:shardgate:webhook::hook";
const scratch = mkdtempSync(join(tmpdir(), "shardgate-notify-"));
const running: ChildProcess[] = [];

interface Received {
  name: string;
  key: string;
  size?: number;
  eTag?: string;
  versionId?: string;
  sequencer: string;
  bucket: string;
  configurationId: string;
}

/** The webhook receiver: answers 200, 503 or (closed) refuses connections; keeps what it accepted. */
class Receiver {
  readonly events: Received[] = [];
  readonly badSignatures: string[] = [];
  refused503 = 0;
  mode: "ok" | "503" = "ok";
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();

  constructor(readonly port: number) {}

  async open(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.on("connection", (s) => {
      this.sockets.add(s);
      s.on("close", () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(this.port, "127.0.0.1", r));
    this.server = server;
  }

  /** Stops listening: connections are refused until open() again. */
  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    if (this.mode === "503") {
      this.refused503++;
      res.writeHead(503).end();
      return;
    }
    const ts = String(req.headers["x-shardgate-timestamp"] ?? "");
    const expected = `v1=${createHmac("sha256", SECRET).update(`${ts}.${body}`).digest("hex")}`;
    const fresh = Math.abs(Date.now() / 1000 - Number(ts)) < 300;
    if (req.headers["x-shardgate-signature"] !== expected || !fresh || req.method !== "POST") {
      this.badSignatures.push(body);
      res.writeHead(401).end();
      return;
    }
    const record = JSON.parse(body).Records[0];
    expect(record).toMatchObject({ eventVersion: "2.1", eventSource: "aws:s3", awsRegion: "us-east-1" });
    expect(Number.isNaN(Date.parse(record.eventTime))).toBe(false);
    const o = record.s3.object;
    this.events.push({
      name: record.eventName,
      key: o.key,
      size: o.size,
      eTag: o.eTag,
      versionId: o.versionId,
      sequencer: o.sequencer,
      bucket: record.s3.bucket.name,
      configurationId: record.s3.configurationId,
    });
    res.writeHead(200).end("ok");
  }

  /** Events received for `bucket`, each once (at-least-once delivery may repeat one), in arrival order. */
  of(bucket: string): Received[] {
    const seen = new Set<string>();
    return this.events.filter((e) => e.bucket === bucket && !seen.has(e.sequencer) && seen.add(e.sequencer));
  }

  async waitFor(bucket: string, n: number, ms = 30_000): Promise<Received[]> {
    const deadline = Date.now() + ms;
    while (this.of(bucket).length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    return this.of(bucket);
  }
}

let receiver: Receiver;
let base: string;
let s3: S3Client;
let admin: AwsClient;
let serverOutput: () => string = () => "";
let serve: Awaited<ReturnType<typeof servingWithVars>>;
let gatewayChild: ChildProcess;

beforeAll(async () => {
  receiver = new Receiver(await freePort());
  await receiver.open();
  const vars = {
    SHARDGATE_WEBHOOKS: JSON.stringify({ hook: { url: `http://127.0.0.1:${receiver.port}/events`, secret: SECRET } }),
    SHARDGATE_NOTIFY_RETRY_MS: "100",
    SHARDGATE_NOTIFY_RETRY_MAX_MS: "400",
    SHARDGATE_NOTIFY_ATTEMPTS: "1000",
    SHARDGATE_NOTIFY_TIMEOUT_MS: "2000",
  };
  serve = await servingWithVars(vars, scratch);
  base = serve.base;
  ({ child: gatewayChild, output: serverOutput } = await startServe(serve.args, serve.env, serve.healthy, running));
  s3 = new S3Client({ endpoint: base, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
  admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
});

afterAll(async () => {
  const exited: Promise<unknown>[] = [];
  for (const child of running)
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      exited.push(new Promise((resolve) => child.once("exit", resolve)));
      process.kill(-child.pid, "SIGTERM");
    }
  await receiver?.close();
  // The gateway writes into its data directory until it has exited: removed after that (10 s at most).
  await Promise.race([Promise.all(exited), new Promise((resolve) => setTimeout(resolve, 10_000))]);
  rmSync(scratch, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
});

async function configure(bucket: string, events: string[] = ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"]): Promise<void> {
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  await s3.send(
    new PutBucketNotificationConfigurationCommand({
      Bucket: bucket,
      NotificationConfiguration: { QueueConfigurations: [{ Id: "all", QueueArn: ARN, Events: events as never }] },
    }),
  );
}

const put = (bucket: string, key: string, body: string) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
const unquote = (etag: string | undefined) => (etag ?? "").replaceAll('"', "");

describe("event notifications to a webhook", () => {
  it("delivers every event of puts, copies, a multipart upload and deletes, signed, with S3's fields; a 412 sends none", async () => {
    const b = "notify-all";
    await configure(b);
    const got = await s3.send(new GetBucketNotificationConfigurationCommand({ Bucket: b }));
    expect(got.QueueConfigurations).toEqual([{ Id: "all", QueueArn: ARN, Events: ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"] }]);

    const a = await put(b, "a.txt", "hello");
    const spaced = await put(b, "dir/b c+d.txt", "0123456789");
    const copy = await s3.send(new CopyObjectCommand({ Bucket: b, Key: "copy.txt", CopySource: `${b}/a.txt` }));
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: b, Key: "multi.bin" }));
    const part = await s3.send(new UploadPartCommand({ Bucket: b, Key: "multi.bin", UploadId, PartNumber: 1, Body: "x".repeat(1000) }));
    const done = await s3.send(
      new CompleteMultipartUploadCommand({ Bucket: b, Key: "multi.bin", UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }),
    );
    await expect(s3.send(new PutObjectCommand({ Bucket: b, Key: "a.txt", Body: "no", IfNoneMatch: "*" }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 412 },
    });
    await s3.send(new DeleteObjectCommand({ Bucket: b, Key: "a.txt" }));
    await s3.send(new DeleteObjectsCommand({ Bucket: b, Delete: { Objects: [{ Key: "dir/b c+d.txt" }] } }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: b, VersioningConfiguration: { Status: "Enabled" } }));
    const marker = await s3.send(new DeleteObjectCommand({ Bucket: b, Key: "copy.txt" }));

    const events = await receiver.waitFor(b, 7);
    // Give a stray event (the refused PUT's) time to arrive, then compare everything.
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.badSignatures).toEqual([]);
    const sorted = receiver.of(b).sort((x, y) => (x.sequencer < y.sequencer ? -1 : 1));
    expect(sorted.map((e) => [e.name, e.key, e.size, e.eTag])).toEqual([
      ["ObjectCreated:Put", "a.txt", 5, unquote(a.ETag)],
      ["ObjectCreated:Put", "dir/b+c%2Bd.txt", 10, unquote(spaced.ETag)],
      ["ObjectCreated:Copy", "copy.txt", 5, unquote(copy.CopyObjectResult?.ETag)],
      ["ObjectCreated:CompleteMultipartUpload", "multi.bin", 1000, unquote(done.ETag)],
      ["ObjectRemoved:Delete", "a.txt", undefined, undefined],
      ["ObjectRemoved:Delete", "dir/b+c%2Bd.txt", undefined, undefined],
      ["ObjectRemoved:DeleteMarkerCreated", "copy.txt", undefined, undefined],
    ]);
    expect(events.every((e) => e.configurationId === "all")).toBe(true);
    expect(sorted[6]?.versionId).toBe(marker.VersionId);
    expect(sorted[0]?.versionId).toBeUndefined();
  });

  it("loses nothing while the receiver answers 503 and then refuses connections, and keeps each key's order", async () => {
    const b = "notify-outage";
    await configure(b, ["s3:ObjectCreated:Put"]);
    receiver.mode = "503";
    const written: { key: string; size: number }[] = [];
    const burst = async (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        for (const key of ["k1", "k2", "k3"]) {
          await put(b, key, "y".repeat(i + 1));
          written.push({ key, size: i + 1 });
        }
      }
    };
    await burst(0, 5);
    for (let i = 0; i < 100 && receiver.refused503 === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(receiver.refused503).toBeGreaterThan(0);
    await receiver.close();
    await burst(5, 10);
    await new Promise((r) => setTimeout(r, 1000));
    expect(receiver.of(b)).toEqual([]);
    receiver.mode = "ok";
    await receiver.open();

    const events = await receiver.waitFor(b, written.length);
    if (events.length < written.length)
      console.log(await (await admin.fetch(`${base}/_shardgate/admin/buckets/${b}/notifications`)).text(), serverOutput().slice(-5000));
    expect(receiver.badSignatures).toEqual([]);
    expect(events).toHaveLength(written.length);
    for (const key of ["k1", "k2", "k3"]) {
      // Arrival order per key is write order: sizes 1..10; sequencers grow.
      const mine = events.filter((e) => e.key === key);
      expect(mine.map((e) => e.size)).toEqual(written.filter((w) => w.key === key).map((w) => w.size));
      expect([...mine.map((e) => e.sequencer)].sort()).toEqual(mine.map((e) => e.sequencer));
    }
    // Every POST of one key, repeats included, came in order (a repeat never follows a later event).
    for (const key of ["k1", "k2", "k3"]) {
      const all = receiver.events.filter((e) => e.bucket === b && e.key === key).map((e) => e.sequencer);
      for (let i = 1; i < all.length; i++) expect((all[i] as string) >= (all[i - 1] as string)).toBe(true);
    }

    const status = await (await admin.fetch(`${base}/_shardgate/admin/buckets/${b}/notifications`)).json();
    expect(status).toMatchObject({ pending: 0, deadLetters: 0, dropped: 0 });
    const metrics = await (await admin.fetch(`${base}/_shardgate/metrics`)).text();
    expect(metrics).toMatch(/shardgate_notification_deliveries_total\{result="failed"\} [1-9]/);
    expect(metrics).toMatch(/shardgate_notification_events_total\{result="queued"\} [1-9]/);
    expect(metrics).toMatch(/^shardgate_notification_outbox_events 0$/m);
    expect(metrics).toMatch(/^shardgate_notification_dead_letters 0$/m);
  });

  it("loses no committed event to kill -9 of the gateway: after the restart they are delivered, with no new write", async () => {
    const b = "notify-crash";
    await configure(b, ["s3:ObjectCreated:*"]);
    receiver.mode = "503";
    const before = receiver.refused503;
    for (const [key, body] of [
      ["c1", "a"],
      ["c2", "bb"],
      ["c1", "ccc"],
    ] as const)
      await put(b, key, body);
    for (let i = 0; i < 100 && receiver.refused503 === before; i++) await new Promise((r) => setTimeout(r, 50));
    const exited = new Promise((r) => gatewayChild.once("exit", r));
    process.kill(-(gatewayChild.pid as number), "SIGKILL");
    await exited;
    receiver.mode = "ok";
    ({ child: gatewayChild, output: serverOutput } = await startServe(serve.args, serve.env, serve.healthy, running));
    const events = await receiver.waitFor(b, 3);
    expect(events.map((e) => [e.key, e.size])).toEqual([
      ["c1", 1],
      ["c2", 2],
      ["c1", 3],
    ]);
  });
});
