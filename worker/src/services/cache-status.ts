// The block cache as operators see it: whether it is on, its hits and misses so far (the metrics'
// totals), and what `npm start`'s store holds (scripts/workerd/block-cache.js, GET /_stats through
// the BLOCK_CACHE binding; Cloudflare's cache does not say).
import type { Env } from "../config";
import { metricsStore } from "../meta/stubs";
import { metrics } from "../observability/metrics";
import { blockCacheOn } from "../storage/block-cache";

export interface CacheStore {
  bytes: number;
  entries: number;
  capacity: number;
  evictions: number;
}

/** What the block cache's store holds (npm start's, scripts/workerd/block-cache.js); null elsewhere. */
export async function cacheStore(env: Env): Promise<CacheStore | null> {
  if (!env.BLOCK_CACHE) return null;
  try {
    const counts = await env.BLOCK_CACHE.fetch("http://block-cache/_stats");
    const stats = (await counts.json()) as Record<string, unknown>;
    return { bytes: Number(stats.bytes), entries: Number(stats.entries), capacity: Number(stats.capacity), evictions: Number(stats.evictions) };
  } catch {
    return null;
  }
}

/** The block cache as the console's Nodes page shows it: on or off, hits and misses so far, what its store holds. */
export async function blockCacheStatus(env: Env): Promise<{ on: boolean; hits: number; misses: number; bytesServed: number; store: CacheStore | null }> {
  if (!blockCacheOn()) return { on: false, hits: 0, misses: 0, bytesServed: 0, store: null };
  const sink = metricsStore(env);
  await metrics.flush(sink);
  const [totals, store] = await Promise.all([sink.snapshot(), cacheStore(env)]);
  const sum = (prefix: string) => Object.entries(totals).reduce((n, [k, v]) => (k.startsWith(prefix) ? n + v : n), 0);
  return {
    on: true,
    hits: sum('shardgate_block_cache_lookups_total{result="hit"}'),
    misses: sum('shardgate_block_cache_lookups_total{result="miss"}'),
    bytesServed: sum("shardgate_block_cache_bytes_served_total"),
    store,
  };
}
