// Starts the gateway the way `npm start` does (scripts/serve.mjs: plain workerd with disk nodes and
// Durable Objects on local disk), or with `runtime: "dev"` the way
// `npm run dev` does (scripts/dev.mjs: wrangler dev, R2 and Durable Objects simulated by miniflare),
// on a free port, for end-to-end tests over real HTTP. SHARDGATE_E2E_RUNTIME=dev makes "dev" the
// default. Each gateway runs in its own process group so stop() ends every process of it together.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));

import { CREDENTIALS } from "../shared/credentials";

export { CREDENTIALS };

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

/**
 * How to start `npm start`'s scripts/serve.mjs (tools.ts startServe) with `vars` as shardgate.json's
 * "vars" (the file written in `dir`, the data in `dir`/data), on free ports (or `port`), with the test
 * credentials: its base URL, arguments and environment, and its health check.
 */
export async function servingWithVars(
  vars: Record<string, string>,
  dir: string,
  port?: number,
): Promise<{ base: string; args: string[]; env: Record<string, string>; healthy: () => Promise<boolean> }> {
  port ??= await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = join(dir, "shardgate.json");
  writeFileSync(config, JSON.stringify({ vars }));
  const args = ["--quiet", "--config", config, "--port", String(port), "--console-port", String(await freePort()), "--data-dir", join(dir, "data")];
  const env = { SHARDGATE_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, SHARDGATE_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey };
  return { base, args, env, healthy: () => fetch(`${base}/_shardgate/health`).then((r) => r.ok) };
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

/** "workerd": the production runtime (npm start); "dev": wrangler dev (npm run dev). */
export type Runtime = "workerd" | "dev";

export class Gateway {
  private child: ChildProcess | undefined;
  private output = "";
  private readonly hungBefore: string[] = [];
  readonly persist = mkdtempSync(join(tmpdir(), "shardgate-e2e-"));
  readonly runtime: Runtime;
  /** workerd processes serving the port (`--processes`; plain workerd only). */
  readonly processes: number;
  base = "";
  /** The web console, on its own origin (its own port). */
  consoleBase = "";

  /** Worker vars (shardgate.json's "vars", e.g. SHARDGATE_WEBHOOKS), in a config file beside the data directory; workerd only. */
  readonly vars: Record<string, string> | undefined;
  /** Other keys of that file (e.g. cacheMiB); workerd only. */
  readonly config: Record<string, unknown> | undefined;
  /**
   * Started with no credentials, as a fresh `npm start` is: it makes its root key (kept in the data
   * directory) and prints its banner (not --quiet). Otherwise it serves CREDENTIALS, given as
   * SHARDGATE_ACCESS_KEY_ID / SHARDGATE_SECRET_ACCESS_KEY.
   */
  readonly ownKey: boolean;

  constructor(opts: { runtime?: Runtime; processes?: number; vars?: Record<string, string>; config?: Record<string, unknown>; ownKey?: boolean } = {}) {
    this.runtime = opts.runtime ?? (process.env.SHARDGATE_E2E_RUNTIME === "dev" ? "dev" : "workerd");
    this.processes = opts.processes ?? 1;
    this.vars = opts.vars;
    this.config = opts.config;
    this.ownKey = opts.ownKey ?? false;
    if ((this.vars ?? this.config) !== undefined && this.runtime === "dev") throw new Error("Gateway: vars are given to the workerd runtime only");
  }

  /** Starts (or restarts, keeping the persisted data) and waits for the health check. */
  async start(): Promise<void> {
    const port = await freePort();
    const consolePort = await freePort();
    this.base = `http://127.0.0.1:${port}`;
    this.consoleBase = `http://127.0.0.1:${consolePort}`;
    this.hungBefore.push(...hungLines(this.output)); // output starts afresh with every start
    this.output = "";
    const quiet = this.ownKey ? [] : ["--quiet"];
    const args =
      this.runtime === "dev"
        ? [join(root, "scripts/dev.mjs"), ...quiet, "--port", String(port), "--console-port", String(consolePort), "--data-dir", this.persist]
        : [
            ...[join(root, "scripts/serve.mjs"), ...quiet, "--port", String(port), "--console-port", String(consolePort), "--data-dir", this.persist],
            ...(this.processes > 1 ? ["--processes", String(this.processes)] : []),
            ...((this.vars ?? this.config) !== undefined ? ["--config", this.configFile()] : []),
          ];
    const child = spawn(process.execPath, args, {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        SHARDGATE_ACCESS_KEY_ID: this.ownKey ? "" : CREDENTIALS.accessKeyId,
        SHARDGATE_SECRET_ACCESS_KEY: this.ownKey ? "" : CREDENTIALS.secretAccessKey,
      },
    });
    this.child = child;
    child.stdout?.on("data", (d: Buffer) => (this.output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (this.output += d.toString()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the ${this.runtime} gateway exited with ${child.exitCode}:\n${this.output}`);
      try {
        if ((await fetch(`${this.base}/_shardgate/health`)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`the ${this.runtime} gateway did not come up within 60 s:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** What the runtime and the Worker printed (its JSON request logs among them). */
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
    await this.signal("SIGTERM");
    await this.signal("SIGKILL");
  }

  /** `kill -9` of every process of the server at once: nothing gets to shut down cleanly. */
  async crash(): Promise<void> {
    await this.signal("SIGKILL");
  }

  /** Signals the server's process group and waits (at most 5 s) for its first process to exit. */
  private async signal(signal: NodeJS.Signals): Promise<void> {
    const child = this.child;
    if (child?.pid === undefined) return;
    const exited = child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((r) => child.once("exit", r));
    try {
      process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
  }

  /** The server's process group id (its first process's pid). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Whether the server's first process is still running (it has not exited or been killed). */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The server's output lines where the runtime cancelled a request as hung. */
  get hungRequests(): string[] {
    return [...this.hungBefore, ...hungLines(this.output)];
  }

  /** Writes the config file holding `vars` (beside the data directory); its path. */
  private configFile(): string {
    const file = `${this.persist}.json`;
    writeFileSync(file, JSON.stringify({ ...this.config, vars: this.vars ?? {} }));
    return file;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(`${this.persist}.json`, { force: true });
    // Into the test log, where .ci/run fails on them whichever test started this gateway.
    for (const line of this.hungRequests) console.error(`gateway (${this.runtime}): ${line}`);
    rmSync(this.persist, { recursive: true, force: true });
  }
}

/** workerd's "The Workers runtime canceled this request because it detected that your Worker's code had hung". */
function hungLines(output: string): string[] {
  return output.split("\n").filter((line) => line.includes("had hung"));
}
