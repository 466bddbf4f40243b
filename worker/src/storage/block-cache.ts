// The block cache (docs/operations.md, "The block cache"): verified bytes of stored parts, kept so
// that a repeated read needs no node and no checksum.
//
// What is cached is what the nodes hold, decoded: a part's stored bytes (its ciphertext, when the
// object is encrypted), in segments of SEGMENT_BYTES, keyed by the part's storage id and the
// segment's index. A storage id names one write of one part and is never reused, so an entry can
// never hold other bytes than the manifest that names it: an overwrite or a delete makes a manifest
// with other storage ids, a heal rewrites the same bytes. Entries are only ever put from a read
// that verified every chunk; nothing is found by an object's name, and every lookup comes after
// authentication, authorization and the manifest's lookup (api/s3/get.ts).
//
// The store is the runtime's Cache API (caches.default): on Cloudflare the colo's cache; on plain
// workerd (`npm start`) a directory of the data directory, bounded, least recently used out first
// (scripts/workerd/block-cache.js, through workerd's cacheApiOutbound); in tests miniflare's.
// Entries expire after MAX_AGE_S.
import type { ManifestPart } from "../shared/core-api";
import { Lru } from "../shared/bounded";
import { metrics } from "../observability/metrics";

/**
 * Bytes of a part's stored bytes per cache entry (a part smaller than that is one entry). Each entry
 * a read touches is a cache operation and, past the first, a pipe into the answer: a 64 MiB hit in
 * 4 MiB entries cost 1.45× the pass-through's CPU, in 16 MiB entries 1.31× (docs/benchmarks.md
 * "Hot reads").
 */
export const SEGMENT_BYTES = 16 * 1024 * 1024;
/** In every key: entries of another segment size (or format) are never read as this one's. */
const SEGMENT_KEY = `s${SEGMENT_BYTES}`;
/** How long an edge entry lives (s): long enough to serve, short enough that a deleted object's entries go. */
const MAX_AGE_S = 7 * 24 * 3600;
/** Segments one read looks up at most (256 MiB), over all its parts: each lookup is a cache operation, and a longer read goes to the nodes. */
export const LOOKUP_SEGMENTS_PER_READ = 16;
/** Segments one request fills at most (64 MiB), over all its parts; a read of more fills the first ones and leaves the rest to later reads. */
export const FILL_SEGMENTS_PER_REQUEST = 4;
/** A segment is filled only when the read served at least 1/FILL_SHARE of it (reserveFills). */
const FILL_SHARE = 8;
/** Bytes the fills of one isolate hold at once at most; a fill past it waits for a later read. */
const FILL_BYTES_IN_FLIGHT = 64 * 1024 * 1024;
/** Entries one deletion drops at most (the rest are never read again, and expire or are evicted). */
const FORGET_MAX = 256;
const ORIGIN = "https://block-cache.shardgate.invalid";

/** Where a part's stored bytes [start, end) lie in its segments. */
export interface SegmentSpan {
  key: string;
  index: number;
  /** Bytes of the segment wanted: [from, to) of it. */
  from: number;
  to: number;
  /** The segment's own length. */
  length: number;
}

/** The cache, as SHARDGATE_BLOCK_CACHE configures it (config.ts), or null when off. */
let store: Store | null = null;
let filling = 0;
const inFlight = new Set<string>();

/** Cached bytes: held in this isolate's memory, or a stream from the Cache API. */
export type Cached = Uint8Array | ReadableStream<Uint8Array>;

interface Store {
  /** The entry's bytes [from, to), or null on a miss. */
  match(key: string, from: number, to: number, length: number): Promise<Cached | null>;
  put(key: string, bytes: Uint8Array): Promise<void>;
  delete(key: string): Promise<void>;
}

/** Turns the cache on or off (SHARDGATE_BLOCK_CACHE, "on" or "off"). */
export function configureBlockCache(on: boolean): void {
  if (on !== (store !== null)) store = on ? new MemoryFirst(edgeStore()) : null;
}

export function blockCacheOn(): boolean {
  return store !== null;
}

/** How many segments stored bytes [start, end) of a part touch (none for an inline part). */
export function segmentCount(part: ManifestPart, start: number, end: number): number {
  return part.layout.type === "sharded" && end > start ? Math.ceil(end / SEGMENT_BYTES) - Math.floor(start / SEGMENT_BYTES) : 0;
}

/** The segments that stored bytes [start, end) of a sharded part touch. */
export function segmentsOf(storageId: string, partSize: number, start: number, end: number): SegmentSpan[] {
  const spans: SegmentSpan[] = [];
  for (let index = Math.floor(start / SEGMENT_BYTES); index * SEGMENT_BYTES < end; index++) {
    const base = index * SEGMENT_BYTES;
    const length = Math.min(SEGMENT_BYTES, partSize - base);
    spans.push({ key: `${storageId}/${SEGMENT_KEY}/${index}`, index, from: Math.max(start, base) - base, to: Math.min(end, base + length) - base, length });
  }
  return spans;
}

/**
 * The part's stored bytes [start, end), one piece per segment, when every segment is cached;
 * null (and nothing held) on any miss. The keys found go into `present` (a fill skips them).
 */
export async function cachedEntries(part: ManifestPart, start: number, end: number, present: Set<string>): Promise<Cached[] | null> {
  if (!store || part.layout.type !== "sharded" || end <= start) return null;
  const spans = segmentsOf(part.layout.storageId, part.size, start, end);
  const from = store;
  const found = await Promise.all(spans.map((s) => from.match(s.key, s.from, s.to, s.length).catch(() => null)));
  spans.forEach((s, i) => found[i] && present.add(s.key));
  if (found.every((f) => f !== null)) return found as Cached[];
  letGo(found);
  return null;
}

/** Cancels what a lookup found but will not use. */
export function letGo(pieces: readonly (Cached | null)[]): void {
  for (const piece of pieces) if (piece instanceof ReadableStream) void piece.cancel().catch(() => {});
}

/** Counts one read's lookup: a hit (with the bytes it served) or a miss. */
export function countLookup(hit: boolean, bytes: number): void {
  metrics.add("shardgate_block_cache_lookups_total", 1, { result: hit ? "hit" : "miss" });
  if (hit) metrics.add("shardgate_block_cache_bytes_served_total", bytes);
}

/**
 * Reserves for filling at most `max` segments of stored bytes [start, end) of `part`: none in
 * `present` (cached already), none that another read of this isolate is filling, none past
 * FILL_BYTES_IN_FLIGHT. A segment the read covers only in part is filled by reading it whole again,
 * so it is reserved only when the read served at least 1/FILL_SHARE of it (or a 4 KiB range would
 * read a thousand times what it served) and this isolate saw a read of it before (a range read once
 * costs no second read). Every span returned must be given to `fillSegment`.
 */
export function reserveFills(part: ManifestPart, start: number, end: number, max: number, present: ReadonlySet<string>): SegmentSpan[] {
  if (!store || part.layout.type !== "sharded" || end <= start || max <= 0) return [];
  const spans: SegmentSpan[] = [];
  for (const span of segmentsOf(part.layout.storageId, part.size, start, end)) {
    if (spans.length === max) break;
    if (present.has(span.key) || inFlight.has(span.key) || filling + span.length > FILL_BYTES_IN_FLIGHT) continue;
    if (span.from !== 0 || span.to !== span.length) {
      if ((span.to - span.from) * FILL_SHARE < span.length || !seenBefore(span.key)) continue;
    }
    inFlight.add(span.key);
    filling += span.length;
    spans.push(span);
  }
  return spans;
}

/** Ends a reserved fill: puts the segment's verified bytes (null: none, the read did not get them all). */
export async function fillSegment(span: SegmentSpan, bytes: Uint8Array | null): Promise<void> {
  try {
    if (store && bytes?.length === span.length) {
      await store.put(span.key, bytes);
      metrics.add("shardgate_block_cache_fills_total", 1);
    }
  } catch {
    // A fill that fails leaves the cache as it was: a later read tries again.
  } finally {
    inFlight.delete(span.key);
    filling -= span.length;
  }
}

/** Segments read in part once (the 4096 most recent, in insertion order): a second such read fills the segment. */
const seenOnce = new Lru<string, true>({ entries: 4096 });

/** Whether a partial read of `key` happened before in this isolate (and remembers this one if not). */
function seenBefore(key: string): boolean {
  if (seenOnce.delete(key)) return true;
  seenOnce.set(key, true);
  return false;
}

/** Drops the entries of parts whose shard files are being deleted (best effort: edge entries expire anyway). */
export async function forgetParts(parts: readonly ManifestPart[]): Promise<void> {
  if (!store) return;
  const from = store;
  const keys = parts
    .flatMap((p) => (p.layout.type === "sharded" ? segmentsOf(p.layout.storageId, p.size, 0, p.size).map((s) => s.key) : []))
    .slice(0, FORGET_MAX);
  await Promise.allSettled(keys.map((k) => from.delete(k)));
}

function edgeStore(): Store {
  const request = (key: string, range?: string) => new Request(`${ORIGIN}/${key}`, range ? { headers: { range } } : undefined);
  return {
    async match(key, from, to, length) {
      const whole = from === 0 && to === length;
      const res = await caches.default.match(request(key, whole ? undefined : `bytes=${from}-${to - 1}`));
      if (!res?.body) return null;
      // A cache that answers a range with the whole entry (200) is treated as a miss: never bytes other than those asked for.
      const exact = whole ? res.status === 200 : res.status === 206 && res.headers.get("content-range") === `bytes ${from}-${to - 1}/${length}`;
      if (!exact || Number(res.headers.get("content-length")) !== to - from) {
        await res.body.cancel();
        return null;
      }
      return res.body;
    },
    put: (key, bytes) =>
      caches.default.put(
        request(key),
        new Response(bytes, { headers: { "cache-control": `public, max-age=${MAX_AGE_S}, immutable`, "content-length": String(bytes.length) } }),
      ),
    delete: async (key) => {
      await caches.default.delete(request(key));
    },
  };
}

/** Entries this small are kept in the isolate's memory too (a hit then costs no cache operation). */
const MEMORY_ENTRY_BYTES = 1024 * 1024;
/** Bytes of such entries the isolate keeps at most, the least recently used out first. */
const MEMORY_BYTES = 32 * 1024 * 1024;
/** Bytes of Cache API hits being read into memory at once; past it, hits are served as streams. */
const PROMOTING_BYTES = 8 * 1024 * 1024;

/**
 * Small entries in this isolate's memory in front of the Cache API: a hit on them costs no cache
 * operation (about half of a 1 MiB hit's CPU otherwise: docs/benchmarks.md "Hot reads"). Filled
 * by puts and by whole-entry hits of the Cache API; the least recently put or hit out first.
 */
class MemoryFirst implements Store {
  private readonly entries = new Lru<string, Uint8Array>({ entries: 8192, weight: MEMORY_BYTES });
  /** Bytes of entries being read from the Cache API into memory at once (at most PROMOTING_BYTES). */
  private promoting = 0;

  constructor(private readonly next: Store) {}

  async match(key: string, from: number, to: number, length: number): Promise<Cached | null> {
    const held = this.entries.get(key);
    if (held?.length === length) return held.subarray(from, to);
    if (length > MEMORY_ENTRY_BYTES || from !== 0 || to !== length || this.promoting + length > PROMOTING_BYTES) return this.next.match(key, from, to, length);
    this.promoting += length;
    try {
      const body = await this.next.match(key, 0, length, length);
      if (!(body instanceof ReadableStream)) return body;
      const entry = new Response(body);
      const bytes = new Uint8Array(await entry.arrayBuffer());
      if (bytes.length !== length) return null;
      this.entries.set(key, bytes, length);
      return bytes;
    } finally {
      this.promoting -= length;
    }
  }

  put(key: string, bytes: Uint8Array): Promise<void> {
    if (bytes.length <= MEMORY_ENTRY_BYTES) this.entries.set(key, bytes, bytes.length);
    return this.next.put(key, bytes);
  }

  delete(key: string): Promise<void> {
    this.entries.delete(key);
    return this.next.delete(key);
  }
}
