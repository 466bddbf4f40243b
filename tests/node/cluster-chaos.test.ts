// Chaos on real separate node processes (`npm run cluster`, 3 + 2 over six versitygw nodes, so
// every part leaves one node spare for heal to move a shard file to):
//   - a mixed workload of PUTs, full GETs and range GETs while nodes are killed and restarted,
//     never more than m = 2 down at once, the heal queue worked through after each round (as the
//     cron would): every read compared byte for byte, no acknowledged write lost, failed writes
//     leave nothing visible;
//   - a node whose directory is removed for good: heal moves its shard files onto the remaining
//     nodes (the rate is reported), then two other nodes are killed and every object still reads;
//   - a paused node (SIGSTOP): reads hedge to parity instead of waiting for it.
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3ServiceException } from "@aws-sdk/client-s3";
import { mkdirSync, rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes, rng } from "../shared/core-suite";
import { Cluster, sha256, signal, type NodeInfo } from "./cluster";

const MIB = 1 << 20;
const BUCKET = "chaos";
const c = new Cluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  // The block cache off: every read here is meant to meet the nodes and their faults (a hit
  // would read around a paused node by never asking it). tests/*/block-cache.test.ts test the cache.
  await c.start(["SHARDGATE_DATA_SHARDS:3", "SHARDGATE_PARITY_SHARDS:2", "SHARDGATE_BLOCK_CACHE:off"]);
  await c.s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
}, 180_000);

afterAll(() => c.stop());

/** Acknowledged objects: key → bytes. */
const objects = new Map<string, Uint8Array>();
const tally = { faultsInjected: 0, writesAcknowledged: 0, writesRefused: 0, readsVerified: 0, wrongBytes: 0, readErrors: [] as string[] };

async function get(key: string, range?: string): Promise<Uint8Array> {
  const res = await c.s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }));
  return (res.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray();
}

async function verify(key: string, range?: [number, number]): Promise<void> {
  const bytes = objects.get(key) as Uint8Array;
  const got = await get(key, range ? `bytes=${range[0]}-${range[1]}` : undefined);
  const want = range ? bytes.subarray(range[0], range[1] + 1) : bytes;
  if (sha256(got) !== sha256(want)) tally.wrongBytes += 1;
  tally.readsVerified += 1;
}

async function status(key: string): Promise<number> {
  return c.s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).then(
    () => 200,
    (e: S3ServiceException) => e.$metadata?.httpStatusCode ?? 0,
  );
}

/** Works through the heal queues until they are empty (the cron's job, done at once here). */
async function healQueue(): Promise<void> {
  for (let i = 0; i < 30; i++) {
    const r = await c.adminJson<{ pending: number }>("/_shardgate/admin/heal", "POST");
    if (r.pending === 0) return;
    await sleep(1000); // a restarted node's breaker lets a probe through after its cool-down
  }
  throw new Error("the heal queue did not empty");
}

/** Nodes just restarted keep their breaker open for its cool-down: wait until every node answers again. */
async function waitForClosedBreakers(): Promise<void> {
  for (let i = 0; i < 40; i++) {
    // A listing touches no node; a tiny PUT and GET do, and let each breaker's probe through.
    await c.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "probe", Body: randomBytes(300_000, 5) })).catch(() => {});
    const { nodes } = await c.adminJson<{ nodes: { state: string }[] }>("/_shardgate/admin/nodes");
    // half-open: the cool-down is over and the next request to the node goes through.
    if (nodes.every((n) => n.state !== "open")) return;
    await sleep(500);
  }
  throw new Error("node breakers did not close");
}

const SIZES = [0, 1000, 5000, 300_000, MIB + 3, 3 * MIB + 7];

/** PUTs, full GETs and range GETs, `workers` at a time, until stopped (at most `maxOps`). */
function workload(workers: number, maxOps: number) {
  const rnd = rng(7);
  const refused: string[] = [];
  let ops = 0;
  let stopped = false;
  let n = 0;
  const one = async () => {
    const roll = rnd();
    const keys = [...objects.keys()];
    if (roll < 0.3 || keys.length === 0) {
      const key = `w/${n++}`;
      const data = randomBytes(SIZES[Math.floor(rnd() * SIZES.length)], 1000 + n);
      try {
        await c.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: data }));
        objects.set(key, data);
        tally.writesAcknowledged += 1;
      } catch (e) {
        // Refused cleanly (503 while too many nodes are down): nothing may be visible.
        if (e instanceof S3ServiceException && e.$metadata.httpStatusCode === 503) refused.push(key);
        tally.writesRefused += 1;
      }
      return;
    }
    const key = keys[Math.floor(rnd() * keys.length)];
    const size = (objects.get(key) as Uint8Array).length;
    try {
      if (roll < 0.65 || size < 2) await verify(key);
      else {
        const a = Math.floor(rnd() * (size - 1));
        await verify(key, [a, Math.min(size - 1, a + Math.floor(rnd() * 400_000))]);
      }
    } catch (e) {
      tally.readErrors.push(`${key}: ${String(e)}`);
    }
  };
  const runners = Array.from({ length: workers }, async () => {
    while (!stopped && ops < maxOps) {
      ops += 1;
      await one();
    }
  });
  return {
    async stop() {
      stopped = true;
      await Promise.all(runners);
      return { ops, refused };
    },
  };
}

describe("chaos on six versitygw nodes (3 + 2)", () => {
  it("PUTs, full GETs and range GETs while nodes are killed and restarted: zero wrong bytes, zero acknowledged writes lost", async () => {
    for (let i = 0; i < 6; i++) {
      const data = randomBytes(SIZES[i], 500 + i);
      await c.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `seed/${i}`, Body: data }));
      objects.set(`seed/${i}`, data);
      tally.writesAcknowledged += 1;
    }
    const rnd = rng(99);
    const nodes = c.info.nodes;
    const run = workload(2, 3000);
    for (let round = 0; round < 4; round++) {
      // Two distinct nodes: one goes down, then a second (m = 2 down), then both come back.
      const a = nodes[Math.floor(rnd() * nodes.length)];
      const rest = nodes.filter((n) => n !== a);
      const b = rest[Math.floor(rnd() * rest.length)];
      c.kill(a);
      tally.faultsInjected += 1;
      await sleep(2500);
      c.kill(b);
      tally.faultsInjected += 1;
      await sleep(2500);
      await c.restart(a);
      await sleep(1500);
      await c.restart(b);
      // Both answer again before the queue is healed and the next round starts: a write skips a
      // node only while its breaker is open, and would otherwise miss a node not yet healed.
      await waitForClosedBreakers();
      await healQueue();
      console.log(JSON.stringify({ round, down: [a.id, b.id], ...tally, readErrors: tally.readErrors.length }));
    }
    const { ops, refused } = await run.stop();
    expect(tally.readErrors).toEqual([]);
    expect(tally.wrongBytes).toBe(0);
    for (const key of refused) expect(await status(key), key).toBe(404);
    // Every acknowledged write reads back, and a walk over the bucket finds nothing left to heal.
    for (const key of objects.keys()) await verify(key);
    expect(tally.wrongBytes).toBe(0);
    const walk = await c.adminJson<{ shardsRebuilt: number; shardsFailed: number; next: string | null }>(
      `/_shardgate/admin/heal?bucket=${BUCKET}&max-objects=1000`,
      "POST",
    );
    expect(walk).toMatchObject({ shardsRebuilt: 0, shardsFailed: 0, next: null });
    expect(ops).toBeGreaterThan(50);
    console.log(JSON.stringify({ chaos: { ...tally, readErrors: tally.readErrors.length, ops, acknowledgedObjects: objects.size, bytesLost: 0 } }));
  }, 600_000);

  it("a node lost for good: heal rebuilds its shard files on the others, then two more nodes can be lost", async () => {
    const lost = c.info.nodes[2];
    // Shard files the manifests place on the node (its disk may also hold orphans of moves made
    // while it was down).
    const layouts = async () => {
      const all: { key: string; shards: { node: string; health: string }[] }[] = [];
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await c.s3.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: token }));
        keys.push(...(page.Contents ?? []).map((o) => o.Key as string));
        token = page.NextContinuationToken;
      } while (token);
      for (const Key of keys) {
        const layout = await c.adminJson<{ parts: { shards?: { node: string; health: string }[] }[] }>(
          `/_shardgate/admin/object?bucket=${BUCKET}&key=${encodeURIComponent(Key as string)}`,
        );
        all.push({ key: Key as string, shards: layout.parts.flatMap((p) => p.shards ?? []) });
      }
      return all;
    };
    const before = (await layouts()).reduce((n, o) => n + o.shards.filter((s) => s.node === lost.id).length, 0);
    expect(before).toBeGreaterThan(0);
    c.kill(lost);
    rmSync(lost.dir, { recursive: true, force: true });
    mkdirSync(lost.dir);
    await c.restart(lost); // it answers again, with an empty disk (its bucket is gone)
    const started = Date.now();
    let moved = 0;
    let rebuilt = 0;
    let bytes = 0;
    let after = "";
    for (let batch = 0; batch < 100; batch++) {
      const r = await c.adminJson<{ shardsRebuilt: number; shardsMoved: number; shardsFailed: number; bytesRebuilt: number; next: string | null }>(
        `/_shardgate/admin/heal?bucket=${BUCKET}&max-objects=20${after ? `&start-after=${encodeURIComponent(after)}` : ""}`,
        "POST",
      );
      expect(r.shardsFailed).toBe(0);
      moved += r.shardsMoved;
      rebuilt += r.shardsRebuilt;
      bytes += r.bytesRebuilt;
      if (r.next === null) break;
      after = r.next;
    }
    const seconds = (Date.now() - started) / 1000;
    // Most move to the spare nodes; the emptied node may take a few back once it accepts writes
    // again (versitygw recreates the bucket's directories on a PUT). Either way: all healthy.
    expect(rebuilt).toBe(before);
    expect(moved).toBeGreaterThan(0);
    for (const o of await layouts())
      expect(
        o.shards.filter((s) => s.health !== "ok"),
        o.key,
      ).toEqual([]);
    // Full redundancy without the lost node: any two others may now go.
    const [y, z] = c.info.nodes.filter((n) => n !== lost).slice(0, 2);
    c.kill(y);
    c.kill(z);
    try {
      for (const key of objects.keys()) await verify(key);
      expect(tally.wrongBytes).toBe(0);
    } finally {
      await c.restart(y);
      await c.restart(z);
      await c.reprovision(lost); // its disk replaced: it takes shard files again
      await waitForClosedBreakers();
    }
    console.log(
      JSON.stringify({
        lostNode: {
          shardFiles: before,
          rebuilt,
          moved,
          mibRebuilt: +(bytes / MIB).toFixed(2),
          seconds: +seconds.toFixed(2),
          healMiBPerSecond: +(bytes / MIB / seconds).toFixed(2),
        },
      }),
    );
  }, 300_000);

  it("a paused node (SIGSTOP): reads hedge to parity instead of waiting for it", async () => {
    const data = randomBytes(MIB, 777);
    objects.set("stall.bin", data);
    await c.s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "stall.bin", Body: data }));
    const layout = await c.adminJson<{ parts: { shards: { node: string }[] }[] }>(`/_shardgate/admin/object?bucket=${BUCKET}&key=stall.bin`);
    const paused = c.info.nodes.find((n) => n.id === layout.parts[0].shards[0].node) as NodeInfo;
    const timed = async () => {
      const started = performance.now();
      await verify("stall.bin");
      return performance.now() - started;
    };
    const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.ceil(xs.length * 0.99) - 1];
    const healthy: number[] = [];
    for (let i = 0; i < 30; i++) healthy.push(await timed());
    await waitForClosedBreakers();
    signal(paused, "SIGSTOP");
    const stalled: number[] = [];
    let slow = false;
    try {
      for (let i = 0; i < 30; i++) stalled.push(await timed());
      // Reads hedged the paused node and go around it.
      const nodes = await c.adminJson<{ nodes: { id: string; slow: boolean }[] }>("/_shardgate/admin/nodes");
      slow = (nodes.nodes.find((n) => n.id === paused.id) as { slow: boolean }).slow;
    } finally {
      signal(paused, "SIGCONT");
    }
    expect(tally.wrongBytes).toBe(0);
    expect(slow).toBe(true);
    // Without hedging each read would wait for the node's 5 s stall limit. Loose on purpose (a
    // shared machine); the benchmark measures the ratio.
    expect(p99(stalled)).toBeLessThan(Math.max(2_500, 4 * p99(healthy)));
    console.log(JSON.stringify({ stalledNode: { healthyP99Ms: +p99(healthy).toFixed(1), pausedP99Ms: +p99(stalled).toFixed(1) } }));
  }, 180_000);
});
