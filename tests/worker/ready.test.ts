// GET /_shardgate/ready inside workerd: 503 naming what is missing (metadata, nodes, an invalid
// configuration) and 200 once the gateway can serve; no credentials needed and nothing secret in
// its answer; hostile polling costs one check per cache period, whatever the number of requests.
// Requests go straight into the Worker's fetch handler with an env of the test's choosing.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Env } from "../../worker/src/config";
import app from "../../worker/src/index";
import { READY_CACHE_MS, readinessChecks } from "../../worker/src/services/readiness";
import { nodeHealth, resetNodeHealth } from "../../worker/src/shared/node-health";

vi.setConfig({ testTimeout: 30_000 });

const baseEnv = env as unknown as Env;

/** A fresh env object: a configuration of its own, so a check cached for another test never answers. */
const freshEnv = (vars: Partial<Env> = {}) => ({ ...baseEnv, ...vars }) as Env;

async function ready(workerEnv: Env, path = "/_shardgate/ready"): Promise<{ status: number; body: { status: string; missing?: string[] }; text: string }> {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(`http://gateway.test${path}`), workerEnv, ctx);
  const text = await res.text();
  await waitOnExecutionContext(ctx);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(res.headers.get("cache-control")).toBe("no-store");
  return { status: res.status, body: JSON.parse(text), text };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(() => resetNodeHealth());

describe("GET /_shardgate/ready", () => {
  it("answers 200 without credentials when metadata answers and the nodes are reachable", async () => {
    const workerEnv = freshEnv();
    const res = await ready(workerEnv);
    expect(res).toMatchObject({ status: 200, body: { status: "ready" } });
    // HEAD too (what some load balancers send): the same status, no body.
    const ctx = createExecutionContext();
    const head = await app.fetch(new Request("http://gateway.test/_shardgate/ready", { method: "HEAD" }), workerEnv, ctx);
    await waitOnExecutionContext(ctx);
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("is 503 naming the nodes while too few answer (open breakers), then 200 once they answer again", async () => {
    const workerEnv = freshEnv();
    expect((await ready(workerEnv)).status).toBe(200); // builds the configuration and its guarded nodes
    for (const id of ["NODE_0", "NODE_1"]) for (let i = 0; i < 3; i++) nodeHealth(id).failure(new Error("test: node down"));
    await sleep(READY_CACHE_MS + 100); // the 200 was kept this long
    const down = await ready(workerEnv);
    // 4 + 2 over six nodes: 4 answer, k + 1 = 5 needed.
    expect(down).toMatchObject({ status: 503, body: { status: "not ready", missing: ["nodes: 4 of 6 reachable, 5 needed"] } });
    expect(down.text).not.toMatch(/NODE_|test: node down/);
    for (const id of ["NODE_0", "NODE_1"]) nodeHealth(id).success();
    expect((await ready(workerEnv)).status).toBe(503); // still the kept answer
    await sleep(READY_CACHE_MS + 100);
    expect(await ready(workerEnv)).toMatchObject({ status: 200, body: { status: "ready" } });
  });

  it("probes nodes for real: S3 nodes nobody listens for are not reachable, and their endpoint and keys are never shown", async () => {
    const s3Nodes = {
      DEAD_0: { endpoint: "http://127.0.0.1:9/", bucket: "b", accessKeyId: "AKIDEAD0", secretAccessKey: "dead-secret-0" },
      DEAD_1: { endpoint: "http://127.0.0.1:9/", bucket: "b", accessKeyId: "AKIDEAD1", secretAccessKey: "dead-secret-1" },
      DEAD_2: { endpoint: "http://127.0.0.1:9/", bucket: "b", accessKeyId: "AKIDEAD2", secretAccessKey: "dead-secret-2" },
    };
    const workerEnv = freshEnv({ SHARDGATE_NODES: "NODE_0,NODE_1,NODE_2,DEAD_0,DEAD_1,DEAD_2", SHARDGATE_S3_NODES: JSON.stringify(s3Nodes) });
    const started = Date.now();
    const res = await ready(workerEnv);
    expect(Date.now() - started).toBeLessThan(5_000); // each probe is timed out
    expect(res).toMatchObject({ status: 503, body: { status: "not ready", missing: ["nodes: 3 of 6 reachable, 5 needed"] } });
    expect(res.text).not.toMatch(/127\.0\.0\.1|AKIDEAD|dead-secret|DEAD_/);
  });

  it("is 503 naming metadata when the registry fails or never answers (timed out)", async () => {
    const failing = {
      idFromName: (name: string) => name,
      get: () => ({ get: () => Promise.reject(new Error("registry down: internal detail")) }),
    };
    const res = await ready(freshEnv({ BUCKET_REGISTRY: failing as unknown as Env["BUCKET_REGISTRY"] }));
    expect(res).toMatchObject({ status: 503, body: { status: "not ready", missing: ["metadata"] } });
    expect(res.text).not.toContain("internal detail");

    const hanging = { idFromName: (name: string) => name, get: () => ({ get: () => new Promise(() => {}) }) };
    const started = Date.now();
    const slow = await ready(freshEnv({ BUCKET_REGISTRY: hanging as unknown as Env["BUCKET_REGISTRY"] }));
    expect(slow).toMatchObject({ status: 503, body: { missing: ["metadata"] } });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("is 503 naming the variables of an invalid configuration, never their values", async () => {
    const res = await ready(freshEnv({ SHARDGATE_DATA_SHARDS: "not-a-number-secret" }));
    expect(res.status).toBe(503);
    expect(res.body.status).toBe("not ready");
    expect(res.body.missing?.join()).toContain("SHARDGATE_DATA_SHARDS");
    expect(res.text).not.toContain("not-a-number-secret");

    const s3 = await ready(freshEnv({ SHARDGATE_NODES: "NODE_0,X", SHARDGATE_S3_NODES: '{"X": {"endpoint": "https://user:pw-secret@node.example"' }));
    expect(s3.status).toBe(503);
    expect(s3.text).not.toMatch(/pw-secret|node\.example/);

    // Polled hard, an invalid configuration answers at once, with no check made (nothing to probe).
    const before = readinessChecks();
    const bad = freshEnv({ SHARDGATE_PARITY_SHARDS: "-1" });
    const answers = await Promise.all(Array.from({ length: 200 }, () => ready(bad)));
    expect(answers.every((a) => a.status === 503 && a.body.missing?.join() === "configuration: invalid SHARDGATE_PARITY_SHARDS")).toBe(true);
    expect(readinessChecks()).toBe(before);
  });

  it("hostile polling: hundreds of parallel and back-to-back requests make one check (one probe per node)", async () => {
    const workerEnv = freshEnv();
    const before = readinessChecks();
    const answers = await Promise.all(Array.from({ length: 300 }, () => ready(workerEnv)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    for (let i = 0; i < 100; i++) expect((await ready(workerEnv, `/_shardgate/ready?x=${i}`)).status).toBe(200);
    // The first check, and at most one more if the back-to-back polling outlasted the cache.
    expect(readinessChecks() - before).toBeGreaterThanOrEqual(1);
    expect(readinessChecks() - before).toBeLessThanOrEqual(2);
  });

  it("hostile polling while nodes hang: requests during the first check wait for it, not start their own", async () => {
    const s3Nodes = { DEAD_0: { endpoint: "http://10.255.255.1/", bucket: "b", accessKeyId: "a", secretAccessKey: "s" } };
    const workerEnv = freshEnv({ SHARDGATE_NODES: "NODE_0,NODE_1,NODE_2,NODE_3,NODE_4,DEAD_0", SHARDGATE_S3_NODES: JSON.stringify(s3Nodes) });
    const before = readinessChecks();
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 100 }, () => ready(workerEnv)));
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(readinessChecks() - before).toBe(1);
    // Whatever the unroutable node did (timed out or refused), five R2 nodes answer: k + 1.
    expect(new Set(answers.map((a) => a.status))).toEqual(new Set([200]));
  });
});
