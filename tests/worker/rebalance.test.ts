// Adding and draining nodes (docs/operations.md, "Adding, draining and removing nodes"): the
// gateway is given a seventh node (NODE_6, an R2 binding of vitest.config.ts), new writes use it
// at once, and the scrub's walk moves the shard files placement now puts on it; then NODE_2 is
// drained and the walk empties it, and the gateway runs without it. Reads and writes go on all
// the while and every read is byte for byte what was written.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { handleS3 } from "../../worker/src/api/handle";
import { type Env, loadConfig, SCRUB_DEFAULTS } from "../../worker/src/config";
import { scrubStep } from "../../worker/src/services/scrub";
import { AwsClient } from "aws4fetch";
import { CREDENTIALS } from "../shared/credentials";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { GATEWAY } from "./signed";
import { node } from "./nodes";

const SIX = "NODE_0,NODE_1,NODE_2,NODE_3,NODE_4,NODE_5";
const base = env as unknown as Env;
/** The gateway as configured by `vars` (a new env object: a configuration of its own). */
const gateway = (vars: Partial<Env>): Env => ({ ...base, ...vars });
const withSeven = gateway({ SHARDGATE_NODES: `${SIX},NODE_6` });
const draining = gateway({ SHARDGATE_NODES: `${SIX},NODE_6`, SHARDGATE_DRAINING_NODES: "NODE_2" });
const withoutTwo = gateway({ SHARDGATE_NODES: "NODE_0,NODE_1,NODE_3,NODE_4,NODE_5,NODE_6" });

const signer = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });
const exec = { waitUntil: () => {} };
async function s3(on: Env, path: string, init: RequestInit = {}): Promise<Response> {
  // Straight into the handler (no HTTP in between): the length a client would send is set here.
  const headers = new Headers(init.headers);
  if (init.body instanceof Uint8Array) headers.set("content-length", String(init.body.length));
  return handleS3(await signer.sign(`${GATEWAY}${path}`, { ...init, headers }), on, exec);
}
async function ok(on: Env, path: string, init: RequestInit = {}): Promise<Response> {
  const res = await s3(on, path, init);
  if (!res.ok) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

const bucket = "rebalance";
const LOAD_OBJECTS = 40;
const written = new Map<string, Uint8Array>();

async function files(id: string): Promise<number> {
  let n = 0;
  let cursor: string | undefined;
  do {
    const page = await node(id).list({ cursor });
    n += page.objects.length;
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return n;
}

/** A counter's value from the gateway's metrics (the sum of the lines that start with `series`). */
async function counter(on: Env, series: string): Promise<number> {
  const text = await (await ok(on, "/_shardgate/metrics")).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith(series))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

/** Every object written so far, read back through `on`: byte for byte. */
async function readAll(on: Env): Promise<void> {
  for (const [key, bytes] of written) expectSameBytes(new Uint8Array(await (await ok(on, `/${bucket}/${key}`)).arrayBuffer()), bytes);
}

/** Writes and reads through `on` while `work` runs (at most LOAD_OBJECTS new objects): the load. */
async function underLoad<T>(on: Env, tag: string, work: () => Promise<T>): Promise<T> {
  let done = false;
  const load = (async () => {
    for (let i = 0; !done && i < LOAD_OBJECTS; i++) {
      const key = `load-${tag}-${i}`;
      const bytes = randomBytes(50_000 + i * 997, i + 1000);
      await ok(on, `/${bucket}/${key}`, { method: "PUT", body: bytes });
      written.set(key, bytes);
      const some = [...written.keys()][(i * 7) % written.size] as string;
      expectSameBytes(new Uint8Array(await (await ok(on, `/${bucket}/${some}`)).arrayBuffer()), written.get(some) as Uint8Array);
    }
  })();
  try {
    return await work();
  } finally {
    done = true;
    await load;
  }
}

/** Scrub steps (shallow: lengths only) until a whole pass finds nothing misplaced; the passes' reports. */
async function rebalance(on: Env): Promise<{ misplaced: number; moved: number; usage: Record<string, { files: number }> }[]> {
  const passes = [];
  for (let step = 0; step < 40; step++) {
    const result = await scrubStep(on, loadConfig(on), { ...SCRUB_DEFAULTS, mode: "shallow", maxObjects: 50 }, "admin");
    if (!result.ok) throw new Error("the scrub's lease is held");
    if (!result.run.passCompleted) continue;
    const last = result.state.lastPass;
    if (!last) throw new Error("a completed pass without a summary");
    passes.push({ misplaced: last.counters.shardsMisplaced, moved: last.counters.shardsMoved, usage: last.usage });
    if (last.counters.shardsMisplaced === 0) return passes;
  }
  throw new Error(`placement did not settle: ${JSON.stringify(passes)}`);
}

beforeAll(async () => {
  await ok(base, `/${bucket}`, { method: "PUT" });
  for (let i = 0; i < 24; i++) {
    const bytes = randomBytes(100_000 + i * 4099, i);
    await ok(base, `/${bucket}/before-${i}`, { method: "PUT", body: bytes });
    written.set(`before-${i}`, bytes);
  }
}, 60_000);

describe("adding and draining nodes", () => {
  it("a node added takes new writes at once, and the walk moves its share of the old ones onto it", async () => {
    expect(await files("NODE_6")).toBe(0);
    // New writes: placement over seven nodes puts one of each object's six shard files on NODE_6
    // six times in seven.
    for (let i = 0; i < 14; i++) {
      const bytes = randomBytes(60_000, 500 + i);
      await ok(withSeven, `/${bucket}/new-${i}`, { method: "PUT", body: bytes });
      written.set(`new-${i}`, bytes);
    }
    expect(await files("NODE_6")).toBeGreaterThanOrEqual(5); // 12 expected; 4 or fewer: odds of about 2 in a million
    const rebuiltBefore = await counter(withSeven, 'shardgate_heal_shards_total{result="rebuilt"}');
    const passes = await underLoad(withSeven, "add", () => rebalance(withSeven));
    // One more pass once the load is over counts every object, those it wrote too.
    passes.push(...(await rebalance(withSeven)));
    // The first pass found shard files placement now puts on NODE_6 and moved them (more than one
    // pass only when a part had more than m of them); the last found nothing left to move.
    expect(passes[0]?.misplaced).toBeGreaterThan(0);
    expect(passes.reduce((n, p) => n + p.moved, 0)).toBeGreaterThanOrEqual(passes[0]?.misplaced ?? 0);
    expect(passes.at(-1)?.misplaced).toBe(0);
    // Moved by copying each file (checked chunk by chunk), not rebuilt from k others.
    expect(await counter(withSeven, 'shardgate_heal_shards_total{result="rebuilt"}')).toBe(rebuiltBefore);
    expect(await counter(withSeven, 'shardgate_rebalance_shards_total{state="moved"}')).toBeGreaterThan(0);
    // Even usage: each of the seven nodes holds about 6/7 of the parts' shard files.
    const usage = passes.at(-1)?.usage ?? {};
    const counts = ["NODE_0", "NODE_1", "NODE_2", "NODE_3", "NODE_4", "NODE_5", "NODE_6"].map((id) => usage[id]?.files ?? 0);
    const mean = counts.reduce((a, b) => a + b, 0) / counts.length;
    for (const c of counts) expect(Math.abs(c - mean)).toBeLessThan(mean * 0.6);
    // What the nodes hold is what the manifests name: every file moved was removed where it was.
    for (const [i, id] of ["NODE_0", "NODE_1", "NODE_2", "NODE_3", "NODE_4", "NODE_5", "NODE_6"].entries()) expect(await files(id), id).toBe(counts[i]);
    await readAll(withSeven);
  }, 120_000);

  it("a node drained is emptied by the walk while the gateway serves, then leaves without a read going around it", async () => {
    const before = await files("NODE_2");
    expect(before).toBeGreaterThan(0);
    const passes = await underLoad(draining, "drain", () => rebalance(draining));
    passes.push(...(await rebalance(draining)));
    expect(passes[0]?.misplaced).toBeGreaterThan(0);
    expect(passes.at(-1)?.usage.NODE_2).toBeUndefined();
    expect(await files("NODE_2")).toBe(0);
    await readAll(draining);
    // NODE_2 removed from the configuration: every object still reads whole, with no shard
    // file read around (the degraded-read counter stays where it was).
    const around = await counter(withoutTwo, "shardgate_degraded_reads_total");
    await readAll(withoutTwo);
    expect(await counter(withoutTwo, "shardgate_degraded_reads_total")).toBe(around);
  }, 120_000);
});
