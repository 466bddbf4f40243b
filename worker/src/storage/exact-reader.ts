// Reads a body stream in exact amounts (a block at a time), whatever sizes the network delivers,
// pulling it in large pieces (shared/piece-reader.ts) and copying each once, into the caller's block.
import { BODY_PIECE_BYTES, PieceReader } from "../shared/piece-reader";
import { S3Error } from "../s3-error";
import { BodyLengthError } from "./errors";

export class ExactReader {
  private readonly reader: PieceReader | null;
  private leftover: Uint8Array = new Uint8Array(0);

  /**
   * `clientBody`: the body is a client's request, so a stream that breaks (the client went away
   * or sent less than it declared) is the client's 400 IncompleteBody, not the gateway's fault.
   */
  constructor(
    body: ReadableStream<Uint8Array> | null,
    private readonly clientBody = false,
  ) {
    // Pieces are copied into the target before the next read: one reused buffer serves them all.
    this.reader = body ? new PieceReader(body, { pieceBytes: BODY_PIECE_BYTES, reuse: true }) : null;
  }

  /** Fills `target` completely, or fails with IncompleteBody when the body ends first. */
  async fill(target: Uint8Array): Promise<void> {
    await this.fillFrom(target, 0);
  }

  /**
   * Like `fill`, but a byte stream (a client's request body as the runtime delivers it) is read
   * straight into `target`'s memory, not copied through a piece buffer: `target`'s buffer is
   * taken over and the filled view (same offset and length, a new buffer) is returned. Use it
   * for the block buffer of a write, and use the returned view (and its buffer) from then on.
   */
  async fillInPlace(target: Uint8Array): Promise<Uint8Array> {
    const at = this.takeLeftover(target);
    if (at === target.length || !this.reader?.direct) {
      await this.fillFrom(target, at);
      return target;
    }
    // Kept apart: the read transfers target's buffer, after which target reads as empty.
    const { byteOffset, length } = target;
    const { view, filled } = await this.guard(() => (this.reader as PieceReader).readInto(target.subarray(at)));
    if (this.reader.ended) this.ended = true;
    if (filled < length - at) throw incomplete();
    return new Uint8Array(view.buffer, byteOffset, length);
  }

  /** Copies what is left of the last piece into the start of `target`; returns how much. */
  private takeLeftover(target: Uint8Array): number {
    const n = Math.min(this.leftover.length, target.length);
    if (n === 0) return 0;
    target.set(this.leftover.subarray(0, n));
    this.leftover = this.leftover.subarray(n);
    return n;
  }

  private async fillFrom(target: Uint8Array, start: number): Promise<void> {
    for (let at = start; at < target.length; at += this.takeLeftover(target.subarray(at))) {
      if (this.leftover.length > 0) continue;
      // Never more than this block needs: the rest would wait in the shared buffer.
      const next = await this.next(target.length - at);
      if (!next) throw incomplete();
      this.leftover = next;
    }
  }

  /** The body must hold no more bytes than its declared length. */
  async expectEnd(): Promise<void> {
    // One byte is enough to tell: a larger read would wait for bytes that never come.
    if (this.leftover.length > 0 || (await this.next(1))) throw new BodyLengthError("The request body is longer than its declared length.");
  }

  /** Whether the body has ended (or broke): nothing more will come. */
  ended = false;

  /**
   * Reads and discards the rest of the body (never throws). A write that fails midway answers
   * only after the client has sent everything: answering while it is still sending leaves the
   * connection in a state the local runtime's proxy does not survive.
   */
  async drain(): Promise<void> {
    this.leftover = new Uint8Array(0);
    try {
      while (await this.next());
    } catch {
      this.ended = true; // the body broke: nothing left to read
    }
  }

  /** Stops reading: the rest of the body is not wanted (a stream the gateway opened itself). */
  async cancel(): Promise<void> {
    this.leftover = new Uint8Array(0);
    await this.reader?.cancel();
    this.ended = true;
  }

  private async next(max?: number): Promise<Uint8Array | null> {
    const reader = this.reader;
    const piece = reader ? await this.guard(() => reader.read(max)) : null;
    if (!piece) this.ended = true;
    return piece;
  }

  /** Runs a read of the body, turning a broken client body into IncompleteBody. */
  private async guard<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (e) {
      this.ended = true; // a broken stream has nothing more to give
      // S3 errors of the body's own checks (aws-chunked, payload hash) stand as they are.
      if (this.clientBody && !(e instanceof S3Error)) throw incomplete();
      throw e;
    }
  }
}

function incomplete(): BodyLengthError {
  return new BodyLengthError("You did not provide the number of bytes specified by the Content-Length HTTP header.");
}
