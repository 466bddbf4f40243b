// The clients that scripts/setup.sh installs: into .tools/python the AWS CLI v1, boto3 and s3cmd
// (pinned in tests/python/requirements.txt), into .tools/go/bin rclone and mc (pinned in
// setup.sh), and a small runner for them. The binaries are
// resolved from the repository, not from PATH, so the tests work however vitest was started.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { expect } from "vitest";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/**
 * Where the console tests put their screenshots: an ignored folder, so that `npm test` leaves the
 * tree as it found it; `npm run screenshots` points it at docs/screenshots to refresh the docs' pictures.
 */
export const SCREENSHOTS = resolve(ROOT, process.env.SHARDGATE_SCREENSHOTS ?? ".test-output/screenshots");
export const PYTHON_BIN = join(ROOT, ".tools/python/bin");
export const GO_BIN = join(ROOT, ".tools/go/bin");

/** The absolute path of a program in .tools/python/bin (`aws`, `python`). */
export function pythonTool(name: string): string {
  const path = join(PYTHON_BIN, name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`bash scripts/setup.sh\` (it installs tests/python/requirements.txt)`);
  return path;
}

/** The absolute path of a Go-built client in .tools/go/bin (`rclone`, `mc`), installed by setup. */
export function goTool(name: string): string {
  const path = join(GO_BIN, name);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`bash scripts/setup.sh\` (it go-installs the pinned rclone and mc)`);
  return path;
}

/**
 * The environment for a spawned AWS client: the test process's environment without any AWS_*
 * variable of the machine's (profiles, endpoints, session tokens), .tools/python/bin first on PATH,
 * and `extra` on top.
 */
export function clientEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith("AWS_")) env[name] = value;
  env.PATH = `${PYTHON_BIN}:${process.env.PATH ?? ""}`;
  env.PYTHONDONTWRITEBYTECODE = "1";
  env.AWS_EC2_METADATA_DISABLED = "true"; // never probe the instance metadata service
  return { ...env, ...extra };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  /** stdout as the program wrote it (for binary output). */
  stdoutBytes: Buffer;
  stderr: string;
}

/** Runs a program to its end (killing it after timeoutMs) and collects its output. */
export function run(cmd: string, args: string[], opts: { env: NodeJS.ProcessEnv; input?: string; cwd?: string; timeoutMs?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: opts.env, cwd: opts.cwd ?? ROOT, stdio: ["pipe", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 55_000);
    child.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString() + (signal ? `\n[killed by ${signal}]` : "");
      const stdoutBytes = Buffer.concat(out);
      resolve({ code, stdout: stdoutBytes.toString(), stdoutBytes, stderr });
    });
    child.stdin.end(opts.input ?? "");
  });
}

/** A `shardgate` run that failed with `code` and said so on exactly one line of stderr (no stack trace): that line. */
export function oneLineError(res: RunResult, code: number): string {
  expect(res.code, `stdout: ${res.stdout}\nstderr: ${res.stderr}`).toBe(code);
  const lines = res.stderr.trimEnd().split("\n");
  expect(lines, res.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^shardgate: /);
  expect(res.stderr).not.toMatch(/\n\s+at /);
  return lines[0] as string;
}

/** `run`, and fail with the program's output unless it exited 0. */
export async function runOk(cmd: string, args: string[], opts: Parameters<typeof run>[2]): Promise<RunResult> {
  const res = await run(cmd, args, opts);
  if (res.code !== 0) throw new Error(`${cmd} ${args.join(" ")} exited with ${res.code}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`);
  return res;
}

/**
 * Starts scripts/serve.mjs with `args` (and `env` over this process's), adds it to `running` (the
 * caller kills those after its tests) and waits, 90 s at most, until `ready` says it answers; its
 * output so far. Throws with the output when it exits or never comes up.
 */
export async function startServe(
  args: string[],
  env: Record<string, string>,
  ready: () => Promise<boolean>,
  running: ChildProcess[],
): Promise<{ child: ChildProcess; output: () => string }> {
  let output = "";
  const child = spawn(process.execPath, [join(ROOT, "scripts/serve.mjs"), ...args], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  running.push(child);
  child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`serve.mjs exited with ${child.exitCode}:\n${output}`);
    if (await ready().catch(() => false)) return { child, output: () => output };
    if (Date.now() > deadline) throw new Error(`serve.mjs did not come up:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
