// What `npm start` serves: the Worker under `wrangler dev` (bundled by wrangler, run by workerd),
// end to end over HTTP. Catches what the in-workerd test pool cannot, e.g. a main module that
// workerd refuses to load or a .wasm import wrangler does not bundle.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === "object" && addr ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

let child: ChildProcess | undefined;
let base = "";
let output = "";
const persist = mkdtempSync(join(tmpdir(), "shardgate-dev-"));

beforeAll(async () => {
  const [port, inspectorPort] = [await freePort(), await freePort()];
  base = `http://127.0.0.1:${port}`;
  // Own process group, so afterAll can stop wrangler and its workerd children together.
  child = spawn(
    process.execPath,
    [
      join(root, "node_modules/wrangler/bin/wrangler.js"),
      "dev",
      "--ip", "127.0.0.1",
      "--port", String(port),
      "--inspector-port", String(inspectorPort),
      "--persist-to", persist,
      "--show-interactive-dev-session=false",
    ],
    {
      cwd: root,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
    },
  );
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));

  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited with ${child.exitCode}:\n${output}`);
    try {
      const res = await fetch(`${base}/_shardgate/health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`wrangler dev did not come up within 60 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}, 90_000);

afterAll(async () => {
  if (child?.pid !== undefined && child.exitCode === null) {
    const exited = new Promise((r) => child?.once("exit", r));
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // already gone
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  rmSync(persist, { recursive: true, force: true });
});

describe("wrangler dev (what npm start serves)", () => {
  it("serves the health endpoint with the core's version", async () => {
    const res = await fetch(`${base}/_shardgate/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; version: string; core: string };
    expect(body).toMatchObject({ status: "ok", core: inject("coreCrateVersion") });
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("answers other paths with an S3 NotImplemented error", async () => {
    const res = await fetch(`${base}/bucket/key`, { method: "PUT", body: "x" });
    expect(res.status).toBe(501);
    expect(res.headers.get("content-type")).toMatch(/^application\/xml/);
    expect(await res.text()).toContain("<Code>NotImplemented</Code>");
  });
});
