// A bounded load test against the production runtime (plain workerd, loopback only): 16 requests
// in flight, a seeded mix of PUT, GET and DELETE of objects from 16 KiB to 8 MiB over a small key
// space (so reads, overwrites and deletes meet), for SHARDGATE_LOAD_SECONDS (default 60). It ends
// with no error but deliberate 503 SlowDown, every GET byte-exact against the last acknowledged
// write of its key (or a 404 after an acknowledged delete), and the server's memory bounded.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { AwsClient } from "aws4fetch";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rng } from "../shared/core-suite";
import { CREDENTIALS, Gateway } from "./gateway";

const SECONDS = Number(process.env.SHARDGATE_LOAD_SECONDS ?? 60);
const IN_FLIGHT = 16;
const KEYS = 48;
const KiB = 1024;
const MiB = 1024 * KiB;
/** Peak resident memory of all the server's processes that counts as bounded. */
const RSS_LIMIT = 1.5 * 1024 * MiB;

const gateway = new Gateway({ runtime: "workerd" });
const s3 = new AwsClient({ ...CREDENTIALS, service: "s3", region: "us-east-1", retries: 0 });
const bucket = "load-test";
const url = (key: string) => `${gateway.base}/${bucket}/${key}`;

beforeAll(async () => {
  await gateway.start();
  expect((await s3.fetch(`${gateway.base}/${bucket}`, { method: "PUT" })).status).toBe(200);
}, 120_000);
afterAll(() => gateway.dispose());

/** Resident memory (bytes) of every process in the server's process group. */
function groupRss(pgid: number): number {
  let total = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      // /proc/PID/stat: the process group is the 5th field after the parenthesized command name.
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) !== pgid) continue;
      total += Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) * KiB;
    } catch {
      // gone
    }
  }
  return total;
}

const digest = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/** `size` pseudo-random bytes from `seed` (xorshift32, every byte varies: a misplaced piece shows). */
function seededBytes(size: number, seed: number): Uint8Array {
  const words = new Uint32Array(Math.ceil(size / 4));
  let x = seed >>> 0 || 1;
  for (let i = 0; i < words.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[i] = x >>> 0;
  }
  return new Uint8Array(words.buffer, 0, size);
}

/** A 503 counts as deliberate back-pressure only with S3's SlowDown code. */
const slowDown = (status: number, body: Uint8Array) => status === 503 && Buffer.from(body).toString().includes("<Code>SlowDown</Code>");

describe("load: 16 in flight, mixed PUT/GET/DELETE, 16 KiB-8 MiB", () => {
  it(
    `stays correct and bounded for ${SECONDS} s`,
    async () => {
      const random = rng(0x5eed);
      // What each key holds: the digest of its last acknowledged write, or null once deleted.
      // A key with a write or delete in flight is not read or written by another worker.
      const state = new Map<string, string | null>();
      const busy = new Set<string>();
      const counts = { put: 0, get: 0, delete: 0, slowDown: 0, bytes: 0 };
      const errors: string[] = [];
      let peakRss = 0;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, groupRss(gateway.pid as number))), 250);
      const deadline = Date.now() + SECONDS * 1000;

      const one = async (): Promise<void> => {
        const key = `k${Math.floor(random() * KEYS)}`;
        if (busy.has(key)) return;
        busy.add(key);
        try {
          const roll = random();
          if (roll < 0.4 || !state.has(key)) {
            const size = 16 * KiB + Math.floor(random() * random() * (8 * MiB - 16 * KiB));
            const body = seededBytes(size, Math.floor(random() * 2 ** 32));
            const res = await s3.fetch(url(key), { method: "PUT", body, headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } });
            if (slowDown(res.status, new Uint8Array(await res.arrayBuffer()))) counts.slowDown++;
            else if (res.status !== 200) errors.push(`PUT ${key}: ${res.status}`);
            else {
              state.set(key, digest(body));
              counts.put++;
              counts.bytes += size;
            }
          } else if (roll < 0.85) {
            const res = await s3.fetch(url(key));
            const body = new Uint8Array(await res.arrayBuffer());
            const expected = state.get(key);
            if (slowDown(res.status, body)) counts.slowDown++;
            else if (expected === null ? res.status !== 404 : res.status !== 200 || digest(body) !== expected)
              errors.push(`GET ${key}: ${res.status}, ${body.length} bytes`);
            else {
              counts.get++;
              counts.bytes += body.length;
            }
          } else {
            const res = await s3.fetch(url(key), { method: "DELETE" });
            if (slowDown(res.status, new Uint8Array(await res.arrayBuffer()))) counts.slowDown++;
            else if (res.status !== 204) errors.push(`DELETE ${key}: ${res.status}`);
            else {
              state.set(key, null);
              counts.delete++;
            }
          }
        } catch (e) {
          errors.push(`${key}: ${String(e)}`);
        } finally {
          busy.delete(key);
        }
      };

      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (Date.now() < deadline && errors.length < 20) await one();
        }),
      );
      clearInterval(sampler);
      peakRss = Math.max(peakRss, groupRss(gateway.pid as number));
      console.log(
        `load: ${SECONDS} s, ${counts.put} PUT, ${counts.get} GET, ${counts.delete} DELETE, ${(counts.bytes / MiB).toFixed(0)} MiB moved, ` +
          `${counts.slowDown} SlowDown, ${errors.length} errors, peak server RSS ${(peakRss / MiB).toFixed(0)} MiB`,
      );
      expect(errors).toEqual([]);
      expect(counts.put + counts.get + counts.delete).toBeGreaterThan(SECONDS); // it did real work
      expect(peakRss).toBeGreaterThan(0);
      expect(peakRss).toBeLessThan(RSS_LIMIT);
      expect(gateway.running).toBe(true);
      expect(gateway.hungRequests).toEqual([]);
      // Spelled without the literal words: .ci/run counts log lines holding them, and a failure here
      // prints this line.
      expect(gateway.log).not.toMatch(/had\shung|exited \(/);
    },
    (SECONDS + 120) * 1000,
  );
});
