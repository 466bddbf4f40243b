// Faults with real separate node processes (`npm run cluster`: the gateway over six versitygw S3
// servers): nodes killed while objects are written and read, and a write with more than m nodes
// down. Every read is compared byte for byte (sha256).
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client, S3ServiceException } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, freePort } from "./gateway";
import { ROOT } from "./tools";

const MIB = 1 << 20;

interface NodeInfo {
  id: string;
  pid: number;
  port: number;
  dir: string;
}
interface ClusterInfo {
  endpoint: string;
  data: string;
  bucket: string;
  nodes: NodeInfo[];
}

let child: ChildProcess;
let cluster: ClusterInfo;
let s3: S3Client;

beforeAll(async () => {
  const port = await freePort();
  child = spawn(process.execPath, [join(ROOT, "scripts/cluster.mjs"), "--quiet", "--port", String(port)], { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "inherit"] });
  cluster = await new Promise<ClusterInfo>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n").find((l) => l.startsWith("cluster "));
      if (line) resolve(JSON.parse(line.slice("cluster ".length)) as ClusterInfo);
    });
    child.once("exit", (code) => reject(new Error(`cluster exited with ${code}: ${out}`)));
  });
  s3 = new S3Client({ endpoint: cluster.endpoint, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS, maxAttempts: 1 });
  await s3.send(new CreateBucketCommand({ Bucket: "chaos" }));
}, 180_000);

afterAll(async () => {
  for (const n of cluster?.nodes ?? []) signal(n, "SIGKILL");
  const exited = new Promise((r) => child.once("exit", r));
  try {
    process.kill(-(child.pid as number), "SIGTERM");
  } catch {
    // gone
  }
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  if (cluster) rmSync(cluster.data, { recursive: true, force: true });
});

function signal(n: NodeInfo, sig: NodeJS.Signals): void {
  try {
    process.kill(n.pid, sig);
  } catch {
    // already gone
  }
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

async function getSha(key: string, range?: string): Promise<string> {
  const res = await s3.send(new GetObjectCommand({ Bucket: "chaos", Key: key, Range: range }));
  return sha256(await (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}

/** Every shard file on a node's disk (versitygw keeps objects as plain files under the bucket). */
function shardFiles(n: NodeInfo): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.name.startsWith(".")) continue;
      if (e.isDirectory()) walk(join(dir, e.name));
      else out.push(join(dir, e.name));
    }
  };
  walk(join(n.dir, cluster.bucket));
  return out;
}

describe("the gateway over six versitygw nodes", () => {
  const objects = new Map<string, Uint8Array>();
  let writesAcknowledged = 0;
  let readsVerified = 0;

  it("stores and reads objects with every node up", async () => {
    for (const [i, size] of [100, 300_000, 3 * MIB + 17, 9 * MIB].entries()) {
      const data = randomBytes(size, i + 1);
      await s3.send(new PutObjectCommand({ Bucket: "chaos", Key: `obj-${i}`, Body: data }));
      objects.set(`obj-${i}`, data);
      writesAcknowledged += 1;
    }
    for (const [key, data] of objects) {
      expect(await getSha(key)).toBe(sha256(data));
      readsVerified += 1;
    }
    expect(cluster.nodes.reduce((n, node) => n + shardFiles(node).length, 0)).toBe(3 * 6);
  }, 120_000);

  it("with one node killed: every read is right, and writes still reach their quorum (5 of 6)", async () => {
    signal(cluster.nodes[0], "SIGKILL");
    const data = randomBytes(2 * MIB + 3, 50);
    await s3.send(new PutObjectCommand({ Bucket: "chaos", Key: "written-degraded", Body: data }));
    objects.set("written-degraded", data);
    writesAcknowledged += 1;
    await expectAllReadsRight();
  }, 120_000);

  it("with a second node killed (m = 2 lost): every read, full and ranged, is still right", async () => {
    signal(cluster.nodes[1], "SIGKILL");
    await expectAllReadsRight();
  }, 120_000);

  it("a write with a third node paused (SIGSTOP) fails with 503 within the stall limit, and leaves nothing visible", async () => {
    signal(cluster.nodes[2], "SIGSTOP");
    try {
      const started = Date.now();
      const err = await s3.send(new PutObjectCommand({ Bucket: "chaos", Key: "never", Body: randomBytes(MIB, 60) })).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(S3ServiceException);
      expect((err as S3ServiceException).$metadata.httpStatusCode).toBe(503);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      signal(cluster.nodes[2], "SIGCONT");
    }
    const head = await s3.send(new HeadObjectCommand({ Bucket: "chaos", Key: "never" })).then(
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
