// Issue #29's policy attack against the production runtime (plain workerd, as `npm start` serves
// it, one thread for every request): a key that owns a bucket sets a policy with as many wildcards
// as it may, then anonymous GETs of the longest keys and a DeleteObjects of 1,000 such keys are
// evaluated against it, while a health probe runs beside them. The probe's latency is measured with
// the real clock (inside workerd's test pool the clock stands still while code runs).
import { createHash } from "node:crypto";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CREDENTIALS, Gateway } from "./gateway";

const gateway = new Gateway();
const root = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
const b = "policy-attack";
let attacker: AwsClient;

beforeAll(async () => {
  await gateway.start();
  const made = await root.fetch(`${gateway.base}/_shardgate/admin/keys`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name: "attacker", createBucket: true }),
  });
  expect(made.status).toBe(201);
  const key = (await made.json()) as { id: string; secret: string };
  attacker = new AwsClient({ accessKeyId: key.id, secretAccessKey: key.secret, service: "s3", region: "us-east-1", retries: 0 });
  expect((await attacker.fetch(`${gateway.base}/${b}`, { method: "PUT" })).status).toBe(200);
}, 120_000);
afterAll(() => gateway.stop());

const doc = (...statements: unknown[]) => JSON.stringify({ Version: "2012-10-17", Statement: statements });

/** Probes the health check back to back until `done` settles: each probe's latency (ms). */
async function probeWhile(done: Promise<unknown>): Promise<number[]> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => {});
  const latencies: number[] = [];
  while (!finished) {
    const t = performance.now();
    const res = await fetch(`${gateway.base}/_shardgate/health`);
    await res.arrayBuffer();
    expect(res.status).toBe(200);
    latencies.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 5));
  }
  return latencies;
}

const summary = (ms: number[]) => ({
  probes: ms.length,
  max: Math.round(Math.max(0, ...ms)),
  median: Math.round([...ms].sort((x, y) => x - y)[ms.length >> 1] ?? 0),
});

describe("a bucket owner's pathological policy", () => {
  it("anonymous GETs of long keys against the attack's wildcards answer at once; the health check keeps answering", async () => {
    const policy = doc(
      { Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${b}/*` },
      { Effect: "Deny", Principal: "*", Action: "s3:GetObject", Resource: [`arn:aws:s3:::${b}/*a*a*a*a*a*a*a*a*a*!`, `arn:aws:s3:::${b}/*a*a*a*a*a*a*a*a*a*`] },
    );
    const put = await attacker.fetch(`${gateway.base}/${b}?policy`, { method: "PUT", body: policy });
    expect(put.status, await put.text()).toBe(204);
    const started = performance.now();
    const attack = Promise.all(
      Array.from({ length: 20 }, async (_, i) => {
        const res = await fetch(`${gateway.base}/${b}/${"a".repeat(i % 2 ? 120 : 1024)}`);
        await res.arrayBuffer();
        return res.status;
      }),
    );
    const latencies = await probeWhile(attack);
    const statuses = await attack;
    const took = performance.now() - started;
    console.log(
      JSON.stringify({ attack: "20 anonymous GETs, 10-wildcard patterns, 120- and 1,024-byte keys", ms: Math.round(took), health: summary(latencies) }),
    );
    expect(statuses.every((s) => s === 403)).toBe(true); // the second Deny pattern matches any key of 9+ a's
    expect(latencies.length).toBeGreaterThan(0);
    // Liveness bounds, generous for a loaded 2-core machine (the old RegExp never answered).
    expect(took).toBeLessThan(10_000);
    expect(Math.max(...latencies)).toBeLessThan(1_000);
  }, 60_000);

  it("a DeleteObjects of 1,000 keys of 1,024 bytes against the costliest policy the limits allow: evaluated, in slices, while the health check answers", async () => {
    // 20 scans (the limit), each over a whole key, then cheap prefixes up to the 20 KiB limit.
    const costly = Array.from({ length: 20 }, (_, i) => `arn:aws:s3:::${b}/*${"a".repeat(5)}${String.fromCharCode(98 + (i % 20))}*`);
    const statements: { Effect: string; Principal: string; Action: string; Resource: string[] }[] = [
      { Effect: "Deny", Principal: "*", Action: "s3:DeleteObject", Resource: costly },
    ];
    for (let i = 0; ; i++) {
      const next = {
        Effect: "Deny",
        Principal: "*",
        Action: "s3:DeleteObject",
        Resource: Array.from({ length: 100 }, (_, j) => `arn:aws:s3:::${b}/${"a".repeat(100)}${i}-${j}/*`),
      };
      while (next.Resource.length > 0 && doc(...statements, next).length > 20 * 1024) next.Resource.pop();
      if (next.Resource.length === 0) break;
      statements.push(next);
    }
    statements.push({ Effect: "Allow", Principal: "*", Action: "s3:DeleteObject", Resource: [`arn:aws:s3:::${b}/*`] });
    while (doc(...statements).length > 20 * 1024) statements[statements.length - 2]?.Resource.pop();
    const put = await attacker.fetch(`${gateway.base}/${b}?policy`, { method: "PUT", body: doc(...statements) });
    expect(put.status, await put.text()).toBe(204);

    const keys = Array.from({ length: 1000 }, (_, i) => `${"a".repeat(1020)}${String(i).padStart(4, "0")}`);
    const body = `<Delete><Quiet>true</Quiet>${keys.map((k) => `<Object><Key>${k}</Key></Object>`).join("")}</Delete>`;
    const md5 = createHash("md5").update(body).digest("base64");
    const started = performance.now();
    const batch = (async () => {
      const res = await fetch(`${gateway.base}/${b}?delete`, { method: "POST", body, headers: { "content-md5": md5 } });
      return [res.status, await res.text()] as const;
    })();
    const latencies = await probeWhile(batch);
    const [status, xml] = await batch;
    const took = performance.now() - started;
    console.log(
      JSON.stringify({
        attack: "anonymous DeleteObjects, 1,000 × 1,024-byte keys, 20-scan policy of 20 KiB",
        ms: Math.round(took),
        health: summary(latencies),
      }),
    );
    expect(status, xml.slice(0, 300)).toBe(200);
    expect(xml).not.toContain("<Error>"); // allowed everywhere, no costly Deny matches: all deleted, quietly
    expect(took).toBeLessThan(20_000);
    expect(Math.max(...latencies)).toBeLessThan(1_000);
  }, 60_000);
});
