// The background scrub in workerd with real R2 nodes: bytes flipped in shard files (data and
// parity, in chunk data and in checksums) are found chunk by chunk by a deep scrub, the shard files
// are rebuilt bit-identical, a second deep pass finds nothing, and the objects read back exactly.
// A shallow scrub finds deleted and truncated shard files. The walk resumes from its cursor across
// steps, completes passes, runs from the job scheduler's alarm, and reports in
// GET /_shardgate/admin/heal.
import { env } from "cloudflare:workers";
import { createExecutionContext, runDurableObjectAlarm, waitOnExecutionContext } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../worker/src/config";
import worker from "../../worker/src/index";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { s3, s3ok } from "./signed";
import { node, shardFiles } from "./nodes";

const MIB = 1 << 20;
const CHUNK = 16 << 10; // wrangler.toml: 16 KiB chunks, each followed by an 8-byte checksum
const FRAMED = CHUNK + 8;
const bucket = "scrub-test";

type ShardFile = { node: string; file: string; bytes: Uint8Array };

interface Problem {
  shard: number;
  node: string;
  fault: string;
  badChunks?: number[];
}
interface Finding {
  bucket: string;
  key: string;
  parts: { part: number; problems: Problem[] }[];
  rebuilt: number;
  failed: number;
}
interface Counters {
  objectsChecked: number;
  badChunks: number;
  badShards: number;
  shardsRebuilt: number;
  shardsFailed: number;
  bytesVerified: number;
  chunksChecked: number;
}
interface Run {
  mode: string;
  heal: boolean;
  trigger: string;
  pass: number;
  passCompleted: boolean;
  stoppedBy: string;
  cursor: { bucket: string; after: string | null; afterVersion?: string } | null;
  last: { bucket: string; key: string } | null;
  counters: Counters;
  mibPerSecond: number;
  findings: Finding[];
}
interface Status {
  pass: number;
  passStarted: string | null;
  passFinished: string | null;
  cursor: { bucket: string; after: string | null; afterVersion?: string } | null;
  current: Counters;
  lastPass: { pass: number; counters: Counters } | null;
  lastRun: Run | null;
  totals: Counters;
  running: boolean;
  settings: { mode: string; maxObjects: number; maxMs: number };
}

async function stored(id: string, file: string): Promise<Uint8Array | null> {
  const o = await node(id).get(file);
  return o ? new Uint8Array(await o.arrayBuffer()) : null;
}

/** PUTs `data` and returns its shard files by shard index, as first written. */
async function put(key: string, data: Uint8Array, into = bucket): Promise<Map<number, ShardFile>> {
  const before = await shardFiles();
  await s3ok(`/${into}/${key}`, { method: "PUT", body: data });
  const groups = new Map<string, Map<number, ShardFile>>();
  for (const [file, id] of await shardFiles()) {
    if (before.has(file)) continue;
    const at = file.lastIndexOf("/");
    const group = groups.get(file.slice(0, at)) ?? new Map<number, ShardFile>();
    group.set(Number(file.slice(at + 1)), { node: id, file, bytes: (await stored(id, file)) as Uint8Array });
    groups.set(file.slice(0, at), group);
  }
  const shards = [...groups.values()].sort((a, b) => b.size - a.size)[0];
  expect(shards?.size).toBe(6);
  return shards as Map<number, ShardFile>;
}

/** Chunks of a framed shard file of `length` bytes: [physical start, data length] each. */
function chunks(length: number): [number, number][] {
  const n = Math.ceil(length / FRAMED);
  const data = length - 8 * n;
  return Array.from({ length: n }, (_, c) => [c * FRAMED, Math.min(CHUNK, data - c * CHUNK)]);
}

/** Flips one bit of chunk `chunk` of a shard file on its node: in its data, or in its checksum. */
async function flip(shard: ShardFile, chunk: number, where: "data" | "checksum"): Promise<void> {
  const bytes = (await stored(shard.node, shard.file)) as Uint8Array;
  const [start, len] = chunks(bytes.length)[chunk] as [number, number];
  const at = where === "data" ? start + Math.floor(len / 2) : start + len + 3;
  bytes[at] ^= 0x10;
  await node(shard.node).put(shard.file, bytes);
}

async function scrub(query: string): Promise<{ run: Run; status: Status }> {
  const res = await s3ok(`/_shardgate/admin/scrub?${query}`, { method: "POST" });
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  return (await res.json()) as { run: Run; status: Status };
}

/** Runs scrub steps until the pass in progress completes; returns every run. */
async function pass(query: string): Promise<Run[]> {
  const runs: Run[] = [];
  for (let i = 0; i < 200; i++) {
    const { run } = await scrub(query);
    runs.push(run);
    if (run.passCompleted) return runs;
  }
  throw new Error("the scrub pass did not complete in 200 steps");
}

/** Bad chunks found in this test's bucket, as "key shard:chunk" strings, sorted. */
function badChunksFound(runs: Run[]): string[] {
  return runs
    .flatMap((r) => r.findings)
    .filter((f) => f.bucket === bucket)
    .flatMap((f) => f.parts.flatMap((p) => p.problems.flatMap((pr) => (pr.badChunks ?? []).map((c) => `${f.key} ${pr.shard}:${c}`))))
    .sort();
}

function problemsFound(runs: Run[]): string[] {
  return runs
    .flatMap((r) => r.findings)
    .filter((f) => f.bucket === bucket)
    .flatMap((f) => f.parts.flatMap((p) => p.problems.map((pr) => `${f.key} ${pr.shard} ${pr.fault}`)))
    .sort();
}

async function status(): Promise<{ scrub: Status; queue: { pending: number; objects: unknown[] } }> {
  const res = await s3ok("/_shardgate/admin/heal");
  return (await res.json()) as { scrub: Status; queue: { pending: number; objects: unknown[] } };
}

beforeAll(async () => {
  await s3ok(`/${bucket}`, { method: "PUT" });
  // Whatever other tests left: finish the pass in progress, so every test starts a fresh one.
  await pass("mode=shallow&max-objects=100000");
}, 120_000);

describe("deep scrub", () => {
  it("finds every flipped chunk (data and parity, data bytes and checksums), heals, and a second pass finds none", async () => {
    const a = randomBytes(3 * MIB + 123, 11);
    const b = randomBytes(MIB + 7, 12);
    const sa = await put("deep/a.bin", a);
    const sb = await put("deep/b.bin", b);
    await s3ok(`/${bucket}/deep/inline.txt`, { method: "PUT", body: "inline" });
    const last = chunks((sa.get(4) as ShardFile).bytes.length).length - 1;
    const flips: [Map<number, ShardFile>, string, number, number, "data" | "checksum"][] = [
      [sa, "deep/a.bin", 0, 0, "data"],
      [sa, "deep/a.bin", 0, 5, "data"],
      [sa, "deep/a.bin", 4, 3, "data"], // parity
      [sa, "deep/a.bin", 4, last, "checksum"], // the short last chunk's checksum
      [sb, "deep/b.bin", 2, 1, "data"],
      [sb, "deep/b.bin", 5, 0, "checksum"], // parity
    ];
    for (const [shards, , shard, chunk, where] of flips) await flip(shards.get(shard) as ShardFile, chunk, where);
    const expected = flips.map(([, key, shard, chunk]) => `${key} ${shard}:${chunk}`).sort();

    // Report only: every flipped chunk, nothing else, nothing rebuilt.
    const report = await pass("mode=deep&heal=false");
    expect(badChunksFound(report)).toEqual(expected);
    expect(report.reduce((n, r) => n + r.counters.shardsRebuilt, 0)).toBe(0);
    expect(report.every((r) => r.mode === "deep" && r.heal === false)).toBe(true);
    for (const [shards, , shard] of flips) {
      const f = shards.get(shard) as ShardFile;
      expect(await stored(f.node, f.file)).not.toEqual(f.bytes);
    }

    // Heal: found again, every bad shard file rebuilt bit-identical to the one first written.
    const heal = await pass("mode=deep");
    expect(badChunksFound(heal)).toEqual(expected);
    const mine = heal.flatMap((r) => r.findings).filter((f) => f.bucket === bucket);
    expect(mine.reduce((n, f) => n + f.rebuilt, 0)).toBe(4);
    expect(mine.reduce((n, f) => n + f.failed, 0)).toBe(0);
    for (const shards of [sa, sb]) for (const f of shards.values()) expectSameBytes((await stored(f.node, f.file)) as Uint8Array, f.bytes);
    const verified = heal.reduce((n, r) => n + r.counters.bytesVerified, 0);
    expect(verified).toBeGreaterThanOrEqual(6 * ((sa.get(0) as ShardFile).bytes.length + (sb.get(0) as ShardFile).bytes.length));

    // A second deep pass: all shard files verify.
    const again = await pass("mode=deep");
    expect(badChunksFound(again)).toEqual([]);
    expect(again.reduce((n, r) => n + r.counters.badChunks, 0)).toBe(0);

    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/deep/a.bin`)).arrayBuffer()), a);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/deep/b.bin`)).arrayBuffer()), b);

    // The metrics counted every bad chunk of the two deep passes.
    const metrics = await (await s3ok("/_shardgate/metrics")).text();
    const failures = metrics
      .split("\n")
      .filter((l) => l.startsWith("shardgate_checksum_failures_total"))
      .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    expect(failures).toBeGreaterThanOrEqual(2 * expected.length);
  }, 120_000);
});

describe("shallow scrub", () => {
  it("finds a deleted and a truncated shard file and rebuilds them", async () => {
    const c = randomBytes(2 * MIB + 99, 13);
    const sc = await put("shallow/c.bin", c);
    const gone = sc.get(1) as ShardFile;
    const cut = sc.get(5) as ShardFile;
    await node(gone.node).delete(gone.file);
    await node(cut.node).put(cut.file, cut.bytes.slice(0, cut.bytes.length - 1000));
    const runs = await pass("mode=shallow");
    expect(problemsFound(runs)).toEqual(["shallow/c.bin 1 length", "shallow/c.bin 5 length"]);
    expect(runs.every((r) => r.counters.bytesVerified === 0)).toBe(true);
    for (const f of [gone, cut]) expectSameBytes((await stored(f.node, f.file)) as Uint8Array, f.bytes);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${bucket}/shallow/c.bin`)).arrayBuffer()), c);
  }, 120_000);

  it("covers noncurrent versions: a deleted shard file of an old version is found and rebuilt", async () => {
    const versioned = "scrub-a-versions"; // sorts before the bucket the walk test ends on
    await s3ok(`/${versioned}`, { method: "PUT" });
    const enable = `<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>`;
    await s3ok(`/${versioned}?versioning`, { method: "PUT", body: enable });
    const old = randomBytes(MIB + 77, 15);
    const shards = await put("v/old.bin", old, versioned);
    await s3ok(`/${versioned}/v/old.bin`, { method: "PUT", body: "the current version" });
    const oldId = /<Version><Key>v\/old.bin<\/Key><VersionId>([0-9a-f]+)<\/VersionId><IsLatest>false/.exec(
      await (await s3ok(`/${versioned}?versions`)).text(),
    )?.[1];
    const gone = shards.get(2) as ShardFile;
    await node(gone.node).delete(gone.file);
    const runs = await pass("mode=shallow");
    const found = runs
      .flatMap((r) => r.findings)
      .filter((f) => f.bucket === versioned)
      .flatMap((f) => f.parts.flatMap((p) => p.problems.map((pr) => `${f.key} ${pr.shard} ${pr.fault}`)));
    expect(found).toEqual(["v/old.bin 2 length"]);
    expectSameBytes((await stored(gone.node, gone.file)) as Uint8Array, gone.bytes);
    expectSameBytes(new Uint8Array(await (await s3ok(`/${versioned}/v/old.bin?versionId=${oldId}`)).arrayBuffer()), old);
  }, 120_000);

  it("a deep scrub names the fault of a missing and a short shard file", async () => {
    const d = randomBytes(MIB + 5000, 14);
    const sd = await put("shallow/d.bin", d);
    const gone = sd.get(0) as ShardFile;
    const cut = sd.get(3) as ShardFile;
    await node(gone.node).delete(gone.file);
    await node(cut.node).put(cut.file, cut.bytes.slice(0, FRAMED * 2 + 100));
    const runs = await pass("mode=deep");
    const found = problemsFound(runs);
    expect(found).toContain("shallow/d.bin 0 missing");
    expect(found.filter((p) => p.startsWith("shallow/d.bin 3 "))).toHaveLength(1);
    for (const f of [gone, cut]) expectSameBytes((await stored(f.node, f.file)) as Uint8Array, f.bytes);
  }, 120_000);
});

describe("the walk", () => {
  it("resumes from its cursor across steps (max-objects=1) and completes the pass", async () => {
    await s3ok(`/${bucket}/walk/x1`, { method: "PUT", body: randomBytes(20_000, 15) });
    await s3ok(`/${bucket}/walk/x2`, { method: "PUT", body: "small" });
    await s3ok(`/${bucket}/walk/x3`, { method: "PUT", body: randomBytes(70_000, 16) });
    const visited: [string, string][] = [];
    let passNumber = -1;
    let completed = false;
    for (let i = 0; i < 500 && !completed; i++) {
      const { run, status } = await scrub("mode=shallow&max-objects=1");
      if (passNumber < 0) passNumber = run.pass;
      expect(run.pass).toBe(passNumber); // never restarted
      expect(run.counters.objectsChecked).toBeLessThanOrEqual(1);
      if (run.last) visited.push([run.last.bucket, run.last.key]);
      completed = run.passCompleted;
      if (completed) {
        expect(status.cursor).toBeNull();
        expect(status.lastPass?.pass).toBe(passNumber);
        expect(status.passFinished).not.toBeNull();
      } else {
        expect(run.counters.objectsChecked).toBe(1);
        expect(run.stoppedBy).toBe("max-objects");
        // After the last version of a bucket the cursor moves on to the start of the next one.
        if (run.cursor?.bucket === run.last?.bucket)
          expect(run.cursor).toEqual({ bucket: run.last?.bucket, after: run.last?.key, afterVersion: expect.any(String) });
        else expect(run.cursor?.after === null && (run.cursor?.bucket ?? "") > (run.last?.bucket ?? "")).toBe(true);
        expect(status.cursor).toEqual(run.cursor);
      }
    }
    expect(completed).toBe(true);
    // Each object version once, in (bucket, key) order (a key's versions one after another), ours among them.
    for (let i = 1; i < visited.length; i++) {
      const [[b0, k0], [b1, k1]] = [visited[i - 1] as [string, string], visited[i] as [string, string]];
      expect(b0 < b1 || (b0 === b1 && k0 <= k1), `${b0}/${k0} before ${b1}/${k1}`).toBe(true);
    }
    const ours = visited.filter(([b]) => b === bucket).map(([, k]) => k);
    expect(ours).toEqual(["deep/a.bin", "deep/b.bin", "deep/inline.txt", "shallow/c.bin", "shallow/d.bin", "walk/x1", "walk/x2", "walk/x3"]);
    const next = await scrub("mode=shallow&max-objects=1");
    expect(next.run.pass).toBe(passNumber + 1);
  }, 120_000);

  it("runs a step from the job scheduler's alarm, armed by the first request", async () => {
    const before = (await status()).scrub;
    const ctx = createExecutionContext();
    await worker.fetch(new Request("http://gateway.test/_shardgate/health"), env as never, ctx);
    await waitOnExecutionContext(ctx);
    const jobs = (env as unknown as Env).JOB_SCHEDULER;
    if (!jobs) throw new Error("wrangler.toml binds no JOB_SCHEDULER");
    const scheduler = jobs.get(jobs.idFromName("main"));
    expect(await scheduler.nextRun()).toBeGreaterThan(Date.now());
    expect(await runDurableObjectAlarm(scheduler)).toBe(true);
    expect(await scheduler.nextRun()).toBeGreaterThan(Date.now()); // the next run is set again
    const after = (await status()).scrub;
    expect(after.lastRun?.trigger).toBe("cron");
    expect(after.lastRun?.mode).toBe("deep");
    expect(after.totals.objectsChecked).toBeGreaterThan(before.totals.objectsChecked);
  }, 120_000);

  it("GET /_shardgate/admin/heal shows the scrub's progress and the heal queue", async () => {
    await pass("mode=deep");
    const { scrub: s, queue } = await status();
    expect(s.running).toBe(false);
    expect(s.pass).toBeGreaterThan(1);
    expect(s.lastPass?.counters.objectsChecked).toBeGreaterThan(0);
    expect(s.lastRun?.mode).toBe("deep");
    expect(s.lastRun?.mibPerSecond).toBeGreaterThanOrEqual(0);
    expect(s.totals.badChunks).toBeGreaterThanOrEqual(12);
    expect(s.totals.shardsRebuilt).toBeGreaterThanOrEqual(8);
    expect(s.settings).toMatchObject({ mode: "deep", maxObjects: 1000 });
    expect(typeof queue.pending).toBe("number");
    expect(Array.isArray(queue.objects)).toBe(true);
    expect((await s3("/_shardgate/admin/scrub?mode=sideways", { method: "POST" })).status).toBe(400);
    expect((await s3("/_shardgate/admin/scrub", { method: "GET" })).status).toBe(501);
    // Unsigned requests are refused like any other.
    expect((await worker.fetch(new Request("http://gateway.test/_shardgate/admin/heal"), env as never, createExecutionContext())).status).toBe(403);
  }, 120_000);
});
