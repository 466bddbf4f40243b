// Reads a body in large pieces. workerd hands bodies over in 4 KiB pieces by default, and a
// promise, a copy and a call into the core per 4 KiB dominate large transfers in JS. A byte
// stream (every body the runtime makes: requests, fetch responses, R2, disk services) is read with
// the BYOB reader's `readAtLeast`, which fills a whole piece in one call; any other stream (one
// made in JS, e.g. a verifying wrapper) is read as it comes.

import { giveBuffer, takeBuffer } from "./buffer-pool";

/** The piece size for request bodies: large enough that per-read costs vanish, small enough
 *  that a piece in flight per request is no memory concern. */
export const BODY_PIECE_BYTES = 256 * 1024;

/** Reads smaller than this get a buffer of their own size, not a whole piece. */
const SMALL_READ_BYTES = 4096;

export interface PieceReaderOptions {
  /** The size of a piece: reads wait for this many bytes unless the stream ends first. */
  pieceBytes: number;
  /**
   * Whether a piece may be handed out in a buffer that the next read overwrites: true when the
   * caller copies each piece before reading the next (less allocation), false when it keeps them.
   */
  reuse: boolean;
}

export class PieceReader {
  private readonly byob: AtLeastReader | null;
  private readonly plain: ReadableStreamDefaultReader<Uint8Array> | null;
  private buffer: ArrayBuffer | null = null;
  /** Whether the stream has ended (or broke): nothing more will come. */
  ended = false;

  /** The size of a whole piece. */
  get pieceBytes(): number {
    return this.options.pieceBytes;
  }

  constructor(
    stream: ReadableStream<Uint8Array>,
    private readonly options: PieceReaderOptions,
  ) {
    this.byob = byobReader(stream);
    this.plain = this.byob ? null : stream.getReader();
  }

  /**
   * The next piece (at most `max` bytes, default a whole piece), or null at the end of the stream.
   * With `reuse`, the piece is valid until the next read.
   */
  async read(max = this.options.pieceBytes): Promise<Uint8Array | null> {
    if (this.ended) return null;
    const result = this.byob ? await this.readByob(Math.min(max, this.options.pieceBytes)) : await this.readPlain();
    if (result === null) this.ended = true;
    return result;
  }

  /** Whether `readInto` fills a caller's buffer straight from the stream (a byte stream). */
  get direct(): boolean {
    return this.byob !== null;
  }

  /**
   * Fills `view` straight from the stream, with no copy, until it is full or the stream ends;
   * resolves with the view refilled (same offset and length) and how many bytes came. The view's
   * buffer is transferred to the stream and back: the caller uses the returned view from then on
   * (its old buffer is detached). Only when `direct`.
   */
  async readInto(view: Uint8Array): Promise<{ view: Uint8Array; filled: number }> {
    const reader = this.byob as AtLeastReader;
    // Kept apart: a transferred view reads as empty.
    const { byteOffset, length } = view;
    let buffer = view.buffer as ArrayBuffer;
    const size = buffer.byteLength;
    let filled = 0;
    while (filled < length && !this.ended) {
      const rest = length - filled;
      const { done, value } = await reader.readAtLeast(rest, new Uint8Array(buffer, byteOffset + filled, rest));
      // A stream that ends hands the buffer back empty; one cancelled meanwhile may not at all.
      buffer = value ? (value.buffer as ArrayBuffer) : new ArrayBuffer(size);
      filled += value?.byteLength ?? 0;
      if (done) this.ended = true;
    }
    return { view: new Uint8Array(buffer, byteOffset, length), filled };
  }

  async cancel(reason?: unknown): Promise<void> {
    this.ended = true;
    await (this.byob ?? this.plain)?.cancel(reason).catch(() => {});
  }

  /**
   * Hands the reused buffer to the next request (shared/buffer-pool.ts). Only once the caller is done
   * with every piece it was given: nothing may look at them afterwards.
   */
  release(): void {
    if (this.buffer) giveBuffer(this.buffer);
    this.buffer = null;
  }

  private async readByob(size: number): Promise<Uint8Array | null> {
    const reader = this.byob as AtLeastReader;
    // A reused buffer is a whole piece, unless the read is a small one (the end-of-body probe).
    const fresh = this.options.reuse && size >= SMALL_READ_BYTES ? this.options.pieceBytes : size;
    let buffer = this.options.reuse ? this.buffer : null;
    if (!buffer || buffer.byteLength < size) {
      if (buffer) giveBuffer(buffer);
      buffer = this.options.reuse ? takeBuffer(fresh) : new ArrayBuffer(fresh);
    }
    this.buffer = null; // transferred to the stream until the read returns it
    const { done, value } = await reader.readAtLeast(size, new Uint8Array(buffer, 0, size));
    if (value && this.options.reuse) this.buffer = value.buffer;
    if (value && value.byteLength > 0) return value;
    return done ? null : this.readByob(size);
  }

  private async readPlain(): Promise<Uint8Array | null> {
    const reader = this.plain as ReadableStreamDefaultReader<Uint8Array>;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return null;
      if (value.byteLength > 0) return value;
    }
  }
}

/** workerd's BYOB reader, whose `readAtLeast` fills a view with at least `min` bytes in one call. */
interface AtLeastReader {
  readAtLeast(min: number, view: Uint8Array<ArrayBuffer>): Promise<{ done: boolean; value?: Uint8Array<ArrayBuffer> }>;
  cancel(reason?: unknown): Promise<void>;
}

/**
 * A BYOB reader when `stream` is a byte stream and the runtime has workerd's `readAtLeast`, else
 * null (the stream stays unlocked). Browsers and Node (the client library, client/) read as it comes.
 */
function byobReader(stream: ReadableStream<Uint8Array>): AtLeastReader | null {
  let reader: Partial<AtLeastReader> & { releaseLock(): void };
  try {
    reader = stream.getReader({ mode: "byob" }) as unknown as Partial<AtLeastReader> & { releaseLock(): void };
  } catch {
    return null;
  }
  if (typeof reader.readAtLeast === "function") return reader as AtLeastReader;
  reader.releaseLock();
  return null;
}
