// `npm start` from the outside:
//   - serving never compiles: scripts/setup.sh (what `npm start`, `npm run dev` and the benchmarks
//     run first) serves the committed core/pkg even where Rust is installed. Only
//     SHARDGATE_CORE_FROM_SOURCE=1 (`npm test`) builds the core. Here a cargo, rustup and
//     wasm-bindgen that only leave a mark stand first on PATH (CARGO_HOME/bin, which scripts/env.sh
//     puts there), and setup must not run any;
//   - the development dependencies come beside what serving needs (scripts/npm-deps.sh, issue #42):
//     after a serving install, SHARDGATE_DEV_DEPS=1 adds them in place, nothing removed (`npm ci`
//     would delete node_modules under a gateway running from it), package.json and the lock
//     untouched, the same tree as `npm ci`. On a small project of local tarballs, npm offline;
//   - stopping stops everything: npm runs the script in a shell that does not pass a `kill` on, so
//     the gateway stops by itself once what started it is gone, workerd with it.
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

describe("npm dependencies", () => {
  it("adds the development dependencies beside a serving install: nothing removed, the lock untouched, the tree of npm ci", () => {
    const dir = join(home, "npm");
    const project = join(dir, "project");
    // Offline: a local tarball is all npm may read, so no registry is asked.
    const env = { ...process.env, npm_config_offline: "true", npm_config_update_notifier: "false", npm_config_cache: join(dir, "cache") };
    const run = (cmd: string, args: string[], cwd: string, extra: Record<string, string> = {}) => {
      const r = spawnSync(cmd, args, { cwd, env: { ...env, ...extra }, encoding: "utf8", timeout: 60_000 });
      expect(r.status, `${cmd} ${args.join(" ")}: ${r.stderr}`).toBe(0);
      return r;
    };
    mkdirSync(project, { recursive: true });
    for (const name of ["served", "devtool"]) {
      const pkg = join(dir, name);
      mkdirSync(pkg);
      writeFileSync(join(pkg, "package.json"), JSON.stringify({ name, version: "1.0.0" }));
      writeFileSync(join(pkg, "index.js"), `module.exports = ${JSON.stringify(name)};\n`);
      run("npm", ["pack", "--silent", "--pack-destination", project], pkg);
    }
    const manifest = {
      name: "p",
      version: "1.0.0",
      private: true,
      dependencies: { served: "file:served-1.0.0.tgz" },
      devDependencies: { devtool: "file:devtool-1.0.0.tgz" },
    };
    writeFileSync(join(project, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
    run("npm", ["install", "--package-lock-only", "--no-audit", "--no-fund"], project);
    const clean = join(dir, "clean");
    cpSync(project, clean, { recursive: true });
    const before = { manifest: readFileSync(join(project, "package.json"), "utf8"), lock: readFileSync(join(project, "package-lock.json"), "utf8") };
    const npmDeps = join(ROOT, "scripts/npm-deps.sh");
    const stamp = () => readFileSync(join(project, "node_modules/.shardgate-install.sha256"), "utf8").trim().split(" ")[1];

    run("bash", [npmDeps], project);
    expect(stamp()).toBe("serve");
    expect(existsSync(join(project, "node_modules/served/index.js"))).toBe(true);
    expect(existsSync(join(project, "node_modules/devtool"))).toBe(false);
    // A file npm does not know of in what is installed: `npm ci` would remove it with node_modules.
    const mark = join(project, "node_modules/served/in-use");
    writeFileSync(mark, "");

    const dev = run("bash", [npmDeps], project, { SHARDGATE_DEV_DEPS: "1" });
    expect(dev.stderr).toContain("npm install --include=dev");
    expect(stamp()).toBe("dev");
    expect(existsSync(join(project, "node_modules/devtool/index.js"))).toBe(true);
    expect(existsSync(mark), "what was installed was removed").toBe(true);
    expect(readFileSync(join(project, "package.json"), "utf8")).toBe(before.manifest);
    expect(readFileSync(join(project, "package-lock.json"), "utf8")).toBe(before.lock);
    // Installed again, nothing more happens.
    expect(run("bash", [npmDeps], project, { SHARDGATE_DEV_DEPS: "1" }).stderr).toBe("");

    run("npm", ["ci", "--no-audit", "--no-fund"], clean);
    // What npm says is installed, and where from (its own directory's name taken out).
    const tree = (cwd: string) => JSON.parse(run("npm", ["ls", "--all", "--json"], cwd).stdout.replaceAll(cwd, "."));
    expect(tree(project)).toEqual(tree(clean));
  }, 120_000);
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
