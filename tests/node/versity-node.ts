// One versitygw S3 server for tests that add a node to a running gateway (cli.test.ts,
// processes.test.ts) or replicate to a remote endpoint (replication.test.ts, which stops it for a
// while: pause, resume): its own keys, a bucket "shards", a data directory of its own.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { freePort } from "./gateway";
import { ROOT } from "./tools";

export class VersityNode {
  readonly key = { id: "AKVERSITYNODE", secret: "versity-node-secret-7Hq2" };
  readonly bucket = "shards";
  endpoint = "";
  private port = 0;
  private dir = "";
  private child: ChildProcess | undefined;

  /** Starts the server and makes its bucket. */
  async start(): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), "shardgate-versity-"));
    mkdirSync(join(this.dir, "data"));
    mkdirSync(join(this.dir, "iam"));
    this.port = await freePort();
    this.endpoint = `http://127.0.0.1:${this.port}`;
    await this.resume();
  }

  /** Stops the server, keeping its data: connections are refused until resume(). */
  async pause(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGKILL");
    await exited;
  }

  /** Starts the server (again) on its port and data, and makes its bucket if it is not there. */
  async resume(): Promise<void> {
    const port = this.port;
    const args = [
      "--access",
      this.key.id,
      "--secret",
      this.key.secret,
      "--port",
      `127.0.0.1:${port}`,
      "--iam-dir",
      join(this.dir, "iam"),
      "posix",
      join(this.dir, "data"),
    ];
    this.child = spawn(join(ROOT, ".tools/go/bin/versitygw"), args, { stdio: ["ignore", "ignore", "inherit"] });
    const s3 = new AwsClient({ accessKeyId: this.key.id, secretAccessKey: this.key.secret, service: "s3", region: "us-east-1", retries: 0 });
    for (let tries = 0; ; tries++) {
      try {
        const res = await s3.fetch(`${this.endpoint}/${this.bucket}`, { method: "PUT" });
        await res.arrayBuffer();
        if (res.ok || res.status === 409) return;
      } catch (e) {
        if (tries > 100) throw e;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The files in its bucket (shard files; versitygw keeps objects as plain files). */
  files(): number {
    const root = join(this.dir, "data", this.bucket);
    return readdirSync(root, { recursive: true, withFileTypes: true }).filter((d) => d.isFile() && !d.parentPath.includes(".sgwtmp")).length;
  }

  stop(): void {
    this.child?.kill("SIGTERM");
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
