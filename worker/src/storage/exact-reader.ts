// Reads a body stream in exact amounts (a block at a time), whatever sizes the network delivers,
// pulling it in large pieces (piece-reader.ts) and copying each once, into the caller's block.
import { BODY_PIECE_BYTES, PieceReader } from "../piece-reader";
import { S3Error } from "../s3-error";

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
    let at = 0;
    while (at < target.length) {
      if (this.leftover.length === 0) {
        // Never more than this block needs: the rest would wait in the shared buffer.
        const next = await this.next(target.length - at);
        if (!next) throw incomplete();
        this.leftover = next;
      }
      const n = Math.min(this.leftover.length, target.length - at);
      target.set(this.leftover.subarray(0, n), at);
      this.leftover = this.leftover.subarray(n);
      at += n;
    }
  }

  /** The body must hold no more bytes than its declared length. */
  async expectEnd(): Promise<void> {
    // One byte is enough to tell: a larger read would wait for bytes that never come.
    if (this.leftover.length > 0 || (await this.next(1))) {
      throw new S3Error(400, "IncompleteBody", "The request body is longer than its declared length.");
    }
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
    let piece: Uint8Array | null;
    try {
      piece = this.reader ? await this.reader.read(max) : null;
    } catch (e) {
      this.ended = true; // a broken stream has nothing more to give
      // S3 errors of the body's own checks (aws-chunked, payload hash) stand as they are.
      if (this.clientBody && !(e instanceof S3Error)) throw incomplete();
      throw e;
    }
    if (!piece) this.ended = true;
    return piece;
  }
}

function incomplete(): S3Error {
  return new S3Error(400, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.");
}
