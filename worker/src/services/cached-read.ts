// Reads through the block cache (storage/block-cache.ts): a part's stored bytes from the cache when
// every segment a read touches is there, else from the nodes, verified, with the touched segments
// filled: kept as the read passes them, or (a range's ends) read again off the request's path.
import type { GatewayConfig } from "../config";
import type { Core, ManifestPart } from "../shared/core-api";
import { fromBase64 } from "../shared/bytes";
import { openPartSource, type RangeSource, type ReadEvents } from "../shared/read-part";
import {
  blockCacheOn,
  type Cached,
  cachedEntries,
  FILL_SEGMENTS_PER_REQUEST,
  countLookup,
  fillSegment,
  letGo,
  LOOKUP_SEGMENTS_PER_READ,
  reserveFills,
  SEGMENT_BYTES,
  type SegmentSpan,
  segmentCount,
} from "../storage/block-cache";

interface ReadContext {
  config: Pick<GatewayConfig, "nodes" | "readStallMs">;
  core: Core;
}

/** How one GET uses the cache. */
export interface CacheUse {
  /** Where its fills and pipes run (ctx.waitUntil). */
  later(work: Promise<unknown>): void;
  /** Segments it may still look up, and fill (over all its parts). */
  lookups: number;
  fills: number;
  /** Keys its lookups found (a fill skips them). */
  present: Set<string>;
  /** Whether every part it looked up was there (undefined: it looked nothing up). */
  hit?: boolean;
}

/** A GET's use of the cache: at most LOOKUP_SEGMENTS_PER_READ lookups and FILL_SEGMENTS_PER_REQUEST fills. */
export function cacheUse(later: (work: Promise<unknown>) => void): CacheUse {
  return { later, lookups: LOOKUP_SEGMENTS_PER_READ, fills: FILL_SEGMENTS_PER_REQUEST, present: new Set() };
}

/**
 * Takes `count` lookups from the GET's budget; false when they do not fit (a read that could
 * never be looked up whole is not filled either: a repeat of it would miss again).
 */
function budget(use: CacheUse, count: number): boolean {
  if (count > use.lookups) {
    use.lookups = 0;
    use.fills = 0;
    return false;
  }
  use.lookups -= count;
  return true;
}

/** Records one read's lookup on the GET and in the metrics. */
function looked(use: CacheUse, hit: boolean, bytes: number): void {
  use.hit = (use.hit ?? true) && hit;
  countLookup(hit, bytes);
}

/** A part and where its bytes sit in the object (objects.ts partOffsets). */
interface PartAt {
  part: ManifestPart;
  offset: number;
  size: number;
}

/**
 * Bytes [start, end) of an object that is not encrypted (its parts at their offsets), when the
 * cache holds every segment they touch: bytes held in memory, or a stream of the runtime's that it
 * pipes with no JS per byte (several entries piped one after the other through `later`); else null.
 * A hit reads no node and checks no checksum: only verified bytes are ever put.
 */
export async function cachedRange(parts: readonly PartAt[], start: number, end: number, use: CacheUse): Promise<Cached | null> {
  if (!blockCacheOn() || end <= start) return null;
  const wanted = parts
    .filter(({ offset, size }) => offset < end && offset + size > start)
    .map(({ part, offset, size }) => ({ part, from: Math.max(start, offset) - offset, to: Math.min(end, offset + size) - offset }));
  const segments = wanted.reduce((n, w) => n + segmentCount(w.part, w.from, w.to), 0);
  // Nothing but inline parts (their bytes are in the manifest), or more than a GET may look up.
  if (segments === 0 || !budget(use, segments)) return null;
  const found = await Promise.all(
    wanted.map(({ part, from, to }) => {
      if (part.layout.type === "inline") return [fromBase64(part.layout.data).subarray(from, to)];
      return cachedEntries(part, from, to, use.present);
    }),
  );
  looked(
    use,
    found.every((f) => f !== null),
    end - start,
  );
  if (found.some((f) => f === null)) {
    for (const pieces of found) letGo(pieces ?? []);
    return null;
  }
  const pieces = found.flatMap((f) => f ?? []);
  if (pieces.length === 1) return pieces[0] as Cached;
  const streams = pieces.map((p) => (p instanceof ReadableStream ? p : (new Response(p).body as ReadableStream<Uint8Array>)));
  // Several entries: piped one after the other into one fixed-length stream, natively.
  const out = new FixedLengthStream(end - start);
  use.later(
    (async () => {
      for (const [i, s] of streams.entries()) await s.pipeTo(out.writable, { preventClose: i < streams.length - 1 });
    })().catch((e: unknown) => {
      for (const s of streams) void s.cancel().catch(() => {});
      void out.writable.abort(e).catch(() => {});
    }),
  );
  return out.readable;
}

/**
 * A part's stored bytes [from, to): from the cache when `lookup` and every touched segment is
 * there, else from the nodes (verified). Then the touched segments are filled through `use` (none
 * without it): those the read covers whole are kept as it passes them (no second read), the others
 * (at the ends of a range) read again, verified, once the read has delivered everything.
 */
export async function storedSource(
  ctx: ReadContext,
  part: ManifestPart,
  from: number,
  to: number,
  events: ReadEvents,
  lookup: boolean,
  use: CacheUse | null,
): Promise<RangeSource> {
  if (use && lookup && blockCacheOn() && budget(use, segmentCount(part, from, to))) {
    const pieces = await cachedEntries(part, from, to, use.present);
    looked(use, pieces !== null, to - from);
    if (pieces) return piecesSource(pieces);
  }
  const source = await openPartSource(ctx.config, ctx.core, part, from, to, events);
  const spans = use ? reserveFills(part, from, to, use.fills, use.present) : [];
  if (!use || spans.length === 0) return source;
  use.fills -= spans.length;
  return keeping(ctx, part, source, from, spans, use);
}

/** Fills segments a read touched only in part: each read again whole from the nodes, verified. */
async function fillEnds(ctx: ReadContext, part: ManifestPart, spans: SegmentSpan[]): Promise<void> {
  for (const span of spans) {
    const base = span.index * SEGMENT_BYTES;
    await fillSegment(span, await readVerified(ctx, part, base, base + span.length).catch(() => null));
  }
}

/**
 * `source` (a part's stored bytes from `from` on), filling the reserved `reserved` segments: a copy
 * of each one the read covers whole is kept as the read passes it, and put once complete; the
 * others (a range's ends) are read again whole once the read has delivered all its bytes. Whatever
 * is not filled when the read stops or fails is let go.
 */
function keeping(ctx: ReadContext, part: ManifestPart, source: RangeSource, from: number, reserved: SegmentSpan[], use: CacheUse): RangeSource {
  const spans = reserved.filter((s) => s.from === 0 && s.to === s.length);
  let ends = reserved.filter((s) => !spans.includes(s));
  let at = from;
  let next = 0;
  let kept: Uint8Array | null = null;
  const release = () => {
    for (const span of [...spans.slice(next), ...ends]) void fillSegment(span, null);
    next = spans.length;
    ends = [];
    kept = null;
  };
  const finish = () => {
    if (ends.length > 0) use.later(fillEnds(ctx, part, ends));
    ends = [];
    release();
  };
  const keep = (piece: Uint8Array) => {
    let done = 0;
    while (done < piece.length && next < spans.length) {
      const span = spans[next] as SegmentSpan;
      const base = span.index * SEGMENT_BYTES;
      const pos = at + done;
      if (pos >= base + span.length) {
        // Passed without being kept whole (it began before this read's bytes reached it): let go.
        void fillSegment(span, kept?.length === span.length ? kept : null);
        kept = null;
        next += 1;
        continue;
      }
      if (pos < base) {
        done = Math.min(piece.length, base - at);
        continue;
      }
      if (pos === base) kept = new Uint8Array(span.length);
      if (!kept) {
        done = Math.min(piece.length, base + span.length - at);
        continue;
      }
      const n = Math.min(piece.length - done, base + span.length - pos);
      kept.set(piece.subarray(done, done + n), pos - base);
      done += n;
      if (pos + n === base + span.length) {
        use.later(fillSegment(span, kept));
        kept = null;
        next += 1;
      }
    }
    at += piece.length;
  };
  return {
    async next(give, max) {
      try {
        const out = await source.next((piece) => {
          keep(piece);
          return give(piece);
        }, max);
        if (out === null) finish();
        return out;
      } catch (e) {
        release();
        throw e;
      }
    },
    close() {
      release();
      source.close();
    },
  };
}

/** Stored bytes [from, to) of a part read whole from the nodes, verified (a cache fill's read). */
async function readVerified(ctx: ReadContext, part: ManifestPart, from: number, to: number): Promise<Uint8Array | null> {
  const source = await openPartSource(ctx.config, ctx.core, part, from, to);
  const out = new Uint8Array(to - from);
  let at = 0;
  try {
    for (;;) {
      const n = await source.next((piece) => {
        out.set(piece.subarray(0, out.length - at), at);
        return { n: piece.length };
      });
      if (!n) break;
      at += n.n;
    }
  } finally {
    source.close();
  }
  return at === out.length ? out : null;
}

/** Cached pieces read one after the other as a RangeSource (an encrypted object's cached ciphertext). */
function piecesSource(pieces: Cached[]): RangeSource {
  let index = 0;
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  let rest: Uint8Array | null = null;
  return {
    async next(use, max) {
      while (!rest) {
        if (!reader) {
          const piece = pieces[index++];
          if (!piece) return null;
          if (!(piece instanceof ReadableStream)) {
            if (piece.length > 0) rest = piece;
            continue;
          }
          reader = piece.getReader();
        }
        const { value, done } = await reader.read();
        if (done) reader = null;
        else if (value.length > 0) rest = value;
      }
      const piece: Uint8Array = max !== undefined && rest.length > max ? rest.subarray(0, max) : rest;
      rest = piece.length < rest.length ? rest.subarray(piece.length) : null;
      return use(piece);
    },
    close() {
      void reader?.cancel().catch(() => {});
      for (const p of pieces.slice(index)) if (p instanceof ReadableStream) void p.cancel().catch(() => {});
    },
  };
}
