// Client-side ("zero-knowledge") encryption (docs/storage-format.md, "Client-side encryption"):
// the object the gateway stores is ciphertext made here, under a data key the gateway never sees.
//
// Each object has a random 256-bit data key. Its plaintext is cut into segments of `segmentBytes`
// (the last one shorter, an empty object one empty segment); each is stored as its AES-256-GCM
// ciphertext followed by the 16-byte tag, so stored segment i starts at i × (segmentBytes + 16) and
// a range needs only the segments it touches. A segment's nonce is its index (the data key is the
// object's own) and its additional data binds the format, the object's random id, the segment
// size, the plaintext length, the index and whether it is the last: segments cannot be reordered,
// dropped, moved between objects, or the object cut short, without failing authentication.
//
// The data key is wrapped (AES-256-GCM) under a key-encryption key: Argon2id of a passphrase
// (through the WASM core) or the 32 bytes of a key file. The header (this format's version, the KDF
// and its parameters and salt, the wrapped key, the object id, the segment size and the plaintext
// length) travels as the user metadata x-amz-meta-shardgate-sealed, base64url.
import { fromBase64, toBase64 } from "../../worker/src/shared/bytes";
import type { Argon2Params, Core } from "../../worker/src/shared/core-api";

/** The user metadata name (x-amz-meta-…) of the header: what marks an object as sealed. */
export const SEALED_METADATA = "shardgate-sealed";
export const FORMAT_VERSION = 1;
export const TAG_BYTES = 16;
/** Plaintext per segment: with its tag a stored segment is 64 KiB. */
export const SEGMENT_BYTES = 64 * 1024 - TAG_BYTES;
/** Segment sizes a header may name (a hostile header must not make a client buffer much). */
const MIN_SEGMENT_BYTES = 1;
const MAX_SEGMENT_BYTES = 4 * 1024 * 1024;
/** Argon2id's default cost: 64 MiB, 3 passes, 1 lane (RFC 9106's second recommended option). */
export const DEFAULT_KDF: Argon2Params = { memoryKiB: 64 * 1024, passes: 3, lanes: 1 };
const SALT_BYTES = 16;
const OBJECT_ID_BYTES = 16;
const KEY_BYTES = 32;
const IV_BYTES = 12;
const WRAPPED_KEY_BYTES = IV_BYTES + KEY_BYTES + TAG_BYTES;
/** A WebCrypto key (named through crypto.subtle: the package's types declare no CryptoKey global). */
type CryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;
/** Segments decrypted or encrypted at once. */
const BATCH = 16;

/** How an object is sealed and opened: a passphrase (Argon2id, `kdf` its cost on upload), or a 32-byte key file. */
export type Encryption = { passphrase: string; kdf?: Argon2Params } | { key: Uint8Array };

/**
 * What opens a sealed object for reading: its passphrase or key file, or its raw 32-byte data key
 * itself (what a share link carries in its fragment: it opens this one object and nothing else).
 */
export type Opening = Encryption | { dataKey: Uint8Array };

/** The passphrase or key file does not open the object's data key. */
export class WrongPassphraseError extends Error {
  constructor(message = "wrong passphrase or key file: the object's data key does not open") {
    super(message);
    this.name = "WrongPassphrase";
  }
}

/** The stored object is not what was sealed (tampered, truncated, reordered, swapped or not sealed at all): no byte of it is returned. */
export class CorruptObjectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CorruptObject";
  }
}

export type Kdf = { type: "argon2id"; params: Argon2Params; salt: Uint8Array } | { type: "key" };

export interface SealedHeader {
  version: number;
  kdf: Kdf;
  objectId: Uint8Array;
  segmentBytes: number;
  /** Plaintext bytes. */
  size: number;
  /** IV, then the data key's AES-GCM ciphertext and tag. */
  wrappedKey: Uint8Array;
}

// ---- Sizes and ranges (pure) ----

/** Segments of an object of `size` plaintext bytes: at least one (an empty object has one empty segment). */
export function segmentCount(size: number, segmentBytes: number): number {
  return Math.max(1, Math.ceil(size / segmentBytes));
}

/** Stored (ciphertext) bytes of `size` plaintext bytes. */
export function storedSize(size: number, segmentBytes: number): number {
  return size + segmentCount(size, segmentBytes) * TAG_BYTES;
}

/** Plaintext bytes in segment `index`. */
export function segmentPlainBytes(index: number, size: number, segmentBytes: number): number {
  return Math.max(0, Math.min(segmentBytes, size - index * segmentBytes));
}

/** What a plaintext range [start, end) needs of the stored object. */
export interface CipherRange {
  /** First and last (inclusive) segment read. */
  first: number;
  last: number;
  /** Stored bytes [start, end) to fetch: exactly those segments. */
  start: number;
  end: number;
  /** Plaintext bytes of segment `first` before the range starts. */
  skip: number;
}

/**
 * The segments covering plaintext bytes [start, end) of an object of `size` bytes, and the stored
 * bytes they occupy. [0, 0) of an empty object is its one empty segment (read to authenticate it).
 */
export function cipherRange(start: number, end: number, size: number, segmentBytes: number): CipherRange {
  if (!(Number.isSafeInteger(start) && Number.isSafeInteger(end) && 0 <= start && start <= end && end <= size))
    throw new RangeError(`plaintext range [${start}, ${end}) outside [0, ${size})`);
  const framed = segmentBytes + TAG_BYTES;
  const first = Math.floor(start / segmentBytes);
  const last = end === start ? first : Math.floor((end - 1) / segmentBytes);
  const lastSegment = segmentCount(size, segmentBytes) - 1;
  const clampedFirst = Math.min(first, lastSegment);
  const clampedLast = Math.min(last, lastSegment);
  return {
    first: clampedFirst,
    last: clampedLast,
    start: clampedFirst * framed,
    end: clampedLast * framed + segmentPlainBytes(clampedLast, size, segmentBytes) + TAG_BYTES,
    skip: start - clampedFirst * segmentBytes,
  };
}

// ---- The header ----

/** The header as the metadata value: base64url of its binary form (docs/storage-format.md). */
export function encodeHeader(h: SealedHeader): string {
  const kdf = h.kdf.type === "argon2id" ? 13 + h.kdf.salt.length : 0;
  const out = new Uint8Array(2 + kdf + OBJECT_ID_BYTES + 4 + 8 + WRAPPED_KEY_BYTES);
  const view = new DataView(out.buffer);
  let at = 0;
  out[at++] = h.version;
  if (h.kdf.type === "argon2id") {
    out[at++] = 1;
    view.setUint32(at, h.kdf.params.memoryKiB);
    view.setUint32(at + 4, h.kdf.params.passes);
    view.setUint32(at + 8, h.kdf.params.lanes);
    out[at + 12] = h.kdf.salt.length;
    out.set(h.kdf.salt, at + 13);
    at += kdf;
  } else out[at++] = 0;
  out.set(h.objectId, at);
  at += OBJECT_ID_BYTES;
  view.setUint32(at, h.segmentBytes);
  view.setBigUint64(at + 4, BigInt(h.size));
  out.set(h.wrappedKey, at + 12);
  return toBase64(out).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** Parses a header value; anything malformed, of another version or out of bounds is a CorruptObjectError. */
export function decodeHeader(value: string): SealedHeader {
  const bad = (why: string) => new CorruptObjectError(`the shardgate-sealed header is invalid: ${why}`);
  // 4k + 1 characters encode no whole byte: no base64 has that length (atob would throw its own error).
  if (value.length > 2048 || value.length % 4 === 1 || !/^[A-Za-z0-9_-]*$/.test(value)) throw bad("not base64url");
  const bytes = fromBase64(value.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (value.length % 4)) % 4));
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number) => {
    if (at + n > bytes.length) throw bad("too short");
  };
  need(2);
  const version = bytes[at++];
  if (version !== FORMAT_VERSION) throw bad(`unknown version ${version}`);
  const type = bytes[at++];
  let kdf: Kdf;
  if (type === 1) {
    need(13);
    const params = { memoryKiB: view.getUint32(at), passes: view.getUint32(at + 4), lanes: view.getUint32(at + 8) };
    const saltLength = bytes[at + 12];
    at += 13;
    need(saltLength);
    kdf = { type: "argon2id", params, salt: bytes.slice(at, at + saltLength) };
    at += saltLength;
  } else if (type === 0) kdf = { type: "key" };
  else throw bad(`unknown key derivation ${type}`);
  need(OBJECT_ID_BYTES + 12 + WRAPPED_KEY_BYTES);
  const objectId = bytes.slice(at, at + OBJECT_ID_BYTES);
  at += OBJECT_ID_BYTES;
  const segmentBytes = view.getUint32(at);
  const size = view.getBigUint64(at + 4);
  const wrappedKey = bytes.slice(at + 12, at + 12 + WRAPPED_KEY_BYTES);
  if (at + 12 + WRAPPED_KEY_BYTES !== bytes.length) throw bad("trailing bytes");
  if (segmentBytes < MIN_SEGMENT_BYTES || segmentBytes > MAX_SEGMENT_BYTES) throw bad(`segment size ${segmentBytes}`);
  if (size > BigInt(Number.MAX_SAFE_INTEGER)) throw bad(`size ${size}`);
  return { version, kdf, objectId, segmentBytes, size: Number(size), wrappedKey };
}

// ---- Keys ----

const utf8 = new TextEncoder();
const SEGMENT_LABEL = utf8.encode("shardgate-sealed/v1 segment");
const KEY_LABEL = utf8.encode("shardgate-sealed/v1 data key");

function random(n: number): Uint8Array<ArrayBuffer> {
  return crypto.getRandomValues(new Uint8Array(n));
}

function concat(...parts: Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function aesKey(raw: Uint8Array): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", raw as Uint8Array<ArrayBuffer>, "AES-GCM", false, ["encrypt", "decrypt"]);
}

/** The key-encryption key of `encryption` for a header's KDF. */
async function keyEncryptionKey(core: Core, encryption: Encryption, kdf: Kdf): Promise<CryptoKey> {
  if ("key" in encryption) {
    if (encryption.key.length !== KEY_BYTES) throw new RangeError(`a key file is ${KEY_BYTES} bytes, got ${encryption.key.length}`);
    if (kdf.type !== "key") throw new WrongPassphraseError("the object is sealed with a passphrase, not a key file");
    return aesKey(encryption.key);
  }
  if (kdf.type !== "argon2id") throw new WrongPassphraseError("the object is sealed with a key file, not a passphrase");
  // NFC, so that the same passphrase typed on systems that compose characters differently derives the same key.
  let derived: Uint8Array;
  try {
    derived = core.argon2id(utf8.encode(encryption.passphrase.normalize("NFC")), kdf.salt, kdf.params);
  } catch (e) {
    // The core refuses parameters beyond its bounds before allocating anything (a hostile header).
    throw new CorruptObjectError(`the header's key derivation is refused: ${e instanceof Error ? e.message : String(e)}`);
  }
  try {
    return await aesKey(derived);
  } finally {
    derived.fill(0);
  }
}

/** The additional data the wrapped key is authenticated with: the format and the object's id. */
function keyAad(objectId: Uint8Array): Uint8Array<ArrayBuffer> {
  return concat(KEY_LABEL, objectId);
}

async function wrapKey(core: Core, encryption: Encryption, kdf: Kdf, objectId: Uint8Array, dataKey: Uint8Array): Promise<Uint8Array> {
  const kek = await keyEncryptionKey(core, encryption, kdf);
  const iv = random(IV_BYTES);
  const sealed = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: keyAad(objectId) }, kek, dataKey as Uint8Array<ArrayBuffer>);
  return concat(iv, new Uint8Array(sealed));
}

/** A new KDF for `encryption`: Argon2id with a fresh salt for a passphrase, none for a key file. */
function newKdf(encryption: Encryption): Kdf {
  return "key" in encryption ? { type: "key" } : { type: "argon2id", params: encryption.kdf ?? DEFAULT_KDF, salt: random(SALT_BYTES) };
}

/**
 * The raw data key of a sealed object. WrongPassphraseError when `encryption` does not open it
 * (a wrong passphrase or key file, or a header whose KDF part was altered).
 */
export async function openDataKey(core: Core, header: SealedHeader, encryption: Encryption): Promise<Uint8Array> {
  const kek = await keyEncryptionKey(core, encryption, header.kdf);
  const iv = header.wrappedKey.subarray(0, IV_BYTES);
  try {
    const raw = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: iv as Uint8Array<ArrayBuffer>, additionalData: keyAad(header.objectId) },
      kek,
      header.wrappedKey.subarray(IV_BYTES) as Uint8Array<ArrayBuffer>,
    );
    return new Uint8Array(raw);
  } catch {
    throw new WrongPassphraseError();
  }
}

/**
 * The header of a sealed object re-wrapped for `next` (a new passphrase, salt or key file), from
 * `current`: the same data key, object id and ciphertext, so only the metadata changes.
 */
export async function rewrapHeader(core: Core, header: SealedHeader, current: Encryption, next: Encryption): Promise<SealedHeader> {
  const dataKey = await openDataKey(core, header, current);
  try {
    const kdf = newKdf(next);
    return { ...header, kdf, wrappedKey: await wrapKey(core, next, kdf, header.objectId, dataKey) };
  } finally {
    dataKey.fill(0);
  }
}

// ---- Segments ----

function nonce(index: number): Uint8Array<ArrayBuffer> {
  const iv = new Uint8Array(IV_BYTES);
  new DataView(iv.buffer).setBigUint64(4, BigInt(index));
  return iv;
}

/** Segment `index`'s additional data: format, object id, segment size, plaintext length, index, last. */
function segmentAad(header: SealedHeader, index: number): Uint8Array<ArrayBuffer> {
  const fields = new Uint8Array(4 + 8 + 8 + 1);
  const view = new DataView(fields.buffer);
  view.setUint32(0, header.segmentBytes);
  view.setBigUint64(4, BigInt(header.size));
  view.setBigUint64(12, BigInt(index));
  fields[20] = index === segmentCount(header.size, header.segmentBytes) - 1 ? 1 : 0;
  return concat(SEGMENT_LABEL, header.objectId, fields);
}

/** A sealed object being written: its header, and its stored bytes made on demand from the plaintext. */
export class Sealer {
  private cached: { index: number; bytes: Uint8Array } | null = null;

  private constructor(
    readonly header: SealedHeader,
    private readonly key: CryptoKey,
    private readonly plain: Blob,
  ) {}

  /** Seals `plain` (nothing is read yet) with a new data key, object id and salt. */
  static async create(core: Core, encryption: Encryption, plain: Blob, segmentBytes = SEGMENT_BYTES): Promise<Sealer> {
    const dataKey = random(KEY_BYTES);
    try {
      const objectId = random(OBJECT_ID_BYTES);
      const kdf = newKdf(encryption);
      const wrappedKey = await wrapKey(core, encryption, kdf, objectId, dataKey);
      const header = { version: FORMAT_VERSION, kdf, objectId, segmentBytes, size: plain.size, wrappedKey };
      return new Sealer(header, await aesKey(dataKey), plain);
    } finally {
      dataKey.fill(0);
    }
  }

  /** The metadata value (x-amz-meta-shardgate-sealed). */
  get metadata(): string {
    return encodeHeader(this.header);
  }

  get storedSize(): number {
    return storedSize(this.header.size, this.header.segmentBytes);
  }

  /**
   * Stored bytes [start, end): the segments they touch, read from the plaintext and encrypted (in
   * parallel batches). A segment split between two calls (a part boundary) is kept from the first.
   */
  async read(start: number, end: number): Promise<Uint8Array<ArrayBuffer>> {
    const { segmentBytes, size } = this.header;
    const framed = segmentBytes + TAG_BYTES;
    const first = Math.floor(start / framed);
    const last = end > start ? Math.floor((end - 1) / framed) : first;
    const plain = new Uint8Array(await this.plain.slice(first * segmentBytes, Math.min((last + 1) * segmentBytes, size)).arrayBuffer());
    const out = new Uint8Array(end - start);
    for (let batch = first; batch <= last; batch += BATCH) {
      const indices = Array.from({ length: Math.min(BATCH, last + 1 - batch) }, (_, i) => batch + i);
      const sealed = await Promise.all(
        indices.map((index) => {
          if (this.cached?.index === index) return this.cached.bytes;
          const from = (index - first) * segmentBytes;
          const bytes = plain.subarray(from, from + segmentPlainBytes(index, size, segmentBytes));
          const params = { name: "AES-GCM", iv: nonce(index), additionalData: segmentAad(this.header, index) };
          return crypto.subtle.encrypt(params, this.key, bytes).then((c) => new Uint8Array(c));
        }),
      );
      for (const [i, bytes] of sealed.entries()) {
        const at = indices[i] * framed;
        const from = Math.max(start, at);
        const to = Math.min(end, at + bytes.length);
        if (from < to) out.set(bytes.subarray(from - at, to - at), from - start);
      }
      this.cached = { index: indices[indices.length - 1], bytes: sealed[sealed.length - 1] };
    }
    return out;
  }
}

/**
 * The plaintext range [range.start + … ) of stored bytes `cipher` (exactly segments
 * `range.first`..`range.last`): each segment authenticated whole before any of its bytes is
 * passed on. Errors with CorruptObjectError when one fails or the stream is short or long.
 */
export function openingStream(
  cipher: ReadableStream<Uint8Array>,
  key: CryptoKey,
  header: SealedHeader,
  range: CipherRange,
  length: number,
): ReadableStream<Uint8Array> {
  const { segmentBytes, size } = header;
  const reader = cipher.getReader();
  let next = range.first;
  let skip = range.skip;
  let left = length;
  let carry: Uint8Array | null = null;
  /** Exactly `n` more stored bytes, or null when the stream ends first (a view, not a copy, when one piece holds them). */
  const take = async (n: number): Promise<Uint8Array | null> => {
    if (!carry?.length) {
      const { done, value } = await reader.read();
      if (done) return null;
      carry = value;
    }
    if (carry.length >= n) {
      const out = carry.subarray(0, n);
      carry = carry.subarray(n);
      return out;
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      let piece: Uint8Array | null = carry;
      carry = null;
      if (!piece?.length) {
        const { done, value } = await reader.read();
        if (done) return null;
        piece = value;
      }
      const used = Math.min(piece.length, n - filled);
      out.set(piece.subarray(0, used), filled);
      if (used < piece.length) carry = piece.subarray(used);
      filled += used;
    }
    return out;
  };
  /** The next batch of segments' stored bytes, read in order, and their decryption started (`plain`, not awaited here). */
  const readBatch = async (): Promise<{ plain: Promise<Uint8Array> }> => {
    const indices = Array.from({ length: Math.min(BATCH, range.last + 1 - next) }, (_, i) => next + i);
    const stored: Uint8Array[] = [];
    for (const index of indices) {
      const bytes = await take(segmentPlainBytes(index, size, segmentBytes) + TAG_BYTES);
      if (!bytes) throw new CorruptObjectError(`the stored object ends inside segment ${index}: truncated`);
      stored.push(bytes);
    }
    next += indices.length;
    const opened = Promise.all(
      indices.map((index, i) =>
        crypto.subtle
          .decrypt({ name: "AES-GCM", iv: nonce(index), additionalData: segmentAad(header, index) }, key, stored[i] as Uint8Array<ArrayBuffer>)
          .catch(() => {
            throw new CorruptObjectError(`segment ${index} fails authentication: tampered, reordered, truncated or from another object`);
          }),
      ),
    ).then((plain) => concat(...plain.map((p) => new Uint8Array(p))));
    opened.catch(() => {}); // awaited in turn (below); a later batch may fail before an earlier is taken
    return { plain: opened };
  };
  /**
   * The next batch, being read while the one before is decrypted and passed on (its stored bytes,
   * and the source, the direct path's decoding, pulled meanwhile): never awaited before the bytes
   * of the one before have gone out, so a source that stalls holds back only what it has not sent.
   */
  let ahead: Promise<{ plain: Promise<Uint8Array> }> | null = null;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          // Batches until one yields bytes (a pull must enqueue or close, or the reader waits forever).
          for (;;) {
            const batch = ahead ? await ahead : next <= range.last ? await readBatch() : null;
            ahead = null;
            if (!batch) {
              const { done } = carry?.length ? { done: false } : await reader.read();
              if (!done) throw new CorruptObjectError("the stored object is longer than its header says");
              return controller.close();
            }
            if (next <= range.last) {
              ahead = readBatch();
              ahead.catch(() => {}); // awaited at the next pull; a cancel may come first
            }
            // Authenticated whole before any of its bytes is passed on, then trimmed to the range.
            const plain = await batch.plain;
            const out = plain.subarray(skip, skip + left);
            skip = 0;
            left -= out.length;
            if (out.length > 0) return controller.enqueue(out);
          }
        } catch (e) {
          // What is left of the stored bytes is not wanted: stop fetching it.
          await reader.cancel(e).catch(() => {});
          throw e;
        }
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}

/** The data key of a sealed object as a WebCrypto key (a raw data key is taken as it is: only its segments' tags tell whether it is the right one). */
export async function dataKeyOf(core: Core, header: SealedHeader, opening: Opening): Promise<CryptoKey> {
  if ("dataKey" in opening) {
    if (opening.dataKey.length !== KEY_BYTES) throw new RangeError(`a data key is ${KEY_BYTES} bytes, got ${opening.dataKey.length}`);
    return aesKey(opening.dataKey);
  }
  const raw = await openDataKey(core, header, opening);
  try {
    return await aesKey(raw);
  } finally {
    raw.fill(0);
  }
}
