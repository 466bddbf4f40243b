// End to end with s3cmd (from PyPI, pinned in tests/python/requirements.txt): put (above its
// 15 MiB default chunk size as a multipart upload), get, ls, del, with a config file pointing at
// the gateway the way its docs describe for S3-compatible services.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";
import { clientEnv, pythonTool, runOk } from "./tools";

const MIB = 1 << 20;
const gateway = new Gateway();
let dir: string;
let config: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shardgate-s3cmd-"));
  await gateway.start();
  const hostPort = gateway.base.replace(/^http:\/\//, "");
  config = join(dir, "s3cfg");
  writeFileSync(
    config,
    [
      "[default]",
      `access_key = ${CREDENTIALS.accessKeyId}`,
      `secret_key = ${CREDENTIALS.secretAccessKey}`,
      `host_base = ${hostPort}`,
      `host_bucket = ${hostPort}`, // no %(bucket)s: path-style requests
      "bucket_location = us-east-1",
      "use_https = False",
      "signature_v2 = False",
      "",
    ].join("\n"),
  );
}, 90_000);
afterAll(async () => {
  await gateway.dispose();
  rmSync(dir, { recursive: true, force: true });
});

async function s3cmd(...args: string[]): Promise<string> {
  const res = await runOk(pythonTool("s3cmd"), ["-c", config, "--no-progress", ...args], { env: clientEnv({}), cwd: dir, timeoutMs: 110_000 });
  return res.stdout;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("s3cmd against the gateway", () => {
  const small = randomBytes(123_457, 1);
  const big = randomBytes(33 * MIB + 99, 2);

  it("mb, put (one small file, one multipart), ls, get, del, rb", async () => {
    await s3cmd("mb", "s3://s3cmd");
    writeFileSync(join(dir, "small.bin"), small);
    writeFileSync(join(dir, "big.bin"), big);
    await s3cmd("put", "small.bin", "s3://s3cmd/dir/small.bin");
    const logFrom = gateway.log.length;
    await s3cmd("put", "big.bin", "s3://s3cmd/dir/big.bin");
    // Above its 15 MiB chunk size s3cmd uploads in parts: 3 here.
    const ops = gateway.requests(logFrom).map((l) => `${l.op} ${l.status}`);
    expect(ops.filter((o) => o === "UploadPart 200")).toHaveLength(3);
    expect(ops).toContain("CompleteMultipartUpload 200");

    const listing = (await s3cmd("ls", "s3://s3cmd/dir/")).trim().split("\n");
    expect(listing.map((l) => l.split(/\s+/).slice(-2))).toEqual([
      [String(big.length), "s3://s3cmd/dir/big.bin"],
      [String(small.length), "s3://s3cmd/dir/small.bin"],
    ]);
    expect(await s3cmd("ls", "s3://s3cmd/")).toMatch(/DIR\s+s3:\/\/s3cmd\/dir\//);

    await s3cmd("get", "s3://s3cmd/dir/big.bin", "big.down");
    await s3cmd("get", "s3://s3cmd/dir/small.bin", "small.down");
    expect(sha256(readFileSync(join(dir, "big.down")))).toBe(sha256(big));
    expect(sha256(readFileSync(join(dir, "small.down")))).toBe(sha256(small));
    expect(await s3cmd("info", "s3://s3cmd/dir/big.bin")).toContain(`File size: ${big.length}`);

    await s3cmd("del", "s3://s3cmd/dir/big.bin", "s3://s3cmd/dir/small.bin");
    expect((await s3cmd("ls", "s3://s3cmd/dir/")).trim()).toBe("");
    await s3cmd("rb", "s3://s3cmd");
    expect(await s3cmd("ls")).not.toContain("s3://s3cmd");
  }, 120_000);
});
