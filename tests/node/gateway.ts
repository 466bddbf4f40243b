// Starts the gateway the way `npm start` does (scripts/serve.mjs: wrangler dev behind the local
// front; bundled by wrangler, run by workerd, R2 and Durable Objects simulated by miniflare and
// persisted on disk), on a free port, for end-to-end tests over real HTTP. Each gateway runs in
// its own process group so stop() ends the front, wrangler and workerd together.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

export { CREDENTIALS } from "../shared/credentials";

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** One line of the Worker's request log (worker/src/api/handle.ts). */
export interface RequestLogLine {
  requestId: string;
  op: string;
  method: string;
  path: string;
  status: number;
  received: number;
  sent: number;
}

export class Gateway {
  private child: ChildProcess | undefined;
  private output = "";
  readonly persist = mkdtempSync(join(tmpdir(), "shardgate-e2e-"));
  base = "";

  /** Starts (or restarts, keeping the persisted data) and waits for the health check. */
  async start(): Promise<void> {
    const port = await freePort();
    this.base = `http://127.0.0.1:${port}`;
    this.output = "";
    const args = [join(root, "scripts/serve.mjs"), "--quiet", "--port", String(port), "--persist-to", this.persist];
    const child = spawn(process.execPath, args, {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, SHARDGATE_ACCESS_KEY_ID: "", SHARDGATE_SECRET_ACCESS_KEY: "" }, // the local defaults
    });
    this.child = child;
    child.stdout?.on("data", (d: Buffer) => (this.output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (this.output += d.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${this.output}`);
      try {
        if ((await fetch(`${this.base}/_shardgate/health`)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`wrangler dev did not come up within 60 s:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** What wrangler and the Worker printed (its JSON request logs among them). */
  get log(): string {
    return this.output;
  }

  /** The Worker's request log (one JSON line per request) from output offset `from` on. */
  requests(from = 0): RequestLogLine[] {
    return this.output
      .slice(from)
      .split("\n")
      .flatMap((line) => {
        const at = line.indexOf('{"requestId"');
        if (at < 0) return [];
        try {
          return [JSON.parse(line.slice(at)) as RequestLogLine];
        } catch {
          return [];
        }
      });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child?.pid === undefined || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    const kill = (signal: NodeJS.Signals) => {
      try {
        process.kill(-(child.pid as number), signal);
      } catch {
        // already gone
      }
    };
    kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    kill("SIGKILL");
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.persist, { recursive: true, force: true });
  }
}
