// Reads a body stream in exact amounts (a block at a time), whatever sizes the network delivers.
import { S3Error } from "../s3-error";

export class ExactReader {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array> | null;
  private leftover: Uint8Array = new Uint8Array(0);

  constructor(body: ReadableStream<Uint8Array> | null) {
    this.reader = body ? body.getReader() : null;
  }

  /** Fills `target` completely, or fails with IncompleteBody when the body ends first. */
  async fill(target: Uint8Array): Promise<void> {
    let at = 0;
    while (at < target.length) {
      if (this.leftover.length === 0) {
        const next = await this.next();
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
    if (this.leftover.length > 0 || (await this.next())) {
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
    await this.reader?.cancel().catch(() => {});
    this.ended = true;
  }

  private async next(): Promise<Uint8Array | null> {
    if (!this.reader) return null;
    for (;;) {
      const { done, value } = await this.reader.read();
      if (done) {
        this.ended = true;
        return null;
      }
      if (value.length > 0) return value;
    }
  }
}

function incomplete(): S3Error {
  return new S3Error(400, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.");
}
