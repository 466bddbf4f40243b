// End to end with the MinIO client mc (go-installed by setup at a pinned version), configured the
// way its docs describe (an alias from MC_HOST_<alias>): mb, cp up (signed streaming chunks; above
// 16 MiB as a multipart upload) and down, ls, cat, rm, rb.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";
import { goTool, run, type RunResult } from "./tools";

const MIB = 1 << 20;
const gateway = new Gateway();
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shardgate-mc-"));
  await gateway.start();
}, 90_000);
afterAll(async () => {
  await gateway.dispose();
  rmSync(dir, { recursive: true, force: true });
});

function mc(...args: string[]): Promise<RunResult> {
  const host = gateway.base.replace("http://", `http://${CREDENTIALS.accessKeyId}:${CREDENTIALS.secretAccessKey}@`);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, MC_HOST_sg: host, MC_REGION: "us-east-1" };
  return run(goTool("mc"), ["--config-dir", join(dir, ".mc"), "--no-color", ...args], { env, cwd: dir, timeoutMs: 110_000 });
}

async function mcOk(...args: string[]): Promise<RunResult> {
  const res = await mc(...args);
  if (res.code !== 0) throw new Error(`mc ${args.join(" ")} exited with ${res.code}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`);
  return res;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("mc against the gateway", () => {
  const small = randomBytes(777_777, 1);
  const big = randomBytes(40 * MIB + 3, 2);

  it("mb, cp up (one single PUT, one multipart) and down, ls, cat, rm, rb", async () => {
    await mcOk("mb", "sg/mc-bucket");
    writeFileSync(join(dir, "small.bin"), small);
    writeFileSync(join(dir, "big.bin"), big);
    const logFrom = gateway.log.length;
    await mcOk("cp", "small.bin", "sg/mc-bucket/dir/small.bin");
    await mcOk("cp", "big.bin", "sg/mc-bucket/dir/big.bin");
    const ops = gateway.requests(logFrom).map((l) => `${l.op} ${l.status}`);
    expect(ops).toContain("PutObject 200");
    expect(ops).toContain("CompleteMultipartUpload 200");

    const listing = (await mcOk("ls", "--json", "sg/mc-bucket/dir/")).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { key: string; size: number });
    expect(listing.map((e) => [e.key, e.size])).toEqual([
      ["big.bin", big.length],
      ["small.bin", small.length],
    ]);

    await mcOk("cp", "sg/mc-bucket/dir/big.bin", "big.down");
    expect(sha256(readFileSync(join(dir, "big.down")))).toBe(sha256(big));
    expect(sha256((await mcOk("cat", "sg/mc-bucket/dir/small.bin")).stdoutBytes)).toBe(sha256(small));

    await mcOk("rm", "--recursive", "--force", "sg/mc-bucket/dir/");
    expect((await mcOk("ls", "sg/mc-bucket/")).stdout.trim()).toBe("");
    await mcOk("rb", "sg/mc-bucket");
    expect((await mcOk("ls", "sg/")).stdout).not.toContain("mc-bucket");
  }, 120_000);
});
