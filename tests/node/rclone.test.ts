// End to end with rclone (go-installed by setup at a pinned version) as its docs configure an
// S3-compatible provider ("Other", path style): copy a directory up (a file above the upload
// cutoff as a multipart upload), check it (sizes and MD5s, rclone's own hash for multipart
// objects), read pieces with cat --offset --count, copy it back down, purge.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";
import { goTool, run, runOk, type RunResult } from "./tools";

const MIB = 1 << 20;
const gateway = new Gateway();
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shardgate-rclone-"));
  await gateway.start();
}, 90_000);
afterAll(async () => {
  await gateway.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** rclone with the remote "sg:" configured through environment variables, no config file. */
function rclone(...args: string[]): Promise<RunResult> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    RCLONE_CONFIG: join(dir, "no-rclone.conf"),
    RCLONE_CONFIG_SG_TYPE: "s3",
    RCLONE_CONFIG_SG_PROVIDER: "Other",
    RCLONE_CONFIG_SG_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
    RCLONE_CONFIG_SG_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
    RCLONE_CONFIG_SG_ENDPOINT: gateway.base,
    RCLONE_CONFIG_SG_REGION: "us-east-1",
    RCLONE_CONFIG_SG_FORCE_PATH_STYLE: "true",
  };
  return run(goTool("rclone"), [...args, "--retries", "1", "--low-level-retries", "1"], { env, cwd: dir, timeoutMs: 110_000 });
}

async function rcloneOk(...args: string[]): Promise<string> {
  const res = await rclone(...args);
  if (res.code !== 0) throw new Error(`rclone ${args.join(" ")} exited with ${res.code}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`);
  return res.stdout;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("rclone against the gateway", () => {
  const files: Record<string, Uint8Array> = {
    "a.txt": new TextEncoder().encode("hello from rclone\n"),
    "sub/b.bin": randomBytes(300_001, 1),
    "sub/deeper/c.bin": randomBytes(2 * MIB + 7, 2),
    "big.bin": randomBytes(23 * MIB + 5, 3),
  };

  it("runs the pinned version", async () => {
    expect(await runOk(goTool("rclone"), ["version"], { env: { PATH: process.env.PATH } })).toMatchObject({
      stdout: expect.stringMatching(/^rclone v1\.76\.0/),
    });
  });

  it("copy up (big.bin as multipart: 10 MiB cutoff, 5 MiB chunks), then check sizes and hashes", async () => {
    const src = join(dir, "src");
    for (const [path, data] of Object.entries(files)) {
      mkdirSync(join(src, path, ".."), { recursive: true });
      writeFileSync(join(src, path), data);
    }
    await rcloneOk("mkdir", "sg:rclone");
    const logFrom = gateway.log.length;
    await rcloneOk("copy", src, "sg:rclone/data", "--s3-upload-cutoff", "10M", "--s3-chunk-size", "5M");
    const ops = gateway.requests(logFrom).map((l) => `${l.op} ${l.status}`);
    expect(ops.filter((o) => o === "UploadPart 200")).toHaveLength(5);
    expect(ops).toContain("CompleteMultipartUpload 200");

    const check = await rclone("check", src, "sg:rclone/data");
    expect(check.code, check.stderr).toBe(0);
    expect(check.stderr).toMatch(/0 differences found/);
    expect(check.stderr).toMatch(/4 matching files/);

    const listed = (await rcloneOk("lsl", "sg:rclone/data"))
      .trim()
      .split("\n")
      .map((l) => l.trim().split(/\s+/));
    expect(Object.fromEntries(listed.map((f) => [f[f.length - 1], Number(f[0])]))).toEqual(
      Object.fromEntries(Object.entries(files).map(([p, d]) => [p, d.length])),
    );
  }, 120_000);

  it("cat --offset --count reads exactly those bytes (ranged GETs)", async () => {
    const big = files["big.bin"];
    for (const [offset, count] of [
      [0, 10],
      [5 * MIB - 3, 100_000],
      [big.length - 17, 17],
    ]) {
      const res = await rclone("cat", "sg:rclone/data/big.bin", "--offset", String(offset), "--count", String(count));
      expect(res.code, res.stderr).toBe(0);
      expect(sha256(res.stdoutBytes), `${offset}+${count}`).toBe(sha256(big.subarray(offset, offset + count)));
    }
  });

  it("ls --s3-versions shows each object of the unversioned bucket once (ListObjectVersions)", async () => {
    const listed = (await rcloneOk("ls", "sg:rclone/data", "--s3-versions"))
      .trim()
      .split("\n")
      .map((l) => l.trim().split(/\s+/).pop());
    expect(listed.sort()).toEqual(Object.keys(files).sort());
  });

  it("versioning through rclone: backend versioning Enabled, then --s3-versions lists the old version beside the current one", async () => {
    await rcloneOk("mkdir", "sg:rclone-versions");
    await rcloneOk("backend", "versioning", "sg:rclone-versions", "Enabled");
    expect((await rcloneOk("backend", "versioning", "sg:rclone-versions")).trim()).toBe('"Enabled"');
    const file = join(dir, "note.txt");
    writeFileSync(file, "first version\n");
    await rcloneOk("copyto", file, "sg:rclone-versions/note.txt");
    writeFileSync(file, "second, longer version\n");
    await rcloneOk("copyto", file, "sg:rclone-versions/note.txt");
    const names = (await rcloneOk("ls", "sg:rclone-versions", "--s3-versions"))
      .trim()
      .split("\n")
      .map((l) => l.trim().split(/\s+/).pop() as string);
    expect(names).toHaveLength(2);
    expect(names).toContain("note.txt");
    expect(names.find((n) => n !== "note.txt")).toMatch(/^note-v\d{4}-\d\d-\d\d-\d{6}-\d{3}\.txt$/);
    expect(await rcloneOk("cat", "sg:rclone-versions/note.txt")).toBe("second, longer version\n");
  });

  it("copy back down byte for byte, then purge", async () => {
    const down = join(dir, "down");
    await rcloneOk("copy", "sg:rclone/data", down);
    for (const [path, data] of Object.entries(files)) expect(sha256(readFileSync(join(down, path))), path).toBe(sha256(data));
    await rcloneOk("purge", "sg:rclone/data");
    expect((await rcloneOk("ls", "sg:rclone")).trim()).toBe("");
  }, 120_000);
});
