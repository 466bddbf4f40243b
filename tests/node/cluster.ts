// `npm run cluster` for tests: the gateway over six versitygw S3 node processes, each serving a
// plain directory, so a test can kill, restart, pause (SIGSTOP) or damage a node on disk.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { AwsClient } from "aws4fetch";
import { CREDENTIALS, freePort } from "./gateway";
import { ROOT } from "./tools";

export interface NodeInfo {
  id: string;
  pid: number;
  port: number;
  dir: string;
  endpoint: string;
  /** Starts the node again on the same port and data. */
  argv: string[];
}

export interface ClusterInfo {
  endpoint: string;
  /** The web console, on its own origin. */
  console: string;
  data: string;
  bucket: string;
  /** The nodes' own credentials. */
  nodeKey: { accessKeyId: string; secretAccessKey: string };
  nodes: NodeInfo[];
}

export const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

export class Cluster {
  private child: ChildProcess | undefined;
  private restarted: ChildProcess[] = [];
  info!: ClusterInfo;
  s3!: S3Client;
  /** Signs the gateway's own admin requests. */
  readonly admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });

  /** Starts the cluster; `vars` go to the gateway (NAME:VALUE); `clientUrls`: clients reach the nodes themselves. */
  async start(vars: string[] = [], opts: { clientUrls?: boolean } = {}): Promise<void> {
    const port = await freePort();
    const args = [join(ROOT, "scripts/cluster.mjs"), "--quiet", "--port", String(port), ...vars.flatMap((v) => ["--var", v])];
    if (opts.clientUrls) args.push("--client-urls");
    // The gateway serves the test root key (without it, it would make one of its own).
    const env = { ...process.env, SHARDGATE_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, SHARDGATE_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey };
    const child = spawn(process.execPath, args, { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "inherit"], env });
    this.child = child;
    this.info = await new Promise<ClusterInfo>((resolve, reject) => {
      let out = "";
      // The gateway's request log, kept in a file when CLUSTER_LOG names one (for debugging).
      const logFile = process.env.CLUSTER_LOG;
      child.stdout?.on("data", (d: Buffer) => {
        if (logFile) appendFileSync(logFile, d);
        if (out.includes("\ncluster ") || out.startsWith("cluster ")) return;
        out += d.toString();
        const line = out.split("\n").find((l) => l.startsWith("cluster "));
        if (line) resolve(JSON.parse(line.slice("cluster ".length)) as ClusterInfo);
      });
      child.once("exit", (code) => reject(new Error(`cluster exited with ${code}: ${out}`)));
    });
    // No retries (a test sees every failure); a request that hangs fails after a minute.
    this.s3 = new S3Client({
      endpoint: this.info.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: CREDENTIALS,
      maxAttempts: 1,
      requestHandler: { requestTimeout: 60_000, connectionTimeout: 5_000 },
    });
  }

  async stop(): Promise<void> {
    for (const n of this.info?.nodes ?? []) signal(n, "SIGKILL");
    for (const c of this.restarted) c.kill("SIGKILL");
    const child = this.child;
    if (child) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-(child.pid as number), "SIGTERM");
      } catch {
        // gone
      }
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    }
    this.s3?.destroy();
    if (this.info) rmSync(this.info.data, { recursive: true, force: true });
  }

  kill(n: NodeInfo): void {
    signal(n, "SIGKILL");
  }

  /** Starts a killed node again (same port, same data) and waits until it answers. */
  async restart(n: NodeInfo): Promise<void> {
    const child = spawn(n.argv[0], n.argv.slice(1), { stdio: ["ignore", "ignore", "ignore"] });
    this.restarted.push(child);
    n.pid = child.pid as number;
    for (let tries = 0; tries < 200; tries++) {
      try {
        await fetch(n.endpoint);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    throw new Error(`node ${n.id} did not come back`);
  }

  /** Creates the node's bucket again (a node whose disk was replaced, provisioned anew). */
  async reprovision(n: NodeInfo): Promise<void> {
    const node = new AwsClient({ ...this.info.nodeKey, service: "s3", region: "us-east-1", retries: 0 });
    const res = await node.fetch(`${n.endpoint}/${this.info.bucket}`, { method: "PUT" });
    await res.arrayBuffer();
    if (!res.ok && res.status !== 409) throw new Error(`node ${n.id}: creating its bucket: HTTP ${res.status}`);
  }

  /** A signed request to the gateway's own endpoints, answered with JSON. */
  async adminJson<T>(path: string, method = "GET"): Promise<T> {
    const res = await this.admin.fetch(`${this.info.endpoint}${path}`, { method });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  /** Every shard file on a node's disk (versitygw keeps objects as plain files under the bucket). */
  shardFiles(n: NodeInfo): string[] {
    const out: string[] = [];
    const walk = (dir: string) => {
      if (!existsSync(dir)) return;
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (e.name.startsWith(".")) continue;
        if (e.isDirectory()) walk(join(dir, e.name));
        else out.push(join(dir, e.name));
      }
    };
    walk(join(n.dir, this.info.bucket));
    return out;
  }
}

export function signal(n: NodeInfo, sig: NodeJS.Signals): void {
  try {
    process.kill(n.pid, sig);
  } catch {
    // already gone
  }
}
