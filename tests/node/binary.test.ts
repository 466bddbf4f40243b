// The one-file binary (`npm run build:binary`, scripts/build-binary.mjs, issue #32): built here from
// the working tree into a temporary directory, then run as a user would, from a directory of its
// own with nothing else on hand: it serves with the same flags and shardgate.json as `npm start`
// (a bad file is refused in one line), answers an S3 client, serves the console, runs the admin
// CLI; killed with SIGKILL, it takes its workerd with it (the port is free again) and a restart on
// the same data directory reads back every byte.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { CreateBucketCommand, GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "./gateway";

const root = fileURLToPath(new URL("../..", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "shardgate-binary-"));
const binary = join(scratch, "shardgate");
const home = join(scratch, "home"); // the working directory: relative paths resolve here
const running: ChildProcess[] = [];
const CREDENTIALS = { accessKeyId: "binary-test-key", secretAccessKey: "binary-test-secret-0123456789" };
const ENV = { SHARDGATE_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, SHARDGATE_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey };

beforeAll(() => {
  const build = spawnSync(process.execPath, [join(root, "scripts/build-binary.mjs"), "--out", binary], { cwd: root, encoding: "utf8", timeout: 240_000 });
  if (build.status !== 0) throw new Error(`build-binary failed:\n${build.stderr}`);
  mkdirSync(home);
}, 300_000);

afterAll(() => {
  for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 }); // a gateway just sent SIGTERM may still be writing there
});

/** Starts the binary in `home` and waits for its health check and its banner. */
async function start(args: string[]): Promise<{ child: ChildProcess; output: () => string }> {
  let output = "";
  const child = spawn(binary, args, { cwd: home, stdio: ["ignore", "pipe", "pipe"], env: { PATH: "/usr/bin:/bin", HOME: home, ...ENV } });
  running.push(child);
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const port = args[args.indexOf("--port") + 1];
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the binary exited with ${child.exitCode}:\n${output}`);
    const up = await fetch(`http://127.0.0.1:${port}/_shardgate/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (up && output.includes("shardgate is serving")) return { child, output: () => output };
    if (Date.now() > deadline) throw new Error(`the binary did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The pids of workerd processes whose command line names `dataDir`. */
function workerdOf(dataDir: string): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .filter((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, "utf8");
        return cmd.includes("workerd\0serve") && cmd.includes(dataDir);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Runs `command` to its end in `cwd`: its exit status and stderr. */
function runToEnd(command: string, args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, stdio: ["ignore", "ignore", "pipe"], env: { PATH: "/usr/bin:/bin", HOME: home, ...ENV } });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", (e) => resolve({ code: null, stderr: String(e) }));
    child.on("exit", (code) => resolve({ code, stderr }));
  });
}

describe("the one-file binary", () => {
  it("is one executable file that names its build", () => {
    expect(statSync(binary).mode & 0o111).not.toBe(0);
    const version = spawnSync(binary, ["--version"], { encoding: "utf8", cwd: home });
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^shardgate \d+\.\d+\.\d+ \(build [0-9a-f]{12}\)\n$/);
  });

  it("refuses a typo in shardgate.json in one line, as npm start does, and writes nothing", () => {
    writeFileSync(join(home, "typo.json"), JSON.stringify({ parityShard: 3 }));
    const run = spawnSync(binary, ["--config", "typo.json", "--data-dir", "never"], { encoding: "utf8", cwd: home, env: { PATH: "/usr/bin:/bin", ...ENV } });
    expect(run.status).toBe(1);
    const lines = run.stderr.trim().split("\n");
    expect(lines, run.stderr).toHaveLength(1);
    expect(lines[0]).toContain("parityShard");
    expect(lines[0]).toContain("parityShards");
    expect(existsSync(join(home, "never"))).toBe(false);
    // A mistyped serve flag as the first word is named, as `serve --prot` names it.
    const flag = spawnSync(binary, ["--prot", "1"], { encoding: "utf8", cwd: home, env: { PATH: "/usr/bin:/bin", ...ENV } });
    expect(flag.status).not.toBe(0);
    expect(flag.stderr).toContain("--port");
    expect(existsSync(join(home, ".shardgate"))).toBe(false);
  });

  it("refuses a runtime directory that is a symbolic link, and unpacks again a build directory that is not whole", async () => {
    const dataDir = join(home, "planted");
    const elsewhere = join(scratch, "elsewhere");
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    mkdirSync(join(elsewhere, "keep"), { recursive: true });
    writeFileSync(join(elsewhere, "keep", "notes.txt"), "mine");
    symlinkSync(elsewhere, join(dataDir, "runtime"));
    const port = await freePort();
    const refused = await runToEnd(binary, ["--data-dir", dataDir, "--port", String(port), "--console-port", String(await freePort())], home);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("not a symbolic link");
    expect(readFileSync(join(elsewhere, "keep", "notes.txt"), "utf8")).toBe("mine");
    rmSync(join(dataDir, "runtime"));
    // A build directory cut short (a crash while unpacking, a truncated workerd): made again, then served.
    const served = await start(["--data-dir", "planted", "--port", String(port), "--console-port", String(await freePort())]);
    const [build] = readdirSync(join(dataDir, "runtime"));
    served.child.kill("SIGTERM");
    await new Promise((r) => served.child.once("exit", r));
    truncateSync(join(dataDir, "runtime", build as string, "workerd"), 0);
    const again = await start(["--data-dir", "planted", "--port", String(port), "--console-port", String(await freePort())]);
    expect(statSync(join(dataDir, "runtime", build as string, "workerd")).size).toBeGreaterThan(1_000_000);
    again.child.kill("SIGTERM");
    await new Promise((r) => again.child.once("exit", r));
  }, 120_000);

  it("refuses a data directory below a directory other users can write, unless that one is sticky like /tmp (issue #39)", async () => {
    // Whoever can write a parent could swap the runtime directory for their own between the check and workerd's start.
    const shared = join(scratch, "shared");
    const dataDir = join(shared, "data");
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    chmodSync(shared, 0o777);
    const ports = ["--port", String(await freePort()), "--console-port", String(await freePort())];
    const refused = spawnSync(binary, ["--data-dir", dataDir, ...ports], {
      encoding: "utf8",
      cwd: home,
      env: { PATH: "/usr/bin:/bin", ...ENV },
      timeout: 60_000,
    });
    expect(refused.status, refused.stderr).toBe(1);
    expect(refused.stderr.trim()).toBe(
      `shardgate: refusing the runtime directory ${dataDir}: other users can write ${shared} (mode 0777): chmod go-w ${shared}`,
    );
    expect(existsSync(join(dataDir, "runtime"))).toBe(false);
    chmodSync(shared, 0o1777);
    const served = await start(["--data-dir", dataDir, ...ports]);
    served.child.kill("SIGTERM");
    await new Promise((r) => served.child.once("exit", r));
  }, 120_000);

  it("serves S3 and the console, survives kill -9 and reads back every byte after a restart", async () => {
    const port = await freePort();
    const consolePort = await freePort();
    const args = ["--data-dir", "data", "--port", String(port), "--console-port", String(consolePort)];
    const first = await start(args);
    expect(first.output()).toContain("one-file binary");
    const dataDir = join(home, "data");
    // The runtime's parts were unpacked into the data directory, and workerd runs from there.
    expect(readdirSync(join(dataDir, "runtime"))).toHaveLength(1);
    const endpoint = `http://127.0.0.1:${port}`;
    const s3 = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true, credentials: CREDENTIALS });
    await s3.send(new CreateBucketCommand({ Bucket: "kept" }));
    const bodies = new Map([
      ["small.txt", Buffer.from("hello from one file")],
      ["big.bin", randomBytes(5 * 1024 * 1024 + 17)],
    ]);
    for (const [Key, Body] of bodies) await s3.send(new PutObjectCommand({ Bucket: "kept", Key, Body }));
    const page = await fetch(`http://127.0.0.1:${consolePort}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<html");

    const workerd = workerdOf(dataDir);
    expect(workerd).toHaveLength(1);
    first.child.kill("SIGKILL");
    // Its workerd goes with it (parent-death signal): nothing keeps the port.
    const deadline = Date.now() + 20_000;
    while (workerdOf(dataDir).length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(workerdOf(dataDir)).toEqual([]);

    await start(args);
    for (const [Key, Body] of bodies) {
      const got = await s3.send(new GetObjectCommand({ Bucket: "kept", Key }));
      expect(Buffer.from(await (got.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray()).equals(Body), Key).toBe(true);
    }
    // A second gateway on the same data directory is refused, started by a relative path or by
    // `npm start` (the lock is a flock on DATA/serve.lock, not a pid to recognise): after its wait.
    const ports = ["--port", String(await freePort()), "--console-port", String(await freePort())];
    const [viaPath, viaNpm] = await Promise.all([
      runToEnd("./shardgate", ["--data-dir", "home/data", ...ports], scratch),
      runToEnd(process.execPath, [join(root, "scripts/serve.mjs"), "--data-dir", join(home, "data"), ...ports], root),
    ]);
    for (const run of [viaPath, viaNpm]) {
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain("another gateway serves");
    }
    expect((await fetch(`${endpoint}/_shardgate/health`)).status).toBe(200);
    // The admin CLI is in the same file.
    const status = spawnSync(binary, ["status", "--json", "--endpoint", endpoint], {
      encoding: "utf8",
      cwd: home,
      env: { PATH: "/usr/bin:/bin", AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey },
    });
    expect(status.status, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).nodes).toHaveLength(6);
    s3.destroy();
  }, 180_000);
});
