// GET /_shardgate/ready and /_shardgate/metrics on the production runtime (plain workerd,
// `npm run cluster`: 4 + 2 over six versitygw node processes): ready until too few nodes answer,
// 503 naming the count while they are killed, 200 again once they are back; hundreds of polls
// while nodes are down cost a handful of node probes; the node gauges follow.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Cluster } from "./cluster";

const c = new Cluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  await c.start(["SHARDGATE_DATA_SHARDS:4", "SHARDGATE_PARITY_SHARDS:2"]);
}, 180_000);

afterAll(() => c.stop());

async function ready(): Promise<{ status: number; body: { status: string; missing?: string[] } }> {
  const res = await fetch(`${c.info.endpoint}/_shardgate/ready`);
  return { status: res.status, body: (await res.json()) as { status: string; missing?: string[] } };
}

/** Polls /ready until it answers `status` (the answer is kept 2 s; a dead node's probe times out in 2 s). */
async function until(status: number): Promise<{ status: number; body: { status: string; missing?: string[] } }> {
  for (let i = 0; i < 60; i++) {
    const r = await ready();
    if (r.status === status) return r;
    await sleep(250);
  }
  throw new Error(`/_shardgate/ready never answered ${status}`);
}

/** The signed scrape's samples: series → value. */
async function scrape(): Promise<Map<string, number>> {
  const res = await c.admin.fetch(`${c.info.endpoint}/_shardgate/metrics`);
  expect(res.status).toBe(200);
  const out = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

const headProbes = (m: Map<string, number>) =>
  [...m].filter(([k]) => k.startsWith("shardgate_node_requests_total{") && k.includes('method="HEAD"')).reduce((s, [, v]) => s + v, 0);

describe("GET /_shardgate/ready on workerd with real nodes", () => {
  it("is 200 while k + 1 nodes answer, 503 naming the count when fewer do, 200 once they are back", async () => {
    expect(await until(200)).toMatchObject({ body: { status: "ready" } });
    const [a, b] = c.info.nodes;
    c.kill(a);
    c.kill(b);
    const down = await until(503);
    expect(down.body).toEqual({ status: "not ready", missing: ["nodes: 4 of 6 reachable, 5 needed"] });
    expect(JSON.stringify(down.body)).not.toMatch(/127\.0\.0\.1|http|node-?\d/i);

    const metrics = await scrape();
    expect(metrics.get("shardgate_ready")).toBe(0);
    const up = [...metrics].filter(([k]) => k.startsWith("shardgate_node_up{"));
    expect(up).toHaveLength(6);
    expect(up.filter(([, v]) => v === 0)).toHaveLength(2);

    // Hostile polling while two nodes are down: 400 requests, 50 at a time.
    const probesBefore = headProbes(await scrape());
    const started = Date.now();
    for (let round = 0; round < 8; round++) {
      const answers = await Promise.all(Array.from({ length: 50 }, () => ready()));
      expect(answers.every((r) => r.status === 503)).toBe(true);
    }
    const seconds = (Date.now() - started) / 1000;
    const probes = headProbes(await scrape()) - probesBefore;
    // One check (six HEADs, the dead nodes' refused or timed out) per 2 s kept, plus the scrapes' own: never one per request.
    expect(probes).toBeLessThanOrEqual(6 * (Math.ceil(seconds / 2) + 3));

    await c.restart(a);
    await c.restart(b);
    expect(await until(200)).toMatchObject({ body: { status: "ready" } });
  });
});
