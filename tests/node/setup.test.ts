// `npm start` from the outside:
//   - serving never compiles: scripts/setup.sh (what `npm start`, `npm run dev` and the benchmarks
//     run first) serves the committed core/pkg even where Rust is installed. Only
//     SHARDGATE_CORE_FROM_SOURCE=1 (`npm test`) builds the core. Here a cargo, rustup and
//     wasm-bindgen that only leave a mark stand first on PATH (CARGO_HOME/bin, which scripts/env.sh
//     puts there), and setup must not run any;
//   - stopping stops everything: npm runs the script in a shell that does not pass a `kill` on, so
//     the gateway stops by itself once what started it is gone, workerd with it.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CREDENTIALS, freePort } from "./gateway";
import { ROOT } from "./tools";

const home = mkdtempSync(join(tmpdir(), "shardgate-cargo-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("setup for serving", () => {
  it("serves the committed core with Rust on PATH: no cargo, rustup or wasm-bindgen runs", () => {
    const marks = join(home, "ran");
    mkdirSync(join(home, "bin"), { recursive: true });
    for (const tool of ["cargo", "rustup", "wasm-bindgen"]) {
      const path = join(home, "bin", tool);
      writeFileSync(path, `#!/bin/sh\necho ${tool} "$@" >> ${JSON.stringify(marks)}\nexit 1\n`);
      chmodSync(path, 0o755);
    }
    const { SHARDGATE_CORE_FROM_SOURCE: _, ...env } = process.env;
    const run = spawnSync("bash", [join(ROOT, "scripts/setup.sh")], { cwd: ROOT, env: { ...env, CARGO_HOME: home }, encoding: "utf8", timeout: 300_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toContain("serving the core as built into core/pkg");
    expect(existsSync(marks), existsSync(marks) ? "a Rust tool ran" : "").toBe(false);
  }, 320_000);
});

describe("stopping", () => {
  it("stops, workerd and all, when the shell that started it is killed", async () => {
    const port = await freePort();
    const data = join(home, "data");
    // `; true`: the shell waits for node instead of becoming it, as npm's `sh -c` does.
    const script = `node scripts/serve.mjs --quiet --port ${port} --console-port ${await freePort()} --data-dir ${JSON.stringify(data)}; true`;
    const env = { ...process.env, SHARDGATE_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, SHARDGATE_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey };
    const shell = spawn("sh", ["-c", script], { cwd: ROOT, env, stdio: "ignore" });
    const health = `http://127.0.0.1:${port}/_shardgate/health`;
    const up = async () => (await fetch(health).catch(() => null))?.ok ?? false;
    await expect.poll(up, { timeout: 60_000, interval: 250 }).toBe(true);
    const workerd = () => spawnSync("pgrep", ["-f", `${data}/workerd.capnp`], { encoding: "utf8" }).stdout.trim();
    expect(workerd()).not.toBe("");
    shell.kill("SIGKILL");
    await expect.poll(up, { timeout: 15_000, interval: 250 }).toBe(false);
    await expect.poll(workerd, { timeout: 15_000, interval: 250 }).toBe("");
  }, 120_000);
});
