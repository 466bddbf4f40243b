// Reads through the block cache (storage/block-cache.ts): a part's stored bytes from the cache when
// every segment a read touches is there, else from the nodes, verified, with the touched segments
// filled off the request's path.
import type { GatewayConfig } from "../config";
import type { Core, ManifestPart } from "../shared/core-api";
import { fromBase64 } from "../shared/bytes";
import { openPartSource, type RangeSource, type ReadEvents } from "../shared/read-part";
import {
  blockCacheOn,
  type Cached,
  cachedEntries,
  FILL_SEGMENTS_PER_REQUEST,
  fillSegments,
  LOOKUP_SEGMENTS_PER_READ,
  segmentCount,
} from "../storage/block-cache";

interface ReadContext {
  config: Pick<GatewayConfig, "nodes" | "readStallMs">;
  core: Core;
}

/** How a GET uses the cache: where its fills run (ctx.waitUntil), how many segments it may still fill, whether it was served from it. */
export interface CacheUse {
  later(work: Promise<unknown>): void;
  fills: number;
  hit?: boolean;
}

/** A GET's use of the cache: fills run through `later`, at most FILL_SEGMENTS_PER_REQUEST of them. */
export function cacheUse(later: (work: Promise<unknown>) => void): CacheUse {
  return { later, fills: FILL_SEGMENTS_PER_REQUEST };
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
export async function cachedRange(parts: readonly PartAt[], start: number, end: number, later: (work: Promise<unknown>) => void): Promise<Cached | null> {
  if (!blockCacheOn() || end <= start) return null;
  const wanted = parts
    .filter(({ offset, size }) => offset < end && offset + size > start)
    .map(({ part, offset, size }) => ({ part, from: Math.max(start, offset) - offset, to: Math.min(end, offset + size) - offset }));
  if (wanted.reduce((n, w) => n + segmentCount(w.part, w.from, w.to), 0) > LOOKUP_SEGMENTS_PER_READ) return null;
  const found = await Promise.all(
    wanted.map(({ part, from, to }) => {
      if (part.layout.type === "inline") return [fromBase64(part.layout.data).subarray(from, to)];
      return cachedEntries(part, from, to);
    }),
  );
  if (found.some((f) => f === null)) {
    for (const pieces of found) for (const piece of pieces ?? []) if (piece instanceof ReadableStream) void piece.cancel();
    return null;
  }
  const pieces = found.flatMap((f) => f ?? []);
  if (pieces.length === 1) return pieces[0] as Cached;
  const streams = pieces.map((p) => (p instanceof ReadableStream ? p : (new Response(p).body as ReadableStream<Uint8Array>)));
  // Several entries: piped one after the other into one fixed-length stream, natively.
  const out = new FixedLengthStream(end - start);
  later(
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
 * there, else from the nodes (verified), with the touched segments filled through `use`.
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
  if (lookup && part.layout.type === "sharded") {
    const pieces = await cachedEntries(part, from, to);
    if (use) use.hit = pieces !== null;
    if (pieces) return piecesSource(pieces);
  }
  const fills = use && blockCacheOn() ? Math.min(use.fills, segmentCount(part, from, to)) : 0;
  if (use && fills > 0) {
    use.fills -= fills;
    use.later(fillSegments(part, from, to, fills, (a, b) => readVerified(ctx, part, a, b)));
  }
  return openPartSource(ctx.config, ctx.core, part, from, to, events);
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
