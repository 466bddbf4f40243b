// Attacks run while the gateway is probed: GET /_shardgate/health is sent again and again for as
// long as the attack lasts, and each probe must answer 200. One workerd thread serves every
// request, so an attack that stalls the thread shows as a probe that took as long as the stall.
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { METRICS_TOKEN } from "../shared/credentials";
import { GATEWAY } from "./signed";

/**
 * How long a probe may take. Liveness, not speed: generous, so a loaded 2-core CI does not make it
 * flaky (probes take a few ms here); a stalled thread takes seconds to minutes.
 */
export const PROBE_LIMIT_MS = 2_000;

export interface Probed<T> {
  result: T;
  probes: number;
  /** The slowest probe's time (ms). */
  slowestMs: number;
}

/** Runs `attack` while probing health; fails unless every probe answers 200 within PROBE_LIMIT_MS. */
export async function whileProbing<T>(attack: () => Promise<T>): Promise<Probed<T>> {
  let done = false;
  const running = attack().finally(() => {
    done = true;
  });
  let probes = 0;
  let slowestMs = 0;
  // At least one probe is sent while the attack is in flight, and one after it.
  do {
    const started = performance.now();
    const res = await exports.default.fetch(`${GATEWAY}/_shardgate/health`);
    const ms = performance.now() - started;
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    probes++;
    slowestMs = Math.max(slowestMs, ms);
    await new Promise((resolve) => setTimeout(resolve, 2));
  } while (!done);
  const result = await running;
  expect(slowestMs, `a health probe took ${Math.round(slowestMs)} ms during the attack`).toBeLessThan(PROBE_LIMIT_MS);
  return { result, probes, slowestMs };
}

export const errorCode = (xml: string): string | undefined => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];

/** A body of `total` bytes made as it is read, counting what was pulled: a reader that stops at a bound pulls little of it. */
export function countedBody(total: number, piece = 64 * 1024): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  let pulled = 0;
  const chunk = new Uint8Array(piece).fill(0x61);
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled >= total) return controller.close();
      const n = Math.min(piece, total - pulled);
      pulled += n;
      controller.enqueue(chunk.slice(0, n));
    },
  });
  return { body, pulled: () => pulled };
}

/** The gateway's counters from GET /_shardgate/metrics (which flushes this isolate's first): series → value. */
export async function scrapeMetrics(): Promise<Map<string, number>> {
  const res = await exports.default.fetch(`${GATEWAY}/_shardgate/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(res.status).toBe(200);
  const series = new Map<string, number>();
  for (const line of (await res.text()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    series.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return series;
}

/** Sum of every series of `name` whose labels include all of `labels`. */
export function metricTotal(m: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [series, value] of m) {
    if (series !== name && !series.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}
