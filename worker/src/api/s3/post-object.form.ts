// A browser form upload's body (multipart/form-data), read as it streams: the fields before the
// file are collected (at most MAX_FIELD_BYTES), then the file is handed on as a stream of exactly
// its size, never held. Its size comes from Content-Length: the file is the form's last field (as
// S3 requires), followed only by the closing boundary and a CRLF (as browsers, curl, Python's
// requests and Node send it), which is checked after the file was read and before it is committed.
import { PieceReader } from "../../shared/piece-reader";
import { S3Error } from "../../s3-error";

/** Everything before the file: S3 takes 20 KB of fields. */
const MAX_FIELD_BYTES = 20 * 1024;
/** One part's header lines. */
const MAX_PART_HEADER_BYTES = 8 * 1024;
const PIECE_BYTES = 64 * 1024;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const malformed = (detail: string) => new S3Error("MalformedPOSTRequest", `The body of your POST request is not well-formed multipart/form-data: ${detail}`);

export interface FormUpload {
  /** The fields before the file, by lower-cased name (the first of each name). */
  fields: Map<string, string>;
  /** The file part's filename (for `${filename}` in the key), "" when none was given. */
  filename: string;
  /** The file's Content-Type as the browser sent it, or null. */
  fileType: string | null;
  size: number;
  /** The file's bytes: exactly `size` of them. */
  file: ReadableStream<Uint8Array>;
  /** Reads what follows the file; throws MalformedPOSTRequest unless it is the closing boundary. */
  finish(): Promise<void>;
}

/** The boundary of a multipart/form-data Content-Type. */
function boundaryOf(contentType: string): string {
  const m = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  const boundary = m?.[1] ?? m?.[2];
  if (!boundary || boundary.length > 70) throw malformed("no boundary in the Content-Type");
  return boundary;
}

/**
 * The first `needle` in `haystack` from `from`, or -1. Linear for the needles that start with a CR
 * (the delimiter "\r\n--boundary" searched through every file, "\r\n\r\n", "\r\n"): a partial
 * match starts only at a CR and no CR is inside the rest of the needle (a boundary holds none), so
 * partial matches never overlap and each byte is compared at most twice. The first boundary's
 * search ("--boundary\r\n") is bounded by MAX_FIELD_BYTES and a piece.
 */
function indexOf(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  const first = needle[0];
  for (let i = haystack.indexOf(first as number, from); i >= 0 && i + needle.length <= haystack.length; i = haystack.indexOf(first as number, i + 1)) {
    let j = 1;
    while (j < needle.length && haystack[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/** Bytes of a body consumed front to back, with what has been read but not taken kept in `held`. */
class Cursor {
  private held = new Uint8Array(0);
  /** Bytes taken so far. */
  taken = 0;

  constructor(private readonly reader: PieceReader) {}

  /**
   * Reads until `needle` is held; its index, -1 when the body ends first, -2 when it does not start
   * within `limit` bytes (however much was read: a bound holds whatever the pieces' sizes).
   * Each search resumes where the last one stopped.
   */
  async find(needle: Uint8Array, limit: number): Promise<number> {
    let from = 0;
    for (;;) {
      const at = indexOf(this.held, needle, from);
      if (at >= 0) return at > limit ? -2 : at;
      if (this.held.length > limit + needle.length) return -2;
      from = Math.max(0, this.held.length - needle.length + 1);
      if (!(await this.more())) return -1;
    }
  }

  /** Takes the first `n` held bytes. */
  take(n: number): Uint8Array {
    const out = this.held.subarray(0, n);
    this.held = this.held.subarray(n);
    this.taken += n;
    return out;
  }

  /** Takes up to `max` bytes: what is held first, else the next piece read; null at the end. */
  async takeUpTo(max: number): Promise<Uint8Array | null> {
    if (this.held.length === 0 && !(await this.more())) return null;
    return this.take(Math.min(max, this.held.length)).slice();
  }

  private async more(): Promise<boolean> {
    const piece = await this.reader.read();
    if (!piece) return false;
    const joined = new Uint8Array(this.held.length + piece.length);
    joined.set(this.held);
    joined.set(piece, this.held.length);
    this.held = joined;
    return true;
  }

  cancel(): Promise<void> {
    return this.reader.cancel();
  }
}

function partHeaders(text: string): { name: string; filename: string | null; type: string | null } {
  let name: string | null = null;
  let filename: string | null = null;
  let type: string | null = null;
  for (const line of text.split("\r\n")) {
    const colon = line.indexOf(":");
    if (colon < 0) continue;
    const header = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (header === "content-type") type = value;
    if (header !== "content-disposition") continue;
    name = /;\s*name="([^"]*)"/i.exec(value)?.[1] ?? /;\s*name=([^;\s]+)/i.exec(value)?.[1] ?? null;
    filename = /;\s*filename="([^"]*)"/i.exec(value)?.[1] ?? /;\s*filename=([^;\s]+)/i.exec(value)?.[1] ?? null;
  }
  if (name === null) throw malformed("a part has no Content-Disposition name");
  return { name, filename, type };
}

/** Reads the form up to its file; the file itself is read by whoever reads `file`. */
export async function readFormUpload(body: ReadableStream<Uint8Array> | null, contentType: string, contentLength: number | null): Promise<FormUpload> {
  if (contentLength === null) throw new S3Error("MissingContentLength", "You must provide the Content-Length HTTP header.");
  if (!body) throw malformed("the body is empty");
  const boundary = boundaryOf(contentType);
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  const cursor = new Cursor(new PieceReader(body, { pieceBytes: PIECE_BYTES, reuse: false }));
  const fields = new Map<string, string>();
  try {
    // The first boundary (anything before it is a preamble, ignored).
    const first = await cursor.find(encoder.encode(`--${boundary}\r\n`), MAX_FIELD_BYTES);
    if (first < 0) throw malformed("the first boundary is missing");
    cursor.take(first + boundary.length + 4);
    for (;;) {
      const end = await cursor.find(encoder.encode("\r\n\r\n"), MAX_PART_HEADER_BYTES);
      if (end < 0) throw malformed("a part's headers do not end");
      const part = partHeaders(decoder.decode(cursor.take(end + 4)));
      if (part.name.toLowerCase() === "file") {
        const trailer = encoder.encode(`\r\n--${boundary}--\r\n`);
        const size = contentLength - cursor.taken - trailer.length;
        if (size < 0) throw malformed("the file is not followed by the closing boundary (the file must be the last field)");
        return upload(cursor, fields, part, size, trailer, boundary);
      }
      const valueEnd = await cursor.find(delimiter, MAX_FIELD_BYTES - cursor.taken);
      if (valueEnd === -2 || cursor.taken > MAX_FIELD_BYTES) {
        throw new S3Error(
          "MaxPostPreDataLengthExceeded",
          `Your POST request fields preceding the upload file were too large (at most ${MAX_FIELD_BYTES} bytes).`,
        );
      }
      if (valueEnd < 0) throw malformed("a field does not end");
      const value = decoder.decode(cursor.take(valueEnd));
      cursor.take(delimiter.length);
      const name = part.name.toLowerCase();
      if (!fields.has(name)) fields.set(name, value);
      const after = await cursor.find(encoder.encode("\r\n"), 2);
      if (after !== 0) throw new S3Error("InvalidArgument", "POST requires exactly one file upload per request.");
      cursor.take(2);
    }
  } catch (e) {
    await cursor.cancel().catch(() => {});
    throw e;
  }
}

function upload(
  cursor: Cursor,
  fields: Map<string, string>,
  part: { filename: string | null; type: string | null },
  size: number,
  trailer: Uint8Array,
  boundary: string,
): FormUpload {
  let left = size;
  // A delimiter inside the file's bytes means the file was not the last field (its size, taken
  // from Content-Length, then runs over the fields after it): the stream fails instead.
  const delimiter = encoder.encode(`\r\n--${boundary}`);
  let carry = new Uint8Array(0);
  const file = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (left === 0) return controller.close();
        const piece = await cursor.takeUpTo(left);
        if (!piece) return controller.error(new S3Error("IncompleteBody", "The request body terminated unexpectedly"));
        const seam = new Uint8Array(carry.length + Math.min(piece.length, delimiter.length - 1));
        seam.set(carry);
        seam.set(piece.subarray(0, seam.length - carry.length), carry.length);
        if (indexOf(piece, delimiter) >= 0 || indexOf(seam, delimiter) >= 0) return controller.error(malformed("the file must be the last field of the form"));
        carry = piece.slice(Math.max(0, piece.length - (delimiter.length - 1)));
        left -= piece.length;
        controller.enqueue(piece);
        if (left === 0) controller.close();
      },
      cancel: () => cursor.cancel(),
    },
    { highWaterMark: 0 },
  );
  const finish = async (): Promise<void> => {
    const rest: number[] = [];
    for (let piece = await cursor.takeUpTo(trailer.length + 1); piece; piece = await cursor.takeUpTo(trailer.length + 1)) {
      rest.push(...piece);
      if (rest.length > trailer.length) break;
    }
    if (rest.length !== trailer.length || rest.some((b, i) => b !== trailer[i])) {
      await cursor.cancel().catch(() => {});
      const tail = decoder.decode(new Uint8Array(rest));
      if (tail.endsWith(`\r\n--${boundary}--`)) throw malformed("the form must end with a CRLF after its closing boundary, as browsers send it");
      throw malformed("the file is not followed by the closing boundary (the file must be the last field)");
    }
  };
  return { fields, filename: part.filename ?? "", fileType: part.type, size, file, finish };
}
