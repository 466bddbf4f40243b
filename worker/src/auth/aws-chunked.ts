// The aws-chunked body encoding of S3's streaming uploads, decoded as it streams.
//
//   signed   (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]):
//     <hex-size>;chunk-signature=<sig>\r\n <data> \r\n … 0;chunk-signature=<sig>\r\n <trailer section>
//   unsigned (STREAMING-UNSIGNED-PAYLOAD-TRAILER):
//     <hex-size>\r\n <data> \r\n … 0\r\n <trailer section>
//
// The trailer section is zero or more `name:value\r\n` lines ended by an empty line (`\r\n`). In
// the signed trailer mode one of them is `x-amz-trailer-signature:<sig>`. The end of the body may
// stand in for the final empty line (the AWS SDK for JavaScript sends just `0\r\n` when it has no
// trailer).
//
// Each chunk signature is HMAC-SHA256(signingKey, "AWS4-HMAC-SHA256-PAYLOAD\n" + amzDate + "\n" +
// scope + "\n" + previousSignature + "\n" + sha256("") + "\n" + sha256(chunk data)), chained from
// the request's (seed) signature; the trailer signature is HMAC-SHA256(signingKey,
// "AWS4-HMAC-SHA256-TRAILER\n" + amzDate + "\n" + scope + "\n" + finalChunkSignature + "\n" +
// sha256(canonical trailers)), the canonical trailers being `name:value\n` per trailer, sorted.
//
// The decoder reads the source as a pull-based stream: decoded data leaves as views into the
// network's pieces (no copy, no re-chunking), chunk data is hashed incrementally, and a chunk's
// signature is checked as soon as its last byte has arrived, before anything after it is
// passed on. Only a partial header or trailer line is ever buffered (bounded), never chunk data.

import { BODY_PIECE_BYTES, PieceReader } from "../shared/piece-reader";
import { S3Error } from "../s3-error";
import { EMPTY_SHA256, Sha256Stream, constantTimeEqual, hmacHex, sha256Hex } from "./crypto";

/** Largest chunk accepted (the size in a chunk header); larger is InvalidChunkSizeError. */
export const MAX_CHUNK_BYTES = 16 * 1024 * 1024;
const MAX_HEADER_LINE_BYTES = 4096;
const MAX_TRAILER_BYTES = 16 * 1024;

export interface ChunkSigning {
  /** The request's SigV4 signing key (HMAC-SHA256). */
  signingKey: CryptoKey;
  /** The request's timestamp, ISO 8601 basic (YYYYMMDDTHHMMSSZ). */
  amzDate: string;
  /** The credential scope: DATE/REGION/s3/aws4_request. */
  scope: string;
  /** The request's own signature (lower-case hex), which the first chunk signature chains from. */
  seedSignature: string;
}

export interface AwsChunkedOptions {
  /** Verify chunk signatures (and the trailer signature) with this; null for unsigned chunks. */
  signing: ChunkSigning | null;
  /** Whether the mode carries trailing headers (…-TRAILER). Without it, trailer lines are an error. */
  trailer: boolean;
  /** The trailer names announced in `x-amz-trailer` (lower-case), or null when it was not sent. */
  declaredTrailers: string[] | null;
  /** `x-amz-decoded-content-length` when given: the decoded payload must be exactly this long. */
  decodedLength: number | null;
  /** Overrides MAX_CHUNK_BYTES. */
  maxChunkBytes?: number;
}

export interface DecodedBody {
  body: ReadableStream<Uint8Array>;
  /** The trailing headers, once the body has been read to its end (rejects if it fails). */
  trailers: Promise<Headers>;
}

const malformed = (detail: string) => new S3Error("InvalidRequest", `Malformed aws-chunked payload: ${detail}.`);
const malformedTrailer = (detail: string) =>
  new S3Error("MalformedTrailerError", `The request contained trailing data that was not well-formed or did not conform to our published schema: ${detail}.`);
const incomplete = () => new S3Error("IncompleteBody", "The request body terminated unexpectedly before the end of the aws-chunked payload.");
const chunkSignatureMismatch = (what: string) =>
  new S3Error("SignatureDoesNotMatch", `The ${what} signature we calculated does not match the signature you provided. Check your key and signing method.`);

enum State {
  ChunkHeader,
  Data,
  DataCr,
  DataLf,
  Trailer,
  Done,
}

const TRAILER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

/** The incremental aws-chunked parser behind decodeAwsChunked (exported for tests). */
export class AwsChunkedParser {
  private state = State.ChunkHeader;
  private readonly maxChunk: number;
  // The line being assembled (chunk header or trailer line), in pieces.
  private lineParts: Uint8Array[] = [];
  private lineBytes = 0;
  // Current chunk.
  private remaining = 0;
  private chunkSignature = "";
  private hash: Sha256Stream | null = null;
  /** Whether no data of the current chunk has been seen yet. */
  private chunkStart = false;
  private previousSignature: string;
  // Totals and trailers.
  private decoded = 0;
  private trailerBytes = 0;
  private readonly trailers: [string, string][] = [];
  /** The trailers' names, for duplicates and the announced ones: sets, so that thousands of lines cost no more than linear work. */
  private readonly trailerNames = new Set<string>();
  private trailerSignature: string | null = null;
  private result: Headers | null = null;

  constructor(private readonly opts: AwsChunkedOptions) {
    this.maxChunk = opts.maxChunkBytes ?? MAX_CHUNK_BYTES;
    this.previousSignature = opts.signing?.seedSignature ?? "";
  }

  /**
   * Parses one piece of the encoded body, appending the decoded data in it to `out` (views into
   * `piece`). Throws an S3Error on bad framing or a signature that does not match.
   */
  async push(piece: Uint8Array, out: Uint8Array[]): Promise<void> {
    let pos = 0;
    const len = piece.length;
    while (pos < len) {
      switch (this.state) {
        case State.ChunkHeader: {
          const read = this.readLine(piece, pos, MAX_HEADER_LINE_BYTES, () => malformed("chunk header line too long"));
          pos = read.pos;
          if (read.line === null) break;
          if (!read.line.endsWith("\r")) throw malformed("chunk header not terminated by CRLF");
          await this.startChunk(read.line.slice(0, -1));
          break;
        }
        case State.Data: {
          const n = Math.min(this.remaining, len - pos);
          const data = piece.subarray(pos, pos + n);
          pos += n;
          this.remaining -= n;
          this.decoded += n;
          if (this.opts.decodedLength !== null && this.decoded > this.opts.decodedLength) {
            throw malformed("the chunks carry more data than x-amz-decoded-content-length");
          }
          const whole = this.chunkStart && this.remaining === 0;
          this.chunkStart = false;
          out.push(data);
          if (this.opts.signing) await this.hashData(data, whole);
          if (this.remaining === 0) this.state = State.DataCr;
          break;
        }
        case State.DataCr:
          if (piece[pos++] !== 0x0d) throw malformed("chunk data not followed by CRLF");
          this.state = State.DataLf;
          break;
        case State.DataLf:
          if (piece[pos++] !== 0x0a) throw malformed("chunk data not followed by CRLF");
          this.state = State.ChunkHeader;
          break;
        case State.Trailer: {
          const read = this.readLine(piece, pos, MAX_TRAILER_BYTES - this.trailerBytes, () => malformedTrailer("the trailing headers are too large"));
          pos = read.pos;
          if (read.line === null) break;
          this.trailerBytes += read.line.length + 1;
          const line = read.line.endsWith("\r") ? read.line.slice(0, -1) : read.line;
          if (line === "") await this.finish();
          else this.addTrailer(line);
          break;
        }
        case State.Done:
          throw malformed("unexpected data after the end of the payload");
      }
    }
  }

  /** The source has ended: checks that the payload was complete and returns the trailers. */
  async end(): Promise<Headers> {
    if (this.state === State.Trailer && this.lineBytes === 0) await this.finish();
    if (this.state !== State.Done || !this.result) throw incomplete();
    return this.result;
  }

  /** Releases resources when the body will not be read to its end. */
  abort(): void {
    this.hash?.abort();
    this.hash = null;
  }

  /**
   * Adds the bytes of `piece` from `pos` to its next LF to the line being assembled (at most `max`
   * bytes, else `tooLong`). Returns the position after them, and the whole line (a byte string, one
   * char per byte: framing is ASCII) once its LF has come.
   */
  private readLine(piece: Uint8Array, pos: number, max: number, tooLong: () => S3Error): { pos: number; line: string | null } {
    const nl = piece.indexOf(0x0a, pos);
    const end = nl < 0 ? piece.length : nl;
    if (end > pos) {
      if (this.lineBytes + end - pos > max) throw tooLong();
      // Copy: the piece's buffer belongs to the stream and the line may span several pieces.
      this.lineParts.push(piece.slice(pos, end));
      this.lineBytes += end - pos;
    }
    if (nl < 0) return { pos: end, line: null };
    let line = "";
    for (const part of this.lineParts) {
      for (let i = 0; i < part.length; i += 8192) line += String.fromCharCode(...part.subarray(i, i + 8192));
    }
    this.lineParts = [];
    this.lineBytes = 0;
    return { pos: nl + 1, line };
  }

  private async startChunk(header: string): Promise<void> {
    const semi = header.indexOf(";");
    const hex = semi < 0 ? header : header.slice(0, semi);
    const ext = semi < 0 ? "" : header.slice(semi);
    if (!/^[0-9a-fA-F]{1,16}$/.test(hex)) throw malformed("invalid chunk size");
    const size = parseInt(hex, 16);
    if (size > this.maxChunk) throw new S3Error("InvalidChunkSizeError", `Chunk size ${size} exceeds the maximum of ${this.maxChunk} bytes.`);
    if (this.opts.signing) {
      const m = /^;chunk-signature=([0-9a-fA-F]{64})$/.exec(ext);
      if (!m) throw chunkSignatureMismatch("chunk");
      this.chunkSignature = m[1]!.toLowerCase();
    }
    // Unsigned chunks: any chunk extension is ignored.
    if (size === 0) {
      if (this.opts.signing) await this.verifyChunk(EMPTY_SHA256);
      this.state = State.Trailer;
      return;
    }
    this.remaining = size;
    this.chunkStart = true;
    this.state = State.Data;
  }

  /**
   * Hashes a signed chunk's data and, at its end, checks its signature. A chunk that arrived
   * whole in one piece (the usual case: 64 KiB chunks, 256 KiB pieces) is hashed in one call,
   * without a digest stream.
   */
  private async hashData(data: Uint8Array, whole: boolean): Promise<void> {
    if (whole) return this.verifyChunk(await sha256Hex(data));
    this.hash ??= new Sha256Stream();
    await this.hash.update(data);
    if (this.remaining > 0) return;
    const hash = this.hash;
    this.hash = null;
    await this.verifyChunk(await hash.hex());
  }

  private async verifyChunk(dataSha256: string): Promise<void> {
    const s = this.opts.signing!;
    const stringToSign = ["AWS4-HMAC-SHA256-PAYLOAD", s.amzDate, s.scope, this.previousSignature, EMPTY_SHA256, dataSha256].join("\n");
    const expected = await hmacHex(s.signingKey, stringToSign);
    if (!constantTimeEqual(expected, this.chunkSignature)) throw chunkSignatureMismatch("chunk");
    this.previousSignature = expected;
  }

  private addTrailer(line: string): void {
    if (!this.opts.trailer) throw malformedTrailer("this x-amz-content-sha256 mode has no trailing headers");
    const colon = line.indexOf(":");
    if (colon <= 0) throw malformedTrailer("a trailing header line is not name:value");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (!TRAILER_NAME.test(name)) throw malformedTrailer("invalid trailing header name");
    if (name === "x-amz-trailer-signature") {
      if (!this.opts.signing || this.trailerSignature !== null) throw malformedTrailer("unexpected x-amz-trailer-signature");
      this.trailerSignature = value.toLowerCase();
      return;
    }
    if (this.trailerNames.has(name)) throw malformedTrailer(`duplicate trailing header ${name}`);
    this.trailerNames.add(name);
    this.trailers.push([name, value]);
  }

  /** The end of the trailer section: final checks, trailer signature, the result. */
  private async finish(): Promise<void> {
    const declaredLength = this.opts.decodedLength;
    if (declaredLength !== null && this.decoded !== declaredLength) throw incomplete();
    if (this.opts.trailer) {
      const declared = new Set(this.opts.declaredTrailers ?? []);
      for (const [name] of this.trailers) if (!declared.has(name)) throw malformedTrailer(`trailing header ${name} was not announced in x-amz-trailer`);
      for (const name of declared) if (!this.trailerNames.has(name)) throw malformedTrailer(`announced trailing header ${name} is missing`);
      if (this.opts.signing) {
        if (this.trailerSignature === null) throw malformedTrailer("x-amz-trailer-signature is missing");
        const canonical = [...this.trailers]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([n, v]) => `${n}:${v}\n`)
          .join("");
        const s = this.opts.signing;
        const stringToSign = ["AWS4-HMAC-SHA256-TRAILER", s.amzDate, s.scope, this.previousSignature, await sha256Hex(canonical)].join("\n");
        const expected = await hmacHex(s.signingKey, stringToSign);
        if (!constantTimeEqual(expected, this.trailerSignature)) throw chunkSignatureMismatch("trailer");
      }
    }
    const headers = new Headers();
    try {
      for (const [n, v] of this.trailers) headers.append(n, v);
    } catch {
      throw malformedTrailer("invalid trailing header value");
    }
    this.result = headers;
    this.state = State.Done;
  }
}

/**
 * Decodes an aws-chunked `source` as it is read. The returned body errors with an S3Error at the
 * point a problem is detected (bad framing: 400 InvalidRequest; too large a chunk: 400
 * InvalidChunkSizeError; early end: 400 IncompleteBody; bad trailers: 400 MalformedTrailerError;
 * chunk or trailer signature: 403 SignatureDoesNotMatch), so a consumer that commits only on a
 * clean end never commits a bad body.
 */
export function decodeAwsChunked(source: ReadableStream<Uint8Array>, opts: AwsChunkedOptions): DecodedBody {
  const parser = new AwsChunkedParser(opts);
  let resolveTrailers!: (h: Headers) => void;
  let rejectTrailers!: (e: unknown) => void;
  const trailers = new Promise<Headers>((resolve, reject) => {
    resolveTrailers = resolve;
    rejectTrailers = reject;
  });
  trailers.catch(() => {}); // nobody has to look at the trailers
  // Large pieces (shared/piece-reader.ts); not reused: the decoded output may be views into them.
  const reader = new PieceReader(source, { pieceBytes: BODY_PIECE_BYTES, reuse: false });
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        for (;;) {
          const value = await reader.read();
          if (value === null) {
            const headers = await parser.end();
            controller.close();
            resolveTrailers(headers);
            return;
          }
          const out: Uint8Array[] = [];
          await parser.push(value, out);
          for (const piece of out) controller.enqueue(piece);
          if (out.length > 0) return;
        }
      } catch (err) {
        parser.abort();
        rejectTrailers(err);
        void reader.cancel(err);
        throw err;
      }
    },
    cancel(reason) {
      parser.abort();
      rejectTrailers(reason);
      return reader.cancel(reason);
    },
  });
  return { body, trailers };
}
