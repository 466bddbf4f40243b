// End to end with the real AWS CLI (v1, from PyPI, pinned in tests/python/requirements.txt and
// installed by scripts/setup.sh into .tools/python) against the gateway as `npm start` serves it, as
// README's "Getting started" tells a user to drive it, with the CLI's defaults but 4 requests in flight: mb, cp up
// and down (above 8 MiB as multipart uploads of 8 MiB parts with CRC32 checksums, and parallel
// ranged GETs down), sync of a tree both ways, ls, a ranged get-object, rm, rb.
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";
import { clientEnv, pythonTool, ROOT, run, runOk, type RunResult } from "./tools";

const MIB = 1 << 20;
const gateway = new Gateway();
let dir: string;
let defaultConfig: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shardgate-aws-cli-"));
  defaultConfig = join(dir, "config");
  // 4 requests in flight instead of the CLI's 10: under `wrangler dev` one isolate serves them
  // all, and wrangler dev's proxy drops connections when that isolate is saturated (see README).
  writeFileSync(defaultConfig, "[default]\nregion = us-east-1\ns3 =\n  max_concurrent_requests = 4\n");
  await gateway.start();
}, 90_000);
afterAll(async () => {
  await gateway.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** `aws --endpoint-url <gateway> ARGS…` with the gateway's credentials (or the given secret, or other credentials). */
function aws(
  args: string[],
  opts: { config?: string; secret?: string; timeoutMs?: number; credentials?: { id: string; secret: string; token?: string } } = {},
): Promise<RunResult> {
  const env = clientEnv({
    AWS_ACCESS_KEY_ID: opts.credentials?.id ?? CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: opts.credentials?.secret ?? opts.secret ?? CREDENTIALS.secretAccessKey,
    ...(opts.credentials?.token ? { AWS_SESSION_TOKEN: opts.credentials.token } : {}),
    AWS_DEFAULT_REGION: "us-east-1",
    AWS_CONFIG_FILE: opts.config ?? defaultConfig,
    AWS_SHARED_CREDENTIALS_FILE: join(dir, "no-credentials-file"),
  });
  return run(pythonTool("aws"), ["--endpoint-url", gateway.base, ...args], { env, cwd: dir, timeoutMs: opts.timeoutMs ?? 170_000 });
}

async function awsOk(args: string[], opts: Parameters<typeof aws>[1] = {}): Promise<string> {
  const res = await aws(args, opts);
  if (res.code !== 0) throw new Error(`aws ${args.join(" ")} exited with ${res.code}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`);
  return res.stdout;
}

/** Every file under `root`: relative path → sha256. */
function readTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else
        out[path] = createHash("sha256")
          .update(readFileSync(join(root, path)))
          .digest("hex");
    }
  };
  walk("");
  return out;
}

function digests(files: Map<string, Uint8Array>): Record<string, string> {
  return Object.fromEntries([...files].map(([path, data]) => [path, createHash("sha256").update(data).digest("hex")]));
}

function md5(data: Uint8Array): string {
  return createHash("md5").update(data).digest("hex");
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

describe("the AWS CLI (v1) against the gateway", () => {
  const five = randomBytes(5 * MIB, 5);
  const hundred = randomBytes(100 * MIB + 12345, 100);
  const nestedKey = "nested dir/été+1 & more.txt"; // space, UTF-8, +, &: all escaped on the wire

  it("runs the pinned CLI", async () => {
    const version = (await runOk(pythonTool("aws"), ["--version"], { env: clientEnv({}) })).stdout;
    const pinned = readFileSync(join(ROOT, "tests/python/requirements.txt"), "utf8").match(/^awscli==(\S+)$/m)?.[1];
    expect(pinned).toBeDefined();
    expect(version).toContain(`aws-cli/${pinned} `);
  });

  it("aws s3 mb", async () => {
    expect(await awsOk(["s3", "mb", "s3://demo"])).toContain("make_bucket: demo");
    const again = await aws(["s3", "mb", "s3://demo"]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain("BucketAlreadyOwnedByYou");
  });

  it("aws s3 cp a 5 MiB file up and back down", async () => {
    writeFileSync(join(dir, "five.bin"), five);
    expect(await awsOk(["s3", "cp", "five.bin", "s3://demo/five.bin"])).toContain("upload: ./five.bin to s3://demo/five.bin");
    writeFileSync(join(dir, "small.txt"), "hello from a nested key\n");
    await awsOk(["s3", "cp", "small.txt", `s3://demo/${nestedKey}`]);

    expect(await awsOk(["s3", "cp", "s3://demo/five.bin", "five.down"])).toContain("download: s3://demo/five.bin to ./five.down");
    expect(sameBytes(readFileSync(join(dir, "five.down")), five)).toBe(true);
    await awsOk(["s3", "cp", `s3://demo/${nestedKey}`, "small.down"]);
    expect(readFileSync(join(dir, "small.down"), "utf8")).toBe("hello from a nested key\n");

    const head = JSON.parse(await awsOk(["s3api", "head-object", "--bucket", "demo", "--key", "five.bin"])) as Record<string, unknown>;
    expect(head).toMatchObject({ ContentLength: five.length, ETag: `"${md5(five)}"`, AcceptRanges: "bytes" });
  });

  it("aws s3 ls lists the bucket, and the objects with their sizes", async () => {
    expect(await awsOk(["s3", "ls"])).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d demo$/m);

    const top = (await awsOk(["s3", "ls", "s3://demo/"])).trimEnd().split("\n");
    expect(top).toHaveLength(2);
    expect(top[0]).toMatch(/^\s+PRE nested dir\/$/);
    expect(top[1]).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d +${five.length} five\\.bin$`));

    const all = (await awsOk(["s3", "ls", "--recursive", "s3://demo"])).trimEnd().split("\n");
    expect(all.map((l) => l.replace(/^\S+ \S+ +/, ""))).toEqual([`${five.length} five.bin`, `24 ${nestedKey}`]);
  });

  it("aws s3api list-object-versions shows each object once, as version null (the bucket is unversioned)", async () => {
    const out = JSON.parse(await awsOk(["s3api", "list-object-versions", "--bucket", "demo", "--max-items", "10"])) as {
      Versions: { Key: string; VersionId: string; IsLatest: boolean; Size: number }[];
    };
    expect(out.Versions.map((v) => [v.Key, v.VersionId, v.IsLatest, v.Size])).toEqual([
      ["five.bin", "null", true, five.length],
      [nestedKey, "null", true, 24],
    ]);
  });

  it("aws s3api versioning: put-bucket-versioning, versions by id, a delete marker, list-object-versions, delete-object --version-id", async () => {
    await awsOk(["s3api", "create-bucket", "--bucket", "cli-versions"]);
    await awsOk(["s3api", "put-bucket-versioning", "--bucket", "cli-versions", "--versioning-configuration", "Status=Enabled"]);
    expect(JSON.parse(await awsOk(["s3api", "get-bucket-versioning", "--bucket", "cli-versions"]))).toEqual({ Status: "Enabled" });
    writeFileSync(join(dir, "v1.txt"), "first");
    writeFileSync(join(dir, "v2.txt"), "second");
    const put = async (file: string) =>
      (JSON.parse(await awsOk(["s3api", "put-object", "--bucket", "cli-versions", "--key", "k", "--body", file])) as { VersionId: string }).VersionId;
    const v1 = await put("v1.txt");
    const v2 = await put("v2.txt");
    const got = JSON.parse(await awsOk(["s3api", "get-object", "--bucket", "cli-versions", "--key", "k", "--version-id", v1, "got.txt"])) as {
      VersionId: string;
    };
    expect(got.VersionId).toBe(v1);
    expect(readFileSync(join(dir, "got.txt"), "utf8")).toBe("first");
    const marker = JSON.parse(await awsOk(["s3api", "delete-object", "--bucket", "cli-versions", "--key", "k"])) as {
      DeleteMarker: boolean;
      VersionId: string;
    };
    expect(marker.DeleteMarker).toBe(true);
    const listed = JSON.parse(await awsOk(["s3api", "list-object-versions", "--bucket", "cli-versions"])) as {
      Versions: { VersionId: string; IsLatest: boolean }[];
      DeleteMarkers: { VersionId: string; IsLatest: boolean }[];
    };
    expect(listed.Versions.map((v) => [v.VersionId, v.IsLatest])).toEqual([
      [v2, false],
      [v1, false],
    ]);
    expect(listed.DeleteMarkers.map((v) => [v.VersionId, v.IsLatest])).toEqual([[marker.VersionId, true]]);
    await awsOk(["s3api", "delete-object", "--bucket", "cli-versions", "--key", "k", "--version-id", marker.VersionId]);
    await awsOk(["s3api", "get-object", "--bucket", "cli-versions", "--key", "k", "back.txt"]);
    expect(readFileSync(join(dir, "back.txt"), "utf8")).toBe("second");
  });

  it("aws s3api bucket tagging and ACLs: put/get/delete-bucket-tagging, get-bucket-acl, put-object-acl --acl private (public-read refused)", async () => {
    await awsOk(["s3api", "create-bucket", "--bucket", "cli-settings", "--acl", "private"]);
    await awsOk(["s3api", "put-bucket-tagging", "--bucket", "cli-settings", "--tagging", "TagSet=[{Key=team,Value=edge},{Key=app,Value=gw}]"]);
    expect(JSON.parse(await awsOk(["s3api", "get-bucket-tagging", "--bucket", "cli-settings"]))).toEqual({
      TagSet: [
        { Key: "app", Value: "gw" },
        { Key: "team", Value: "edge" },
      ],
    });
    await awsOk(["s3api", "delete-bucket-tagging", "--bucket", "cli-settings"]);
    const none = await aws(["s3api", "get-bucket-tagging", "--bucket", "cli-settings"]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain("NoSuchTagSet");
    const acl = JSON.parse(await awsOk(["s3api", "get-bucket-acl", "--bucket", "cli-settings"])) as {
      Owner: { ID: string };
      Grants: { Grantee: { ID: string }; Permission: string }[];
    };
    expect(acl.Grants.map((g) => [g.Grantee.ID, g.Permission])).toEqual([[acl.Owner.ID, "FULL_CONTROL"]]);
    writeFileSync(join(dir, "acl.txt"), "acl");
    await awsOk(["s3", "cp", "--acl", "private", "acl.txt", "s3://cli-settings/acl.txt"]);
    await awsOk(["s3api", "put-object-acl", "--bucket", "cli-settings", "--key", "acl.txt", "--acl", "private"]);
    const refused = await aws(["s3api", "put-object-acl", "--bucket", "cli-settings", "--key", "acl.txt", "--acl", "public-read"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("AccessControlListNotSupported");
  });

  it("aws s3api lifecycle: put/get/delete-bucket-lifecycle-configuration, Expiration on put-object, expiry once the clock moves on", async () => {
    await awsOk(["s3api", "create-bucket", "--bucket", "cli-lifecycle"]);
    const rules = { Rules: [{ ID: "tmp", Filter: { Prefix: "tmp/" }, Status: "Enabled", Expiration: { Days: 2 } }] };
    writeFileSync(join(dir, "lifecycle.json"), JSON.stringify(rules));
    await awsOk(["s3api", "put-bucket-lifecycle-configuration", "--bucket", "cli-lifecycle", "--lifecycle-configuration", "file://lifecycle.json"]);
    expect(JSON.parse(await awsOk(["s3api", "get-bucket-lifecycle-configuration", "--bucket", "cli-lifecycle"]))).toEqual(rules);
    writeFileSync(join(dir, "tmp.txt"), "temporary");
    const put = JSON.parse(await awsOk(["s3api", "put-object", "--bucket", "cli-lifecycle", "--key", "tmp/a.txt", "--body", "tmp.txt"])) as {
      Expiration: string;
    };
    expect(put.Expiration).toMatch(/ 00:00:00 GMT", rule-id="tmp"$/);
    await awsOk(["s3api", "put-object", "--bucket", "cli-lifecycle", "--key", "keep/b.txt", "--body", "tmp.txt"]);
    // The admin API applies the rules as of three days from now.
    const admin = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    const now = encodeURIComponent(new Date(Date.now() + 3 * 24 * 3600 * 1000).toISOString());
    const ran = await admin.fetch(`${gateway.base}/_shardgate/admin/lifecycle?bucket=cli-lifecycle&now=${now}`, { method: "POST" });
    expect(((await ran.json()) as { expired: { current: number } }).expired.current).toBe(1);
    const left = JSON.parse(await awsOk(["s3api", "list-objects-v2", "--bucket", "cli-lifecycle"])) as { Contents: { Key: string }[] };
    expect(left.Contents.map((o) => o.Key)).toEqual(["keep/b.txt"]);
    await awsOk(["s3api", "delete-bucket-lifecycle", "--bucket", "cli-lifecycle"]);
    const none = await aws(["s3api", "get-bucket-lifecycle-configuration", "--bucket", "cli-lifecycle"]);
    expect(none.stderr).toContain("NoSuchLifecycleConfiguration");
  });

  it("aws s3api object lock: create-bucket --object-lock-enabled-for-bucket, lock configuration, retention and legal hold, deletes refused and bypassed", async () => {
    await awsOk(["s3api", "create-bucket", "--bucket", "cli-lock", "--object-lock-enabled-for-bucket"]);
    expect(JSON.parse(await awsOk(["s3api", "get-bucket-versioning", "--bucket", "cli-lock"]))).toEqual({ Status: "Enabled" });
    const config = { ObjectLockEnabled: "Enabled", Rule: { DefaultRetention: { Mode: "COMPLIANCE", Days: 1 } } };
    writeFileSync(join(dir, "lock.json"), JSON.stringify(config));
    await awsOk(["s3api", "put-object-lock-configuration", "--bucket", "cli-lock", "--object-lock-configuration", "file://lock.json"]);
    expect(JSON.parse(await awsOk(["s3api", "get-object-lock-configuration", "--bucket", "cli-lock"]))).toEqual({ ObjectLockConfiguration: config });
    writeFileSync(join(dir, "locked.txt"), "locked");
    const until = new Date(Date.now() + 7 * 24 * 3600 * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    const put = JSON.parse(
      await awsOk([
        ...["s3api", "put-object", "--bucket", "cli-lock", "--key", "g.txt", "--body", "locked.txt"],
        ...["--object-lock-mode", "GOVERNANCE", "--object-lock-retain-until-date", until, "--object-lock-legal-hold-status", "ON"],
      ]),
    ) as { VersionId: string };
    const head = JSON.parse(await awsOk(["s3api", "head-object", "--bucket", "cli-lock", "--key", "g.txt"])) as Record<string, string>;
    expect([head.ObjectLockMode, head.ObjectLockLegalHoldStatus, Date.parse(head.ObjectLockRetainUntilDate as string)]).toEqual([
      "GOVERNANCE",
      "ON",
      Date.parse(until),
    ]);
    const version = ["--bucket", "cli-lock", "--key", "g.txt", "--version-id", put.VersionId];
    const held = await aws(["s3api", "delete-object", ...version, "--bypass-governance-retention"]);
    expect(held.stderr).toContain("AccessDenied");
    await awsOk(["s3api", "put-object-legal-hold", ...version, "--legal-hold", "Status=OFF"]);
    expect(JSON.parse(await awsOk(["s3api", "get-object-legal-hold", ...version]))).toEqual({ LegalHold: { Status: "OFF" } });
    const governed = await aws(["s3api", "delete-object", ...version]);
    expect(governed.stderr).toContain("AccessDenied");
    const retention = JSON.parse(await awsOk(["s3api", "get-object-retention", ...version])) as { Retention: { Mode: string } };
    expect(retention.Retention.Mode).toBe("GOVERNANCE");
    await awsOk(["s3api", "delete-object", ...version, "--bypass-governance-retention"]);
    // The bucket's default COMPLIANCE retention covers a plain put; the CLI sends the checksum it needs.
    await awsOk(["s3", "cp", "locked.txt", "s3://cli-lock/c.txt"]);
    const sealed = JSON.parse(await awsOk(["s3api", "get-object-retention", "--bucket", "cli-lock", "--key", "c.txt"])) as { Retention: { Mode: string } };
    expect(sealed.Retention.Mode).toBe("COMPLIANCE");
    const versions = JSON.parse(await awsOk(["s3api", "list-object-versions", "--bucket", "cli-lock"])) as { Versions: { Key: string; VersionId: string }[] };
    expect(versions.Versions.map((v) => v.Key)).toEqual(["c.txt"]);
    const compliance = await aws([
      "s3api",
      "delete-object",
      "--bucket",
      "cli-lock",
      "--key",
      "c.txt",
      "--version-id",
      versions.Versions[0]?.VersionId as string,
      "--bypass-governance-retention",
    ]);
    expect(compliance.stderr).toContain("AccessDenied");
  });

  it("aws s3api get-object --range returns exactly those bytes", async () => {
    for (const [range, from, to] of [
      ["bytes=1000000-2000099", 1_000_000, 2_000_099],
      ["bytes=0-0", 0, 0],
      ["bytes=5242000-", 5_242_000, five.length - 1],
      ["bytes=-4097", five.length - 4097, five.length - 1],
    ] as const) {
      const out = `range-${from}.bin`;
      const res = JSON.parse(await awsOk(["s3api", "get-object", "--bucket", "demo", "--key", "five.bin", "--range", range, out])) as Record<string, unknown>;
      expect(res).toMatchObject({
        ContentLength: to - from + 1,
        ContentRange: `bytes ${from}-${to}/${five.length}`,
        ETag: `"${md5(five)}"`,
      });
      expect(sameBytes(readFileSync(join(dir, out)), five.subarray(from, to + 1)), range).toBe(true);
    }
    const bad = await aws(["s3api", "get-object", "--bucket", "demo", "--key", "five.bin", "--range", `bytes=${five.length}-`, "never.bin"]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain("InvalidRange");
  });

  it("aws s3 cp a 100 MiB file up (multipart, CRC32 per part) and down (parallel ranged GETs)", async () => {
    writeFileSync(join(dir, "hundred.bin"), hundred);
    const logFrom = gateway.log.length;
    await awsOk(["s3", "cp", "hundred.bin", "s3://demo/big/hundred.bin"]);
    const ops = gateway.requests(logFrom);
    const parts = ops.filter((l) => l.op === "UploadPart");
    expect(ops.filter((l) => l.op === "CreateMultipartUpload")).toHaveLength(1);
    expect(parts).toHaveLength(Math.ceil(hundred.length / (8 * MIB)));
    expect(parts.every((l) => l.status === 200)).toBe(true);
    expect(ops.filter((l) => l.op === "CompleteMultipartUpload").map((l) => l.status)).toEqual([200]);

    await awsOk(["s3", "cp", "s3://demo/big/hundred.bin", "hundred.down"]);
    expect(sameBytes(readFileSync(join(dir, "hundred.down")), hundred)).toBe(true);
    expect(gateway.requests(logFrom).filter((l) => l.op === "GetObject" && l.status === 206).length).toBeGreaterThanOrEqual(3);

    const head = JSON.parse(await awsOk(["s3api", "head-object", "--bucket", "demo", "--key", "big/hundred.bin", "--checksum-mode", "ENABLED"])) as Record<
      string,
      unknown
    >;
    expect(head).toMatchObject({ ContentLength: hundred.length, ETag: expect.stringMatching(new RegExp(`^"[0-9a-f]{32}-${parts.length}"$`)) });
    expect(head.ChecksumCRC32).toEqual(expect.any(String));
    expect(JSON.parse(await awsOk(["s3api", "list-multipart-uploads", "--bucket", "demo"])).Uploads ?? []).toEqual([]);
  }, 180_000);

  it("aws s3 sync a tree of 300 files up, down, and again after changes (with --delete)", async () => {
    const tree = join(dir, "tree");
    const files = new Map<string, Uint8Array>();
    for (let i = 0; i < 300; i++) {
      const path = `d${i % 7}/sub${i % 3}/file-${i}${i % 11 === 0 ? " with space" : ""}.dat`;
      files.set(path, randomBytes(i % 50 === 0 ? 300_000 + i : (i * 997) % 20_000, 1000 + i));
    }
    const writeTree = (root: string, entries: Map<string, Uint8Array>) => {
      for (const [path, data] of entries) {
        mkdirSync(dirname(join(root, path)), { recursive: true });
        writeFileSync(join(root, path), data);
      }
    };
    writeTree(tree, files);
    const up = await awsOk(["s3", "sync", "--no-progress", tree, "s3://demo/tree/"], { timeoutMs: 170_000 });
    expect(up.split("\n").filter((l) => l.startsWith("upload:"))).toHaveLength(300);

    const down = join(dir, "tree-down");
    await awsOk(["s3", "sync", "--no-progress", "s3://demo/tree/", down], { timeoutMs: 170_000 });
    expect(readTree(down)).toEqual(digests(files));

    // Change two files, add one, remove one: the next sync moves exactly those.
    const changed = new Map(files);
    changed.set("d0/sub0/file-0 with space.dat", randomBytes(12_345, 1));
    changed.set("d1/sub1/file-1.dat", randomBytes(777, 2));
    changed.set("new/file.txt", new TextEncoder().encode("new"));
    changed.delete("d2/sub2/file-2.dat");
    rmSync(tree, { recursive: true });
    writeTree(tree, changed);
    const again = (await awsOk(["s3", "sync", "--no-progress", "--delete", tree, "s3://demo/tree/"], { timeoutMs: 170_000 })).trim().split("\n").sort();
    expect(again.filter((l) => l.startsWith("upload:")).length).toBeGreaterThanOrEqual(3);
    expect(again.filter((l) => l.startsWith("delete:"))).toEqual(["delete: s3://demo/tree/d2/sub2/file-2.dat"]);
    await awsOk(["s3", "sync", "--no-progress", "--delete", "s3://demo/tree/", down], { timeoutMs: 170_000 });
    expect(readTree(down)).toEqual(digests(changed));
  }, 360_000);

  it("aws s3 rm, then aws s3 rb (refused while the bucket is not empty)", async () => {
    const notEmpty = await aws(["s3", "rb", "s3://demo"]);
    expect(notEmpty.code).not.toBe(0);
    expect(notEmpty.stderr).toContain("BucketNotEmpty");

    expect(await awsOk(["s3", "rm", "s3://demo/five.bin"])).toContain("delete: s3://demo/five.bin");
    const rest = await awsOk(["s3", "rm", "--recursive", "s3://demo"]);
    expect(rest).toContain("delete: s3://demo/big/hundred.bin");
    expect(rest.split("\n").filter((l) => l.startsWith("delete: s3://demo/tree/"))).toHaveLength(300);
    expect(rest).toContain(`delete: s3://demo/${nestedKey}`);
    expect(await awsOk(["s3", "ls", "--recursive", "s3://demo"])).toBe("");

    expect(await awsOk(["s3", "rb", "s3://demo"])).toContain("remove_bucket: demo");
    expect(await awsOk(["s3", "ls"])).not.toMatch(/ demo$/m);
    const gone = await aws(["s3", "ls", "s3://demo/"]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain("NoSuchBucket");
  });

  it("a wrong secret fails with SignatureDoesNotMatch", async () => {
    const list = await aws(["s3", "ls"], { secret: "not-the-secret" });
    expect(list.code).not.toBe(0);
    expect(list.stderr).toContain("SignatureDoesNotMatch");

    await awsOk(["s3", "mb", "s3://demo-auth"]);
    writeFileSync(join(dir, "auth.txt"), "x".repeat(10_000));
    const put = await aws(["s3", "cp", "auth.txt", "s3://demo-auth/auth.txt"], { secret: "not-the-secret" });
    expect(put.code).not.toBe(0);
    expect(put.stderr).toContain("SignatureDoesNotMatch");
    expect(await awsOk(["s3", "ls", "s3://demo-auth/"])).toBe("");
  });

  it("aws sts get-session-token, then aws s3 with AWS_SESSION_TOKEN; the key without its token is unknown", async () => {
    const out = JSON.parse(await awsOk(["sts", "get-session-token", "--duration-seconds", "900", "--output", "json"])) as {
      Credentials: { AccessKeyId: string; SecretAccessKey: string; SessionToken: string; Expiration: string };
    };
    const c = out.Credentials;
    expect(c.AccessKeyId).toMatch(/^ASIA/);
    expect(Date.parse(c.Expiration) - Date.now()).toBeLessThanOrEqual(900_000);
    const temp = { id: c.AccessKeyId, secret: c.SecretAccessKey, token: c.SessionToken };
    // A bucket outlasts the session: made with the key itself.
    const refused = await aws(["s3", "mb", "s3://demo-sts"], { credentials: temp });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("Temporary credentials cannot call CreateBucket");
    await awsOk(["s3", "mb", "s3://demo-sts"]);
    writeFileSync(join(dir, "sts.txt"), "sent with a session token\n");
    const up = await aws(["s3", "cp", "sts.txt", "s3://demo-sts/sts.txt"], { credentials: temp });
    expect(up.code, up.stderr).toBe(0);
    const listed = await aws(["s3", "ls", "s3://demo-sts/"], { credentials: temp });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/ 26 sts\.txt$/m);
    const noToken = await aws(["s3", "ls"], { credentials: { id: temp.id, secret: temp.secret } });
    expect(noToken.code).not.toBe(0);
    expect(noToken.stderr).toContain("InvalidAccessKeyId");
    const tooLong = await aws(["sts", "get-session-token", "--duration-seconds", "7200"]);
    expect(tooLong.code).not.toBe(0);
    expect(tooLong.stderr).toContain("ValidationError");
  });
});
