// Two gateways replicating to each other (each the other's remote target, with the root key): a
// write to either reaches the other once, marked as a replica there (x-shardgate-replica: true, which
// the root key may send), so it is REPLICA there and never sent back: no loop, one version on each
// side. A delete marker crosses once too.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListObjectVersionsCommand,
  PutBucketReplicationCommand,
  PutBucketVersioningCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, freePort, servingWithVars } from "./gateway";
import { startServe } from "./tools";

const scratch = mkdtempSync(join(tmpdir(), "shardgate-replication-loop-"));
const running: ChildProcess[] = [];
const clients: Record<"a" | "b", S3Client> = {} as Record<"a" | "b", S3Client>;
const BUCKET = "mirror";

beforeAll(async () => {
  const ports = { a: await freePort(), b: await freePort() };
  const retry = { SHARDGATE_NOTIFY_RETRY_MS: "100", SHARDGATE_NOTIFY_RETRY_MAX_MS: "400", SHARDGATE_NOTIFY_TIMEOUT_MS: "5000" };
  for (const [me, peer] of [
    ["a", "b"],
    ["b", "a"],
  ] as const) {
    const target = { endpoint: `http://127.0.0.1:${ports[peer]}`, region: "us-east-1", ...CREDENTIALS };
    const vars = { SHARDGATE_REPLICATION_TARGETS: JSON.stringify({ peer: target }), ...retry };
    mkdirSync(join(scratch, me));
    const serve = await servingWithVars(vars, join(scratch, me), ports[me]);
    await startServe(serve.args, serve.env, serve.healthy, running);
    clients[me] = new S3Client({ endpoint: serve.base, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
  }
  for (const s3 of Object.values(clients)) {
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await s3.send(new PutBucketVersioningCommand({ Bucket: BUCKET, VersioningConfiguration: { Status: "Enabled" } }));
  }
  for (const s3 of Object.values(clients)) {
    const rule = { ID: "peer", Priority: 1, Status: "Enabled" as const, Filter: { Prefix: "" }, DeleteMarkerReplication: { Status: "Enabled" as const } };
    const Destination = { Bucket: `arn:shardgate:s3:::peer/${BUCKET}` };
    await s3.send(new PutBucketReplicationCommand({ Bucket: BUCKET, ReplicationConfiguration: { Role: "", Rules: [{ ...rule, Destination }] } }));
  }
}, 240_000);

afterAll(() => {
  for (const child of running) if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(-child.pid, "SIGTERM");
  rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }); // a gateway just sent SIGTERM may still be writing there
});

/** HEAD's x-amz-replication-status of `key` at `side`, once it is not PENDING (or null: no such object yet). */
async function settled(side: "a" | "b", key: string): Promise<string | null> {
  const until = Date.now() + 30_000;
  for (;;) {
    const status = await clients[side]
      .send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))
      .then((h) => h.ReplicationStatus ?? null)
      .catch(() => null);
    if ((status !== null && status !== "PENDING") || Date.now() > until) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function versions(side: "a" | "b", key: string): Promise<{ versions: number; markers: number }> {
  const out = await clients[side].send(new ListObjectVersionsCommand({ Bucket: BUCKET, Prefix: key }));
  return { versions: out.Versions?.length ?? 0, markers: out.DeleteMarkers?.length ?? 0 };
}

describe("two gateways replicating a bucket to each other", () => {
  it("send each write across once: REPLICA on the other side, never back", async () => {
    await clients.a.send(new PutObjectCommand({ Bucket: BUCKET, Key: "from-a.txt", Body: "written at a" }));
    await clients.b.send(new PutObjectCommand({ Bucket: BUCKET, Key: "from-b.txt", Body: "written at b" }));
    expect(await settled("a", "from-a.txt")).toBe("COMPLETED");
    expect(await settled("b", "from-b.txt")).toBe("COMPLETED");
    expect(await settled("b", "from-a.txt")).toBe("REPLICA");
    expect(await settled("a", "from-b.txt")).toBe("REPLICA");
    // A loop would keep adding versions on both sides: after a while, still one each.
    await new Promise((r) => setTimeout(r, 3000));
    for (const side of ["a", "b"] as const)
      for (const key of ["from-a.txt", "from-b.txt"]) expect(await versions(side, key), `${side} ${key}`).toEqual({ versions: 1, markers: 0 });

    // A delete marker crosses once, and comes back no more.
    await clients.a.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: "from-a.txt" }));
    const until = Date.now() + 30_000;
    while ((await versions("b", "from-a.txt")).markers === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 3000));
    for (const side of ["a", "b"] as const) expect(await versions(side, "from-a.txt"), side).toEqual({ versions: 1, markers: 1 });
  }, 120_000);
});
