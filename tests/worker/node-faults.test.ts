// Node faults in workerd with real R2 nodes: the circuit breaker and GET /_shardgate/admin/nodes,
// under-replicated writes and the heal queue, hedged and stalled reads, heal onto a replacement
// node when one is gone, and draining a node. Requests go straight into the Worker's fetch handler
// with an env of the test's choosing (e.g. 3 + 2 over the six nodes, so a part has a spare node).
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { AwsClient } from "aws4fetch";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { loadConfig, type Env, type GatewayConfig } from "../../worker/src/config";
import { core } from "../../worker/src/core";
import type { ManifestPart } from "../../worker/src/shared/core-api";
import app from "../../worker/src/index";
import { GuardedNode, NodeHealth, nodeHealth, resetNodeHealth } from "../../worker/src/shared/node-health";
import { shardKey, type StorageNode, type NodeListing } from "../../worker/src/shared/nodes";
import type { LossReason } from "../../worker/src/shared/read-part";
import { openPartRange } from "../../worker/src/storage/range-stream";
import { expectSameBytes, randomBytes } from "../shared/core-suite";
import { CREDENTIALS } from "../shared/credentials";
import { NODES, node } from "./nodes";

vi.setConfig({ testTimeout: 30_000 }); // several megabytes written and healed per test on 2 shared cores

const MIB = 1 << 20;

const baseEnv = env as unknown as Env;

const client = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1" });

/** A signed request to the Worker with `vars` over the configured ones; waits for its background work. */
async function call(path: string, init: RequestInit = {}, vars: Partial<Env> = {}, workerEnv?: Env): Promise<Response> {
  // Straight into the handler, a body's length must be declared as a client would.
  const length: Record<string, string> = init.body instanceof Uint8Array ? { "content-length": String(init.body.length) } : {};
  const request = await client.sign(`http://gateway.test${path}`, { ...init, headers: { ...length, ...(init.headers as Record<string, string>) } });
  const ctx = createExecutionContext();
  const response = await app.fetch(request, workerEnv ?? ({ ...baseEnv, ...vars } as Env), ctx);
  const body = new Uint8Array(await response.arrayBuffer());
  await waitOnExecutionContext(ctx);
  return new Response(body.length > 0 ? body : null, { status: response.status, headers: response.headers });
}

async function ok(path: string, init: RequestInit = {}, vars: Partial<Env> = {}, workerEnv?: Env): Promise<Response> {
  const res = await call(path, init, vars, workerEnv);
  if (res.status !== 200) throw new Error(`${init.method ?? "GET"} ${path}: ${res.status} ${await res.text()}`);
  return res;
}

type Sharded = ManifestPart & { layout: { type: "sharded"; storageId: string; placement: string[] } };

async function parts(bucket: string, key: string): Promise<Sharded[]> {
  const { object } = await baseEnv.BUCKET_INDEX.get(baseEnv.BUCKET_INDEX.idFromName(bucket)).head(key);
  if (!object) throw new Error(`no object ${bucket}/${key}`);
  return core.decodeManifest(object.manifest).parts as Sharded[];
}

const queue = (bucket: string) => baseEnv.BUCKET_INDEX.get(baseEnv.BUCKET_INDEX.idFromName(bucket)).healQueue(100);

function openBreaker(id: string): void {
  for (let i = 0; i < 3; i++) nodeHealth(id).failure(new Error("test: node down"));
}

afterEach(() => resetNodeHealth());

describe("circuit breaker", () => {
  it("opens after consecutive failures, lets one probe through after the cool-down, and closes on success", () => {
    const h = new NodeHealth("n", { failures: 3, coolDownMs: 1000 });
    h.failure(new Error("a"), 0);
    h.failure(new Error("b"), 0);
    expect(h.allow(0)).toBe(true);
    h.failure(new Error("c"), 0);
    expect(h.allow(500)).toBe(false);
    expect(h.allow(1000)).toBe(true); // the probe
    expect(h.allow(1001)).toBe(false); // only one at a time
    h.failure(new Error("probe failed"), 1001);
    expect(h.allow(1500)).toBe(false);
    expect(h.allow(2001)).toBe(true);
    h.success(12);
    expect(h.state).toBe("closed");
    expect(h.allow(2002)).toBe(true);
    expect(h.status("r2")).toMatchObject({ state: "closed", errors: 4, consecutiveFailures: 0, lastError: "probe failed", latencyMs: 12 });
  });

  it("a probe that never answers frees the probe slot after another cool-down", () => {
    const h = new NodeHealth("n", { failures: 1, coolDownMs: 1000 });
    h.failure(new Error("down"), 0);
    expect(h.allow(1000)).toBe(true); // the probe, then nothing: its request was abandoned
    expect(h.allow(1500)).toBe(false);
    expect(h.allow(2000)).toBe(true);
  });

  it("hedges after a few times the node's recent latency, within bounds", () => {
    const h = new NodeHealth("n");
    expect(h.hedgeAfterMs()).toBe(300);
    h.success(20);
    expect(h.hedgeAfterMs()).toBe(80);
    h.success(1);
    expect(h.hedgeAfterMs()).toBeGreaterThanOrEqual(25);
    for (let i = 0; i < 50; i++) h.success(5000);
    expect(h.hedgeAfterMs()).toBe(1000);
  });

  it("a node far slower than its peers is a laggard: read around, but measured again every 2 s; slow peers all alike are not", () => {
    const at = Date.now() + 10_000; // past the peers' cached median
    for (const id of ["p0", "p1", "p2", "p3", "p4"]) nodeHealth(id).success(2);
    const slow = nodeHealth("p5");
    for (let i = 0; i < 20; i++) slow.success(50); // its own hedge delay follows it: 200 ms
    expect(slow.hedgeAfterMs()).toBe(200);
    expect(nodeHealth("p0").laggard(at)).toBe(false);
    expect(slow.laggard(at)).toBe(false); // the first read in a while goes to it, to measure it
    expect(slow.laggard(at + 1)).toBe(true);
    expect(slow.laggard(at + 1_999)).toBe(true);
    expect(slow.laggard(at + 2_000)).toBe(false); // measured again
    for (let i = 0; i < 40; i++) slow.success(2); // recovered
    expect(slow.laggard(at + 2_001)).toBe(false);
    expect(slow.laggard(at + 2_002)).toBe(false);
    // Every node equally slow: nobody lags.
    resetNodeHealth();
    for (const id of ["q0", "q1", "q2"]) for (let i = 0; i < 20; i++) nodeHealth(id).success(50);
    expect(nodeHealth("q1").laggard(at + 5_000)).toBe(false);
  });

  it("GET /_shardgate/admin/nodes shows every node, its breaker, latency and errors", async () => {
    openBreaker("NODE_2");
    const { nodes } = (await (await ok("/_shardgate/admin/nodes")).json()) as {
      nodes: { id: string; kind: string; state: string; errors: number; lastError: string | null }[];
    };
    expect(nodes.map((n) => n.id)).toEqual(NODES);
    expect(nodes.every((n) => n.kind === "r2")).toBe(true);
    expect(nodes.find((n) => n.id === "NODE_2")).toMatchObject({ state: "open", errors: 3, lastError: "test: node down" });
    expect(nodes.filter((n) => n.state === "closed")).toHaveLength(5);
    expect((await call("/_shardgate/admin/nodes", { method: "DELETE" })).status).toBe(501);
  });
});

describe("under-replicated writes and the heal queue", () => {
  const bucket = "faults-queue";
  beforeAll(async () => {
    await ok(`/${bucket}`, { method: "PUT" });
  });

  it("a PUT that misses a node succeeds, reads back, is queued, and the queue heal restores the shard file", async () => {
    const data = randomBytes(2 * MIB + 77, 11);
    openBreaker("NODE_4");
    await ok(`/${bucket}/under.bin`, { method: "PUT", body: data });
    const [part] = await parts(bucket, "under.bin");
    const shard = part.layout.placement.indexOf("NODE_4");
    expect(await node("NODE_4").head(shardKey(part.layout.storageId, shard))).toBeNull();
    expect((await queue(bucket)).entries.map((e) => [e.key, e.reason])).toEqual([["under.bin", "under-replicated write"]]);
    // Reads go around the open breaker without asking the node.
    expectSameBytes(new Uint8Array(await (await ok(`/${bucket}/under.bin`)).arrayBuffer()), data);

    resetNodeHealth(); // the node is back
    const report = (await (await ok("/_shardgate/admin/heal", { method: "POST" })).json()) as { objectsHealed: number; pending: number };
    expect(report).toMatchObject({ objectsHealed: 1, pending: 0 });
    expect((await node("NODE_4").head(shardKey(part.layout.storageId, shard)))?.size).toBeGreaterThan(0);
    expect((await queue(bucket)).pending).toBe(0);
  });

  it("an overwrite or a delete takes the object out of the queue", async () => {
    openBreaker("NODE_1");
    await ok(`/${bucket}/gone.bin`, { method: "PUT", body: randomBytes(MIB, 12) });
    expect((await queue(bucket)).entries.map((e) => e.key)).toContain("gone.bin");
    resetNodeHealth();
    await ok(`/${bucket}/gone.bin`, { method: "PUT", body: randomBytes(MIB, 13) });
    expect((await queue(bucket)).entries.map((e) => e.key)).not.toContain("gone.bin");
    openBreaker("NODE_1");
    await ok(`/${bucket}/gone.bin`, { method: "PUT", body: randomBytes(MIB, 14) });
    expect((await queue(bucket)).entries.map((e) => e.key)).toContain("gone.bin");
    expect((await call(`/${bucket}/gone.bin`, { method: "DELETE" })).status).toBe(204);
    expect((await queue(bucket)).entries.map((e) => e.key)).not.toContain("gone.bin");
  });
});

/** An R2 node whose reads can be made slow to answer, or to stall after their first piece. */
class FlakyNode implements StorageNode {
  readonly kind = "r2";
  mode: "ok" | "slow" | "stall" = "ok";
  constructor(private readonly inner: StorageNode) {}
  get id(): string {
    return this.inner.id;
  }
  put(key: string, body: ReadableStream<Uint8Array>, length: number): Promise<void> {
    return this.inner.put(key, body, length);
  }
  async get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
    if (this.mode === "slow") await new Promise((r) => setTimeout(r, 3000));
    const body = await this.inner.get(key, start, end);
    if (!body || this.mode !== "stall") return body;
    const reader = body.getReader();
    let first = true;
    return new ReadableStream({
      async pull(controller) {
        if (!first) return new Promise(() => {}); // never sends again
        first = false;
        const { value, done } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value.subarray(0, Math.min(value.length, 1000)));
      },
    });
  }
  delete(keys: string[]): Promise<void> {
    return this.inner.delete(keys);
  }
  head(key: string): Promise<number | null> {
    return this.inner.head(key);
  }
  list(cursor: string | null): Promise<NodeListing> {
    return this.inner.list(cursor);
  }
}

describe("hedged and stalled reads", () => {
  const bucket = "faults-hedge";
  beforeAll(async () => {
    await ok(`/${bucket}`, { method: "PUT" });
  });

  async function readWith(mode: FlakyNode["mode"], readStallMs: number) {
    const data = randomBytes(3 * MIB + 5, 21);
    await ok(`/${bucket}/h.bin`, { method: "PUT", body: data });
    const [part] = await parts(bucket, "h.bin");
    const slowId = part.layout.placement[0]; // a data shard every read of the first block needs
    const base = loadConfig(baseEnv);
    const flaky = new Map<string, FlakyNode>();
    const nodes = base.nodes.map((n) => {
      const f = new FlakyNode(n);
      flaky.set(n.id, f);
      return new GuardedNode(f, new NodeHealth(n.id));
    });
    (flaky.get(slowId) as FlakyNode).mode = mode;
    const config: GatewayConfig = { ...base, nodes, writableNodes: nodes, readStallMs };
    const lost: [number, LossReason][] = [];
    const body = await openPartRange(config, core, part, 0, part.size, { shardLost: (_id, shard, why) => lost.push([shard, why]) });
    const bytes = new Uint8Array(await new Response(body).arrayBuffer());
    expectSameBytes(bytes, data);
    return { lost, health: nodes.find((n) => n.id === slowId)?.health as NodeHealth };
  }

  it("a node slower than its hedge delay is read around with parity; reads skip it until it answers", async () => {
    const { lost, health } = await readWith("slow", 5000);
    expect(lost).toEqual([[0, "slow"]]);
    // Not a failure, but later reads go around the node until it answers (here: 3 s late).
    expect(health.readAround).toBe(true);
    expect(health.status("r2")).toMatchObject({ slow: true, state: "closed", consecutiveFailures: 0 });
    await expect.poll(() => health.readAround, { timeout: 10_000 }).toBe(false);
  });

  it("a stream that stops sending mid-read is dropped after the stall limit and the read resumes from parity", async () => {
    const { lost, health } = await readWith("stall", 200);
    expect(lost).toEqual([[0, "error"]]);
    expect(health.lastError).toMatch(/stalled/);
  });
});

/** `bucket` with reads that send their first 1,000 bytes, then break off. */
function breakingReads(bucket: R2Bucket): R2Bucket {
  return new Proxy(bucket, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (prop !== "get") return typeof value === "function" ? value.bind(target) : value;
      return async (key: string, options?: R2GetOptions) => {
        const object = await target.get(key, options);
        if (!object) return object;
        const reader = object.body.getReader();
        let sent = false;
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            if (sent) return controller.error(new Error("test: the node broke off"));
            sent = true;
            const { value, done } = await reader.read();
            if (done) controller.close();
            else controller.enqueue(value.subarray(0, Math.min(value.length, 1000)));
          },
        });
        return { body } as unknown as R2ObjectBody;
      };
    },
  });
}

describe("a read that fails midway", () => {
  const bucket = "faults-midway";
  beforeAll(async () => {
    await ok(`/${bucket}`, { method: "PUT" });
  });

  it("a small object (answered from one buffer) still gets its 200 and then a broken transfer, never a short body; the gateway keeps answering", async () => {
    await ok(`/${bucket}/small.bin`, { method: "PUT", body: randomBytes(200 * 1024, 60) });
    const [part] = await parts(bucket, "small.bin");
    // Three of the four data shards' nodes break off mid-stream: more than the code can spare.
    const broken = { ...baseEnv } as unknown as Record<string, unknown>;
    for (const id of part.layout.placement.slice(0, 3)) broken[id] = breakingReads(node(id));
    const request = await client.sign(`http://gateway.test/${bucket}/small.bin`);
    const ctx = createExecutionContext();
    const response = await app.fetch(request, broken as unknown as Env, ctx);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-length")).toBe(String(200 * 1024));
    await expect(response.arrayBuffer()).rejects.toThrow();
    await waitOnExecutionContext(ctx);
    const health = await app.fetch(new Request("http://gateway.test/_shardgate/health"), baseEnv, createExecutionContext());
    expect(health.status).toBe(200);
  });
});

describe("heal onto a replacement node, and drain", () => {
  const bucket = "faults-move";
  // 3 + 2 over six nodes: every part leaves one node spare to move a shard file to.
  const narrow = { SHARDGATE_DATA_SHARDS: "3", SHARDGATE_PARITY_SHARDS: "2" };
  beforeAll(async () => {
    await ok(`/${bucket}`, { method: "PUT" });
  });

  interface Layout {
    parts: { shards: { index: number; node: string; health: string }[] }[];
  }

  it("a node gone from the configuration: heal rebuilds its shard file on the spare node and the manifest follows", async () => {
    const data = randomBytes(2 * MIB + 3, 31);
    await ok(`/${bucket}/moved.bin`, { method: "PUT", body: data }, narrow);
    const [before] = await parts(bucket, "moved.bin");
    const lostNode = before.layout.placement[1];
    const spare = NODES.find((n) => !before.layout.placement.includes(n)) as string;
    const remaining = { ...narrow, SHARDGATE_NODES: NODES.filter((n) => n !== lostNode).join(",") };
    const layout = (await (await ok(`/_shardgate/admin/object?bucket=${bucket}&key=moved.bin`, {}, remaining)).json()) as Layout;
    expect(layout.parts[0].shards[1]).toMatchObject({ node: lostNode, health: "node-unconfigured" });

    const report = (await (await ok(`/_shardgate/admin/heal?bucket=${bucket}`, { method: "POST" }, remaining)).json()) as {
      shardsRebuilt: number;
      shardsMoved: number;
      shardsFailed: number;
    };
    expect(report).toMatchObject({ shardsRebuilt: 1, shardsMoved: 1, shardsFailed: 0 });
    const [after] = await parts(bucket, "moved.bin");
    expect(after.layout.placement[1]).toBe(spare);
    expect(after.layout.placement.filter((_n, i) => i !== 1)).toEqual(before.layout.placement.filter((_n, i) => i !== 1));
    const healed = (await (await ok(`/_shardgate/admin/object?bucket=${bucket}&key=moved.bin`, {}, remaining)).json()) as Layout;
    expect(healed.parts[0].shards.every((s) => s.health === "ok")).toBe(true);
    expectSameBytes(new Uint8Array(await (await ok(`/${bucket}/moved.bin`, {}, remaining)).arrayBuffer()), data);
  }, 30_000);

  it("drain moves every shard file off a node in resumable batches; writes avoid a draining node", async () => {
    const objects = await Promise.all([0, 1, 2].map(async (i) => [i, randomBytes(MIB + 1000 * i, 40 + i)] as const));
    for (const [i, data] of objects) await ok(`/${bucket}/drain/${i}.bin`, { method: "PUT", body: data }, narrow);
    const target = "NODE_3";
    const draining = { ...narrow, SHARDGATE_DRAINING_NODES: target };
    const onTarget = async () => {
      let n = 0;
      for (const [i] of objects) n += (await parts(bucket, `drain/${i}.bin`))[0].layout.placement.filter((p) => p === target).length;
      return n;
    };
    const expected = (await onTarget()) + (await parts(bucket, "moved.bin"))[0].layout.placement.filter((p) => p === target).length;
    let moved = 0;
    type Cursor = { bucket: string; startAfter: string } | null;
    let next: Cursor = null;
    let calls = 0;
    do {
      const q: string = next ? `&bucket=${next.bucket}&start-after=${encodeURIComponent(next.startAfter)}` : "";
      const report = (await (await ok(`/_shardgate/admin/nodes/${target}/drain?max-objects=2${q}`, { method: "POST" }, draining)).json()) as {
        shardsMoved: number;
        objectsFailed: { bucket: string; key: string; error: string }[];
        next: Cursor;
      };
      // Other tests' 4 + 2 objects use all six nodes: theirs have nowhere to go, and are reported.
      for (const failed of report.objectsFailed) expect(failed).toMatchObject({ error: "1 shard files could not be rebuilt (no node took them)" });
      expect(report.objectsFailed.filter((f) => f.bucket === bucket)).toEqual([]);
      moved += report.shardsMoved;
      next = report.next;
      calls += 1;
    } while (next !== null && calls < 50);
    expect(calls).toBeGreaterThan(1);
    // Only a node listed as draining is drained (new writes would land on it otherwise).
    expect((await call(`/_shardgate/admin/nodes/NODE_2/drain`, { method: "POST" }, draining)).status).toBe(409);
    expect(moved).toBe(expected);
    expect(await onTarget()).toBe(0);
    for (const [i, data] of objects) expectSameBytes(new Uint8Array(await (await ok(`/${bucket}/drain/${i}.bin`, {}, draining)).arrayBuffer()), data);
    // New writes never land on the draining node.
    for (let i = 0; i < 5; i++) await ok(`/${bucket}/drain/new-${i}.bin`, { method: "PUT", body: randomBytes(MIB, 50 + i) }, draining);
    for (let i = 0; i < 5; i++) expect((await parts(bucket, `drain/new-${i}.bin`))[0].layout.placement).not.toContain(target);
  }, 60_000);
});
