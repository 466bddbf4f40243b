// The `shardgate` CLI (bin/shardgate.mjs, docs/cli.md) end to end: the real bin run with
// child_process against the gateway as `npm start` serves it, with credentials from the environment
// and from profile files in a temporary HOME, and against hostile servers (garbage, huge and
// never-ending answers) that must end it with one line, never a stack trace or a hang.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, freePort, Gateway } from "./gateway";
import { clientEnv, oneLineError, ROOT, run, type RunResult } from "./tools";
import { VersityNode } from "./versity-node";

const BIN = join(ROOT, "bin/shardgate.mjs");
const gateway = new Gateway();
let home: string;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), "shardgate-cli-"));
  await gateway.start();
}, 120_000);
afterAll(async () => {
  await gateway.dispose();
  rmSync(home, { recursive: true, force: true });
});

const ROOT_KEYS = { AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey };

/** `shardgate ARGS…` against the gateway (unless args name another --endpoint), with `env` (the root key by default) and HOME the temp folder. */
function cli(args: string[], opts: { env?: Record<string, string>; input?: string; endpoint?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  const env = clientEnv({ HOME: home, ...(opts.env ?? ROOT_KEYS) });
  delete env.SHARDGATE_ENDPOINT;
  return run(process.execPath, [BIN, "--endpoint", opts.endpoint ?? gateway.base, ...args], {
    env,
    input: opts.input,
    cwd: home,
    timeoutMs: opts.timeoutMs ?? 30_000,
  });
}

/** `cli`, failing with its output unless it exited 0. */
async function ok(args: string[], opts: Parameters<typeof cli>[1] = {}): Promise<string> {
  const res = await cli(args, opts);
  if (res.code !== 0) throw new Error(`shardgate ${args.join(" ")} exited with ${res.code}\n--- stdout\n${res.stdout}\n--- stderr\n${res.stderr}`);
  return res.stdout;
}

/** `cli … --json`, parsed. */
async function okJson<T = Record<string, unknown>>(args: string[], opts: Parameters<typeof cli>[1] = {}): Promise<T> {
  return JSON.parse(await ok([...args, "--json"], opts)) as T;
}

interface Key {
  id: string;
  name: string;
  secret?: string;
  enabled: boolean;
  createBucket: boolean;
  grants?: { bucket: string; read: boolean; write: boolean; owner: boolean }[];
}

describe("the command line", () => {
  it("prints help for every level, and names the nearest command or flag for a typo (exit 2, one line)", async () => {
    expect(await ok(["--help"])).toMatch(/Usage: shardgate COMMAND/);
    expect(await ok(["key", "--help"])).toMatch(/key create NAME/);
    expect(await ok(["bucket", "lock", "set", "--help"])).toMatch(/--mode MODE[\s\S]*Example: shardgate bucket lock set/);
    expect(await ok(["help", "heal"])).toMatch(/--max-objects N/);
    expect(oneLineError(await cli(["stauts"]), 2)).toContain('did you mean "status"');
    expect(oneLineError(await cli(["key", "creat", "x"]), 2)).toContain('did you mean "key create"');
    expect(oneLineError(await cli(["bucket", "versoning", "get", "b"]), 2)).toContain('did you mean "bucket versioning"');
    expect(oneLineError(await cli(["status", "--jsn"]), 2)).toContain("did you mean --json");
    expect(oneLineError(await cli(["heal", "--max-object", "3"]), 2)).toContain("unknown flag --max-object for `shardgate heal`; did you mean --max-objects?");
    expect(oneLineError(await cli(["--bogus", "x", "status"]), 2)).toContain("unknown flag --bogus for `shardgate status`");
    expect(oneLineError(await cli(["key"]), 2)).toContain("needs a command: list, create");
    expect(oneLineError(await cli(["key", "create"]), 2)).toContain("missing NAME");
    expect(oneLineError(await cli(["key", "delete", "a", "b"]), 2)).toContain('unexpected argument "b"');
    expect(oneLineError(await cli(["scrub", "--mode", "fast"]), 2)).toContain("--mode must be one of deep, shallow");
    expect(oneLineError(await cli(["sweep", "--grace-seconds", "-1"]), 2)).toContain("whole number");
    expect(oneLineError(await cli([]), 2)).toContain("name a command");
  });
});

describe("finding the gateway", () => {
  /** `shardgate ARGS…` with no --endpoint nor SHARDGATE_ENDPOINT. */
  function bare(args: string[]): Promise<RunResult> {
    const env = clientEnv({ HOME: home, ...ROOT_KEYS });
    delete env.SHARDGATE_ENDPOINT;
    return run(process.execPath, [BIN, ...args], { env, cwd: home, timeoutMs: 30_000 });
  }

  it("finds the endpoint of the gateway started with that data directory, on whatever port it chose", async () => {
    const res = await bare(["status", "--data-dir", gateway.persist, "--json"]);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toHaveProperty("nodes");
  });

  it("names --endpoint and SHARDGATE_ENDPOINT when nothing answers", async () => {
    const port = await freePort();
    const line = oneLineError(await bare(["status", "--endpoint", `http://127.0.0.1:${port}`]), 1);
    expect(line).toContain("--endpoint or SHARDGATE_ENDPOINT");
  });
});

describe("bucket quotas", () => {
  it("sets, reads and clears a quota; a write over it is refused; bad sizes are usage errors", async () => {
    await ok(["bucket", "create", "cli-quota"]);
    const set = await okJson<{ quota: { maxBytes: number; maxObjects: number | null } }>(["bucket", "quota", "set", "cli-quota", "--max-bytes", "1KiB"]);
    expect(set.quota).toEqual({ maxBytes: 1024, maxObjects: null });
    // --max-objects alone keeps the byte limit.
    await ok(["bucket", "quota", "set", "cli-quota", "--max-objects", "10"]);
    const s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
    expect((await s3.fetch(`${gateway.base}/cli-quota/a`, { method: "PUT", body: "a".repeat(1000) })).status).toBe(200);
    const over = await s3.fetch(`${gateway.base}/cli-quota/b`, { method: "PUT", body: "b".repeat(100) });
    expect(over.status).toBe(403);
    expect(await over.text()).toContain("<Code>QuotaExceeded</Code>");
    const got = await okJson<{ quota: unknown; usage: unknown }>(["bucket", "quota", "get", "cli-quota"]);
    expect(got).toMatchObject({ quota: { maxBytes: 1024, maxObjects: 10 }, usage: { bytes: 1000, objects: 1 } });
    expect(await ok(["bucket", "quota", "get", "cli-quota"])).toMatch(/bytes\s+1000 B of 1\.0 KiB\nobjects\s+1 of 10/);
    for (const size of ["-1", "1.5.5", "10 parsecs", "99999999999999999999", "1e3"])
      expect(oneLineError(await cli(["bucket", "quota", "set", "cli-quota", "--max-bytes", size]), 2), size).toContain("--max-bytes");
    expect(oneLineError(await cli(["bucket", "quota", "set", "cli-quota"]), 2)).toContain("--max-bytes");
    expect(oneLineError(await cli(["bucket", "quota", "set", "cli-quota", "--max-objects", "-3"]), 2)).toContain("--max-objects");
    await ok(["bucket", "quota", "set", "cli-quota", "--max-objects", "none"]);
    expect((await okJson<{ quota: unknown }>(["bucket", "quota", "get", "cli-quota"])).quota).toEqual({ maxBytes: 1024, maxObjects: null });
    await ok(["bucket", "quota", "clear", "cli-quota"]);
    expect((await okJson<{ quota: unknown }>(["bucket", "quota", "get", "cli-quota"])).quota).toBeNull();
    expect((await s3.fetch(`${gateway.base}/cli-quota/b`, { method: "PUT", body: "b".repeat(100) })).status).toBe(200);
    expect(oneLineError(await cli(["bucket", "quota", "get", "no-such-bucket-cli"]), 1)).toContain("NoSuchBucket");
  });
});

describe("access keys", () => {
  it("creates, lists, grants, disables, enables and deletes a key that then signs S3 requests", async () => {
    await ok(["bucket", "create", "cli-keys"]);
    await ok(["bucket", "create", "cli-other"]);
    const key = await okJson<Key>(["key", "create", "cli-user"]);
    expect(key).toMatchObject({ name: "cli-user", enabled: true, createBucket: false });
    expect(key.id).toMatch(/\S/);
    expect(key.secret).toMatch(/\S{20,}/);

    const table = await ok(["key", "list"]);
    expect(table).toMatch(/^ID\s+NAME\s+ENABLED/);
    expect(table).toContain(key.id);
    expect(table).not.toContain(key.secret);

    expect(await ok(["key", "grant", key.id, "cli-keys", "--read", "--write"])).toContain("read+write");
    const { keys } = await okJson<{ keys: Key[] }>(["key", "list"]);
    expect(keys.find((k) => k.id === key.id)?.grants).toEqual([{ bucket: "cli-keys", read: true, write: true, owner: false }]);
    const onBucket = await okJson<{ keys: { keyId: string }[] }>(["key", "list", "--bucket", "cli-keys"]);
    expect(onBucket.keys.map((k) => k.keyId)).toContain(key.id);

    // The new key writes and reads its bucket, and nothing else.
    const s3 = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret as string, service: "s3", region: "us-east-1", retries: 0 });
    expect((await s3.fetch(`${gateway.base}/cli-keys/hello.txt`, { method: "PUT", body: "hello" })).status).toBe(200);
    expect(await (await s3.fetch(`${gateway.base}/cli-keys/hello.txt`)).text()).toBe("hello");
    expect((await s3.fetch(`${gateway.base}/cli-other/x`, { method: "PUT", body: "x" })).status).toBe(403);
    // …and the CLI with it: its buckets, and no admin API.
    const asKey = { AWS_ACCESS_KEY_ID: key.id, AWS_SECRET_ACCESS_KEY: key.secret as string };
    expect((await okJson<{ buckets: { name: string }[] }>(["bucket", "list"], { env: asKey })).buckets.map((b) => b.name)).toEqual(["cli-keys"]);
    expect(oneLineError(await cli(["key", "list"], { env: asKey }), 1)).toMatch(
      /^shardgate: AccessDenied: .*\(admin commands need the root key: docs\/access\.md\)$/,
    );

    expect((await okJson<Key>(["key", "disable", key.id])).enabled).toBe(false);
    expect((await s3.fetch(`${gateway.base}/cli-keys/hello.txt`)).status).toBe(403);
    expect((await okJson<Key>(["key", "enable", key.id])).enabled).toBe(true);
    expect((await okJson<Key>(["key", "rename", key.id, "renamed"])).name).toBe("renamed");
    expect(await ok(["key", "grant", key.id, "cli-keys", "--none"])).toContain("none");
    expect(await ok(["key", "delete", key.id])).toContain(`Deleted access key ${key.id}`);
    expect(oneLineError(await cli(["key", "delete", key.id]), 1)).toMatch(/^shardgate: InvalidArgument: There is no access key/);
    expect(oneLineError(await cli(["key", "grant", "x", "cli-keys"]), 2)).toContain("--read, --write, --owner");
  });
});

describe("buckets", () => {
  it("creates and lists buckets, sets versioning, a policy and object lock's default retention", async () => {
    expect(await ok(["bucket", "create", "cli-photos"])).toContain("Created bucket cli-photos");
    expect(oneLineError(await cli(["bucket", "create", "cli-photos"]), 1)).toMatch(/^shardgate: BucketAlreadyOwnedByYou: /);
    expect(await ok(["bucket", "list"])).toMatch(/^NAME\s+CREATED\n(.*\n)*cli-photos\s+\d{4}-/m);
    const listed = await okJson<{ buckets: { name: string; created: string }[] }>(["bucket", "list"]);
    expect(listed.buckets.find((b) => b.name === "cli-photos")?.created).toMatch(/^\d{4}-\d\d-\d\dT/);

    expect(await okJson(["bucket", "versioning", "get", "cli-photos"])).toEqual({ bucket: "cli-photos", status: null });
    expect(await ok(["bucket", "versioning", "enable", "cli-photos"])).toContain("versioning Enabled");
    expect(await okJson(["bucket", "versioning", "get", "cli-photos"])).toEqual({ bucket: "cli-photos", status: "Enabled" });
    await ok(["bucket", "versioning", "suspend", "cli-photos"]);
    expect(await ok(["bucket", "versioning", "get", "cli-photos"])).toContain("versioning Suspended");

    const policy = {
      Version: "2012-10-17",
      Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: "arn:aws:s3:::cli-photos/public/*" }],
    };
    writeFileSync(join(home, "policy.json"), JSON.stringify(policy));
    expect(oneLineError(await cli(["bucket", "policy", "get", "cli-photos"]), 1)).toMatch(/^shardgate: NoSuchBucketPolicy: /);
    expect(await ok(["bucket", "policy", "set", "cli-photos", "policy.json"])).toContain("Set the policy of cli-photos");
    expect(await okJson(["bucket", "policy", "get", "cli-photos"])).toEqual(policy);
    // From standard input too; a file that is not JSON fails before any request.
    await ok(["bucket", "policy", "set", "cli-photos", "-"], { input: JSON.stringify(policy) });
    writeFileSync(join(home, "broken.json"), "{ nope");
    expect(oneLineError(await cli(["bucket", "policy", "set", "cli-photos", "broken.json"]), 2)).toContain("broken.json is not JSON");
    expect(oneLineError(await cli(["bucket", "policy", "set", "cli-photos", "missing.json"]), 2)).toContain("cannot read missing.json");
    await ok(["bucket", "policy", "delete", "cli-photos"]);
    expect((await cli(["bucket", "policy", "get", "cli-photos"])).code).toBe(1);

    // Object lock: on a bucket created with it, default retention set, read back and cleared.
    await ok(["bucket", "create", "cli-locked", "--object-lock"]);
    expect(await okJson(["bucket", "lock", "get", "cli-locked"])).toEqual({ bucket: "cli-locked", enabled: true, defaultRetention: null });
    expect(await ok(["bucket", "lock", "set", "cli-locked", "--mode", "GOVERNANCE", "--days", "3"])).toContain("GOVERNANCE, 3 day(s)");
    expect(await okJson(["bucket", "lock", "get", "cli-locked"])).toEqual({
      bucket: "cli-locked",
      enabled: true,
      defaultRetention: { mode: "GOVERNANCE", days: 3 },
    });
    expect(await ok(["bucket", "lock", "get", "cli-locked"])).toMatch(/default retention\s+GOVERNANCE, 3 day\(s\)/);
    await ok(["bucket", "lock", "set", "cli-locked", "--no-default"]);
    expect((await okJson<{ defaultRetention: unknown }>(["bucket", "lock", "get", "cli-locked"])).defaultRetention).toBeNull();
    expect(oneLineError(await cli(["bucket", "lock", "set", "cli-locked", "--mode", "GOVERNANCE"]), 2)).toContain("--days N or --years N");
    expect(oneLineError(await cli(["bucket", "lock", "get", "cli-photos"]), 1)).toMatch(/^shardgate: ObjectLockConfigurationNotFoundError: /);

    await ok(["bucket", "delete", "cli-photos"]);
    expect(oneLineError(await cli(["bucket", "versioning", "get", "cli-photos"]), 1)).toMatch(/^shardgate: NoSuchBucket: /);
  });
});

describe("operations", () => {
  it("status shows every node, quorum, the heal queue and the scrub; --json parses", async () => {
    const text = await ok(["status"]);
    expect(text).toMatch(/gateway\s+http:\/\/127\.0\.0\.1:\d+ — ready/);
    expect(text).toMatch(/quorum\s+6 of 6 nodes reachable; objects are 4 \+ 2: reads need 4, the gateway is ready with 5/);
    expect(text).toMatch(/heal queue\s+0 object\(s\) pending/);
    for (let i = 0; i < 6; i++) expect(text).toMatch(new RegExp(`^NODE_${i}\\s+disk\\s+up\\s+closed`, "m"));
    const status = await okJson<{
      ready: { status: string };
      reachable: number;
      dataShards: number;
      parityShards: number;
      nodes: { id: string; up: boolean }[];
      heal: { scrub: unknown; queue: { pending: number } };
    }>(["status"]);
    expect(status.ready.status).toBe("ready");
    expect(status.reachable).toBe(6);
    expect([status.dataShards, status.parityShards]).toEqual([4, 2]);
    expect(status.nodes.map((n) => [n.id, n.up])).toEqual([0, 1, 2, 3, 4, 5].map((i) => [`NODE_${i}`, true]));
    expect(status.heal.queue.pending).toBe(0);
    expect((await okJson<{ nodes: unknown[] }>(["node", "list"])).nodes).toHaveLength(6);
    expect(await ok(["node", "list"])).toMatch(/^NODE\s+KIND\s+UP\s+BREAKER\s+LATENCY/);
  });

  it("heal (a bucket in batches, or the queues), scrub, sweep, lifecycle and drain with their flags", async () => {
    await ok(["bucket", "create", "cli-heal"]);
    const s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    for (const key of ["a", "b", "c"])
      expect((await s3.fetch(`${gateway.base}/cli-heal/${key}`, { method: "PUT", body: `object ${key}`.repeat(3000) })).status).toBe(200);

    const batch = await okJson<{ objectsChecked: number; next: string | null }>(["heal", "--bucket", "cli-heal", "--max-objects", "2"]);
    expect(batch).toMatchObject({ objectsChecked: 2, next: "b" });
    const all = await okJson<{ objectsChecked: number; batches: number; next: string | null }>(["heal", "--bucket", "cli-heal", "--max-objects", "1", "--all"]);
    expect(all).toMatchObject({ objectsChecked: 3, batches: 3, next: null });
    expect(await okJson(["heal", "--bucket", "cli-heal", "--start-after", "b"])).toMatchObject({ objectsChecked: 1, next: null });
    expect(await okJson(["heal", "--bucket", "cli-heal", "--prefix", "c"])).toMatchObject({ prefix: "c", objectsChecked: 1 });
    expect(await okJson(["heal"])).toMatchObject({ pending: 0, objectsHealed: 0 });
    expect(await ok(["heal", "--bucket", "cli-heal"])).toMatch(/objectsChecked\s+3/);
    expect(oneLineError(await cli(["heal", "--bucket", "no-such-bucket"]), 1)).toMatch(/^shardgate: NoSuchBucket: /);

    const scrub = await okJson<{ run: { mode: string; heal: boolean; counters: { objectsChecked: number } }; status: { pass: number } }>([
      "scrub",
      "--mode",
      "shallow",
      "--max-objects",
      "100",
      "--max-ms",
      "20000",
      "--move-mib",
      "0",
      "--report-only",
    ]);
    expect(scrub.run).toMatchObject({ mode: "shallow", heal: false });
    expect(scrub.run.counters.objectsChecked).toBeGreaterThanOrEqual(3);
    expect(await ok(["scrub", "--mode", "deep"])).toMatch(/^run\s+deep, \d+ ms, stopped by/m);
    const healStatus = await okJson<{ scrub: { lastRun: { mode: string } }; queue: { pending: number } }>(["heal", "status"]);
    expect(healStatus.scrub.lastRun.mode).toBe("deep");
    expect(await ok(["scrub", "status"])).toMatch(/last run\s+\S+ admin deep/);

    expect(await okJson(["sweep", "--grace-seconds", "3600"])).toMatchObject({ orphans: 0, removed: 0, failed: 0, nodesSkipped: [] });
    expect(await ok(["sweep"])).toMatch(/filesListed\s+\d+/);
    expect(await okJson(["lifecycle", "--bucket", "cli-heal", "--now", "2030-01-01T00:00:00Z"])).toMatchObject({ now: "2030-01-01T00:00:00.000Z" });

    // 4 + 2 over six nodes: none may drain (k + m writable needed); --no-mark walks a node that must be draining already.
    expect(oneLineError(await cli(["node", "drain", "NODE_5", "--max-objects", "10"]), 1)).toMatch(
      /^shardgate: TooFewNodes: Draining NODE_5 would leave 5 writable nodes/,
    );
    expect(oneLineError(await cli(["node", "drain", "NODE_5", "--no-mark"]), 1)).toMatch(/^shardgate: NodeNotDraining: /);
    expect(oneLineError(await cli(["node", "drain", "NODE_9"]), 1)).toMatch(/^shardgate: NoSuchNode: /);
  });
});

describe("nodes added, drained and removed while the gateway runs (a real versitygw node)", () => {
  const versity = new VersityNode();
  const NODE_KEY = versity.key;
  let nodeEndpoint = "";
  const nodeEnv = { ...ROOT_KEYS, SHARDGATE_NODE_ACCESS_KEY_ID: NODE_KEY.id, SHARDGATE_NODE_SECRET_ACCESS_KEY: NODE_KEY.secret };
  const gatewayS3 = () => new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
  /** Shard files on the versitygw node's disk. */
  const filesOnNode = () => versity.files();
  const written = new Map<string, string>();

  beforeAll(async () => {
    await versity.start();
    nodeEndpoint = versity.endpoint;
  }, 60_000);
  afterAll(() => versity.stop());

  it("refuses bad input, unreachable nodes, drains below k + m and other keys than the admin's: one line, nothing kept, the secret never shown", async () => {
    const add = (id: string, extra: string[] = [], env: Record<string, string> = nodeEnv) =>
      cli(["node", "add", id, "--node-endpoint", nodeEndpoint, "--bucket", "shards", ...extra], { env });
    const refusals: [RunResult, number, RegExp][] = [
      [await add("9bad"), 1, /^shardgate: InvalidArgument: id must be/],
      [await add("NODE_0"), 1, /^shardgate: NodeAlreadyExists: /],
      [await add("S3_X", ["--node-endpoint", "http://127.0.0.1:9"]), 1, /^shardgate: NodeProbeFailed: Node S3_X failed its probe \(PUT/],
      [await add("S3_X", ["--node-endpoint", `http://u:${NODE_KEY.secret}@127.0.0.1:9`]), 1, /^shardgate: InvalidArgument: endpoint must not hold credentials/],
      [await add("S3_X", ["--bucket", "nope-bucket"]), 1, /^shardgate: NodeProbeFailed: /],
      [await add("S3_X", [], ROOT_KEYS), 2, /give the node's access key id: SHARDGATE_NODE_ACCESS_KEY_ID/],
      [await cli(["node", "add", "S3_X", "--bucket", "shards"], { env: nodeEnv }), 2, /--node-endpoint URL and --bucket NAME are needed/],
      [await cli(["node", "remove", "NODE_0"]), 1, /^shardgate: InvalidRequest: Node NODE_0 is configured/],
      [await cli(["node", "remove", "NOPE"]), 1, /^shardgate: NoSuchNode: /],
      [await cli(["node", "undrain", "NOPE"]), 1, /^shardgate: NoSuchNode: /],
      [await cli(["node", "drain", "NODE_0"]), 1, /^shardgate: TooFewNodes: /],
    ];
    for (const [res, code, message] of refusals) {
      expect(oneLineError(res, code)).toMatch(message);
      expect(res.stdout + res.stderr).not.toContain(NODE_KEY.secret);
    }
    // The secret from stdin (never on the command line): a wrong one fails the probe.
    const wrong = await cli(
      ["node", "add", "S3_X", "--node-endpoint", nodeEndpoint, "--bucket", "shards", "--access-key-id", NODE_KEY.id, "--secret-access-key-stdin"],
      {
        env: ROOT_KEYS,
        input: "not-the-secret\n",
      },
    );
    expect(oneLineError(wrong, 1)).toMatch(/^shardgate: NodeProbeFailed: /);
    // Another key than the admin's is refused.
    const key = await okJson<Key>(["key", "create", "not-admin"]);
    const other = { AWS_ACCESS_KEY_ID: key.id, AWS_SECRET_ACCESS_KEY: key.secret as string };
    expect(
      oneLineError(await add("S3_X", [], { ...other, SHARDGATE_NODE_ACCESS_KEY_ID: NODE_KEY.id, SHARDGATE_NODE_SECRET_ACCESS_KEY: NODE_KEY.secret }), 1),
    ).toMatch(/^shardgate: AccessDenied: /);
    expect(oneLineError(await cli(["node", "drain", "NODE_1"], { env: other }), 1)).toMatch(/^shardgate: AccessDenied: /);
    expect((await okJson<{ nodes: { id: string }[] }>(["node", "list"])).nodes.map((n) => n.id)).toEqual([
      "NODE_0",
      "NODE_1",
      "NODE_2",
      "NODE_3",
      "NODE_4",
      "NODE_5",
    ]);
  });

  it("adds a node (its secret from the environment); new objects go to it; a restart keeps it; drain empties it; remove takes it out", async () => {
    const added = await okJson(["node", "add", "S3_X", "--node-endpoint", nodeEndpoint, "--bucket", "shards"], { env: nodeEnv });
    expect(added).toMatchObject({ id: "S3_X", kind: "s3", source: "added", state: "active", endpoint: nodeEndpoint });
    expect(JSON.stringify(added)).not.toContain(NODE_KEY.secret);
    expect(await ok(["node", "list"])).toMatch(/^S3_X\s+s3\s/m);
    // Not drained: removing is refused.
    expect(oneLineError(await cli(["node", "remove", "S3_X"]), 1)).toMatch(/^shardgate: NodeNotDraining: /);

    const s3 = gatewayS3();
    expect((await s3.fetch(`${gateway.base}/cli-nodes`, { method: "PUT" })).status).toBe(200);
    for (let i = 0; i < 10; i++) {
      const body = `object ${i} `.repeat(3000 + i * 100);
      const res = await s3.fetch(`${gateway.base}/cli-nodes/o${i}`, { method: "PUT", body });
      expect(res.status).toBe(200);
      written.set(`o${i}`, body);
    }
    expect(filesOnNode()).toBeGreaterThan(0); // 6 of 7 nodes per object

    await gateway.stop();
    await gateway.start();
    const listed = await okJson<{ nodes: { id: string; source: string; draining: boolean }[] }>(["node", "list"]);
    expect(listed.nodes.find((n) => n.id === "S3_X")).toMatchObject({ source: "added", draining: false });
    for (const [key, body] of written) expect(await (await gatewayS3().fetch(`${gateway.base}/cli-nodes/${key}`)).text()).toBe(body);

    const drain = await cli(["node", "drain", "S3_X", "--max-objects", "4"], { timeoutMs: 60_000 });
    expect(drain.code, drain.stderr).toBe(0);
    expect(drain.stderr).toMatch(/marked draining/);
    expect(drain.stderr).toMatch(/drain S3_X: \d+ objects checked/); // progress between batches
    expect(drain.stdout).toMatch(/^drained\s+yes$/m);
    expect(filesOnNode()).toBe(0);
    for (const [key, body] of written) expect(await (await gatewayS3().fetch(`${gateway.base}/cli-nodes/${key}`)).text()).toBe(body);

    expect(await okJson(["node", "remove", "S3_X"])).toMatchObject({ id: "S3_X", removed: true });
    expect((await okJson<{ nodes: { id: string }[] }>(["node", "list"])).nodes.map((n) => n.id)).not.toContain("S3_X");
    expect(gateway.log).not.toContain(NODE_KEY.secret);
  });
});

describe("credentials", () => {
  it("come from a profile of ~/.aws/credentials or ~/.aws/config in HOME, or the files the environment names", async () => {
    mkdirSync(join(home, ".aws"), { recursive: true });
    writeFileSync(
      join(home, ".aws/credentials"),
      `# comment\n[default]\naws_access_key_id = nobody\naws_secret_access_key = wrong\n\n[ops]\naws_access_key_id = ${CREDENTIALS.accessKeyId}\naws_secret_access_key = ${CREDENTIALS.secretAccessKey}\n`,
    );
    writeFileSync(
      join(home, ".aws/config"),
      `[default]\nregion = us-east-1\ns3 =\n  max_concurrent_requests = 4\n[profile cfg]\nregion = eu-west-1\naws_access_key_id = ${CREDENTIALS.accessKeyId}\naws_secret_access_key = ${CREDENTIALS.secretAccessKey}\n`,
    );
    const noKeys = {};
    expect((await okJson<{ nodes: unknown[] }>(["node", "list", "--profile", "ops"], { env: noKeys })).nodes).toHaveLength(6);
    expect((await okJson<{ nodes: unknown[] }>(["node", "list"], { env: { AWS_PROFILE: "ops" } })).nodes).toHaveLength(6);
    // The cfg profile's region (eu-west-1) is not the gateway's; --region or AWS_REGION win over it.
    expect(oneLineError(await cli(["node", "list", "--profile", "cfg"], { env: noKeys }), 1)).toMatch(
      /^shardgate: AuthorizationHeaderMalformed: .*'eu-west-1'/,
    );
    expect((await okJson<{ nodes: unknown[] }>(["node", "list", "--profile", "cfg", "--region", "us-east-1"], { env: noKeys })).nodes).toHaveLength(6);
    await ok(["node", "list", "--profile", "cfg"], { env: { AWS_REGION: "us-east-1" } });
    expect((await cli(["node", "list"], { env: { ...ROOT_KEYS, AWS_DEFAULT_REGION: "eu-west-1" } })).code).toBe(1);
    // The default profile's wrong secret; a profile that does not exist; the environment's keys over AWS_PROFILE; --profile over them.
    expect(oneLineError(await cli(["node", "list"], { env: noKeys }), 1)).toMatch(/^shardgate: InvalidAccessKeyId: /);
    expect(oneLineError(await cli(["node", "list", "--profile", "nope"], { env: noKeys }), 2)).toContain('profile "nope" is in neither');
    await ok(["node", "list"], { env: { ...ROOT_KEYS, AWS_PROFILE: "default" } });
    expect((await cli(["node", "list", "--profile", "default"], { env: ROOT_KEYS })).code).toBe(1);

    // Files elsewhere, named by the environment.
    const elsewhere = join(home, "elsewhere");
    writeFileSync(elsewhere, `[moved]\naws_access_key_id = ${CREDENTIALS.accessKeyId}\naws_secret_access_key = ${CREDENTIALS.secretAccessKey}\n`);
    await ok(["node", "list", "--profile", "moved"], { env: { AWS_SHARED_CREDENTIALS_FILE: elsewhere } });
    writeFileSync(
      join(home, "config-elsewhere"),
      `[profile far]\naws_access_key_id = ${CREDENTIALS.accessKeyId}\naws_secret_access_key = ${CREDENTIALS.secretAccessKey}\n`,
    );
    await ok(["node", "list", "--profile", "far"], {
      env: { AWS_CONFIG_FILE: join(home, "config-elsewhere"), AWS_SHARED_CREDENTIALS_FILE: join(home, "none") },
    });
    rmSync(join(home, ".aws"), { recursive: true, force: true });
    expect(oneLineError(await cli(["status"], { env: noKeys }), 2)).toContain("no credentials: set AWS_ACCESS_KEY_ID");
  });

  it("temporary credentials (AWS_SESSION_TOKEN, or aws_session_token in a profile) sign with their token; the admin API keeps lasting access to the root key", async () => {
    const root = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
    const res = await root.fetch(`${gateway.base}/`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "Action=GetSessionToken&Version=2011-06-15&DurationSeconds=900",
    });
    const xml = await res.text();
    expect(res.status, xml).toBe(200);
    const field = (name: string) => new RegExp(`<${name}>([^<]+)</${name}>`).exec(xml)?.[1] as string;
    const session = { AWS_ACCESS_KEY_ID: field("AccessKeyId"), AWS_SECRET_ACCESS_KEY: field("SecretAccessKey"), AWS_SESSION_TOKEN: field("SessionToken") };
    expect((await okJson<{ nodes: unknown[] }>(["node", "list"], { env: session })).nodes).toHaveLength(6);
    await ok(["key", "list"], { env: session });
    expect(oneLineError(await cli(["key", "create", "from-session"], { env: session }), 1)).toMatch(
      /^shardgate: AccessDenied: Temporary credentials cannot POST \/_shardgate\/admin\/keys: /,
    );
    mkdirSync(join(home, ".aws"), { recursive: true });
    writeFileSync(
      join(home, ".aws/credentials"),
      `[session]\naws_access_key_id = ${session.AWS_ACCESS_KEY_ID}\naws_secret_access_key = ${session.AWS_SECRET_ACCESS_KEY}\naws_session_token = ${session.AWS_SESSION_TOKEN}\n`,
    );
    await ok(["status", "--profile", "session"], { env: {} });
    // Without its token the temporary key is unknown.
    const { AWS_SESSION_TOKEN: _, ...tokenless } = session;
    expect(oneLineError(await cli(["node", "list"], { env: tokenless }), 1)).toMatch(/^shardgate: InvalidAccessKeyId: /);
    rmSync(join(home, ".aws"), { recursive: true, force: true });
  });

  it("a wrong secret, a half-set environment, a session token the gateway does not know: one line, non-zero", async () => {
    const wrong = oneLineError(await cli(["status"], { env: { ...ROOT_KEYS, AWS_SECRET_ACCESS_KEY: "wrong" } }), 1);
    expect(wrong).toMatch(/^shardgate: SignatureDoesNotMatch: The request signature we calculated does not match/);
    expect(oneLineError(await cli(["key", "list"], { env: { AWS_ACCESS_KEY_ID: "nobody", AWS_SECRET_ACCESS_KEY: "x" } }), 1)).toMatch(
      /^shardgate: InvalidAccessKeyId: /,
    );
    expect(oneLineError(await cli(["status"], { env: { AWS_ACCESS_KEY_ID: "x" } }), 2)).toContain("AWS_SECRET_ACCESS_KEY is not");
    expect((await cli(["status"], { env: { ...ROOT_KEYS, AWS_SESSION_TOKEN: "bogus" } })).code).toBe(1);
    // --json: the error as JSON on stderr, still one line.
    const res = await cli(["key", "list", "--json"], { env: { ...ROOT_KEYS, AWS_SECRET_ACCESS_KEY: "wrong" } });
    expect(res.code).toBe(1);
    const { error } = JSON.parse(res.stderr) as { error: { code: string; message: string; status: number } };
    expect(error).toMatchObject({ code: "SignatureDoesNotMatch", status: 403 });
    expect(error.message).not.toMatch(/^SignatureDoesNotMatch/); // the code once, in its own field
  });
});

/** What a gateway behind `/prefix` answers with NODE_1 down (for `status`). */
const FAKE: Record<string, { status?: number; body: unknown }> = {
  "/prefix/_shardgate/admin/nodes": {
    body: {
      nodes: [
        { id: "NODE_0", kind: "disk", state: "closed", latencyMs: 1.5, requests: 10, errors: 0, lastError: null, draining: false },
        { id: "NODE_1", kind: "s3", state: "open", latencyMs: null, requests: 7, errors: 7, lastError: "connect ECONNREFUSED\u001b[2J", draining: true },
      ],
    },
  },
  "/prefix/_shardgate/admin/heal": {
    body: {
      scrub: {
        pass: 2,
        running: false,
        settings: { mode: "shallow" },
        lastPass: {
          pass: 1,
          finished: "2026-01-01T00:00:00Z",
          counters: { objectsChecked: 5, shardsMisplaced: 0 },
          usage: { NODE_0: { files: 3, bytes: 3 << 20 } },
        },
        lastErrors: [],
      },
      queue: { pending: 1, objects: [{ bucket: "b", key: "k", reason: "degraded-read", since: 0, attempts: 2, lastError: null, shards: null }] },
    },
  },
  "/prefix/_shardgate/metrics": { body: 'shardgate_node_up{node="NODE_0"} 1\nshardgate_node_up{node="NODE_1"} 0\n' },
  "/prefix/_shardgate/ready": { status: 503, body: { status: "not ready", missing: ["nodes: 1 of 2 reachable, 2 needed"] } },
};

describe("a hostile or absent gateway", () => {
  let server: http.Server;
  let base: string;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      const fake = FAKE[path];
      if (fake) {
        // A well-behaved gateway under a path prefix, with a node down and an object queued.
        res.writeHead(fake.status ?? 200, { "content-type": "application/json" });
        res.end(typeof fake.body === "string" ? fake.body : JSON.stringify(fake.body));
      } else if (path.endsWith("/admin/keys")) {
        // Garbage with a 200.
        res.writeHead(200, { "content-type": "application/json" });
        res.end("\u001b[31m<html>not json</html>");
      } else if (path.endsWith("/admin/nodes")) {
        // An endless body, no length: the CLI stops reading at its bound.
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(1 << 20, 0x20);
        const pump = () => {
          while (res.write(chunk)) {}
          res.once("drain", pump);
        };
        res.on("error", () => {});
        pump();
      } else if (path.endsWith("/admin/heal")) {
        // A declared 1 GiB body.
        res.writeHead(200, { "content-type": "application/json", "content-length": String(1 << 30) });
        res.write("{");
      } else if (path.endsWith("/admin/sweep")) {
        // Headers, then nothing ever again.
        res.writeHead(200, { "content-type": "application/json" });
        res.write("{");
      } else if (path.endsWith("/admin/scrub")) {
        // An S3 error whose message carries terminal escapes and newlines.
        res.writeHead(500, { "content-type": "application/xml" });
        res.end("<Error><Code>InternalError</Code><Message>bad\u001b]0;pwned\u0007\nsecond line</Message></Error>");
      } else if (path.endsWith("/admin/lifecycle")) {
        res.writeHead(502, { "content-type": "text/html" });
        res.end("<html>bad gateway</html>");
      } else if (path.endsWith("/admin/keys/k")) {
        // Valid JSON of the wrong shape.
        res.writeHead(200, { "content-type": "application/json" });
        res.end("[1,2,3]");
      } else {
        res.writeHead(302, { location: "http://elsewhere.invalid/" });
        res.end();
      }
    });
    server.on("connection", (s) => {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => server.close(r));
  });

  it("garbage, huge or endless answers, hangs and redirects end the CLI with one line and exit 1", async () => {
    const started = Date.now();
    const hostile = (args: string[]) => cli(args, { endpoint: base });
    expect(oneLineError(await hostile(["key", "list"]), 1)).toMatch(/not JSON/);
    expect(oneLineError(await hostile(["node", "list"]), 1)).toMatch(/larger than the \d+ bytes this CLI reads/);
    expect(oneLineError(await hostile(["heal", "status"]), 1)).toMatch(/is 1073741824 bytes, more than/);
    expect(oneLineError(await hostile(["sweep", "--timeout", "2"]), 1)).toMatch(/no complete answer .* within 2 s/);
    const escaped = oneLineError(await hostile(["scrub"]), 1);
    expect(escaped).toMatch(/^shardgate: InternalError: bad/);
    expect([...escaped].some((c) => c.charCodeAt(0) < 0x20)).toBe(false);
    expect(oneLineError(await hostile(["lifecycle"]), 1)).toMatch(/HTTP 502.*not an S3 error document/);
    expect(oneLineError(await hostile(["key", "enable", "k"]), 1)).toMatch(/unexpected answer from the gateway/);
    expect(oneLineError(await hostile(["bucket", "list"]), 1)).toMatch(/HTTP 302.*redirects/);
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it("status shows a node down, readiness missing, usage and the heal queue (a gateway under a path prefix)", async () => {
    const text = await ok(["status"], { endpoint: `${base}/prefix` });
    expect(text).toMatch(/gateway\s+http:\/\/127\.0\.0\.1:\d+\/prefix — not ready \(missing: nodes: 1 of 2 reachable, 2 needed\)/);
    expect(text).toMatch(/quorum\s+1 of 2 nodes reachable, 1 draining/);
    expect(text).toMatch(/heal queue\s+1 object\(s\) pending/);
    expect(text).toMatch(/^NODE_0\s+disk\s+up\s+closed\s+1\.5 ms\s+10\s+0\s+no\s+3\s+3\.0 MiB/m);
    expect(text).toMatch(/^NODE_1\s+s3\s+down\s+open\s+-\s+7\s+7\s+yes\s+0\s+0 B\s+connect ECONNREFUSED/m);
    expect(text).toMatch(/^b\s+k\s+degraded-read/m);
    expect([...text].some((c) => c.charCodeAt(0) < 0x20 && c !== "\n")).toBe(false);
    const status = await okJson<{ reachable: number; nodes: { id: string; up: boolean }[] }>(["status"], { endpoint: `${base}/prefix` });
    expect(status.reachable).toBe(1);
    expect(status.nodes.map((n) => n.up)).toEqual([true, false]);
  });

  it("a gateway that is not there, or a bad endpoint: one line", async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = http.createServer();
      s.listen(0, "127.0.0.1", () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });
    expect(oneLineError(await cli(["status"], { endpoint: `http://127.0.0.1:${closed}` }), 1)).toContain("connection refused");
    expect(oneLineError(await cli(["status"], { endpoint: "not a url" }), 2)).toContain("is not a URL");
    expect(oneLineError(await cli(["status"], { endpoint: "ftp://127.0.0.1" }), 2)).toContain("http:// or https://");
    // The console's port given for the S3 endpoint: said so.
    expect(oneLineError(await cli(["key", "list"], { endpoint: gateway.consoleBase }), 1)).toContain("the web console's port");
  });
});

describe("what the CLI parses", () => {
  // Linear in what it reads: a hostile answer or credentials file of a few MiB is read at once (a
  // quadratic parse of these took minutes of CPU before).
  it("an answer of unclosed elements and a section header never closed parse to nothing, at once", async () => {
    // Plain JavaScript without declarations: their shapes as used here.
    const { xmlElements } = (await import(join(ROOT, "bin/lib/client.mjs"))) as { xmlElements(xml: string, name: string): string[] };
    const { parseIni } = (await import(join(ROOT, "bin/lib/credentials.mjs"))) as { parseIni(text: string): Map<string, Record<string, string>> };
    expect(xmlElements(`<ListAllMyBucketsResult>${"<Bucket>".repeat(1_000_000)}`, "Bucket")).toEqual([]);
    expect(xmlElements('<R><Bucket><Name>a</Name></Bucket><Buckets>x</Buckets><Bucket a="1">b</Bucket></R>', "Bucket")).toEqual(["<Name>a</Name>", "b"]);
    const ini = parseIni(`[a${" ".repeat(1_000_000)}b\n[ profile p ]\naws_access_key_id = A\n[bad]x]\n`);
    expect([...ini.keys()]).toEqual(["profile p"]);
  });
});
