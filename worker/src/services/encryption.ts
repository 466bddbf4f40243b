// Server-side encryption of objects (docs/storage-format.md, "Encryption"): what a new version is
// encrypted with (the request's SSE-S3 or SSE-C, else the bucket's default), the object key of a
// stored version, writing a part encrypted and reading one decrypted.
import { requireMasterKey } from "../auth/secret-box";
import { hex } from "../shared/bytes";
import type { GatewayConfig } from "../config";
import type { Core, Encryption } from "../shared/core-api";
import { cachedSetting } from "./bucket-settings";
import { S3Error } from "../s3-error";
import { newPartSalt, newSseCKey, newSseS3Key, openSseCKey, openSseS3Key, partKey } from "../sse/object-keys";
import { BATCH, encryptingStream, nonce, segmentBytesFor, storedSize, TAG_BYTES } from "../sse/segments";
import type { RangeSource } from "../shared/read-part";
import { type PartSource, type WrittenPart, writePart } from "../storage/write-part";
import type { Env } from "../config";

/** What a request asks for: SSE-S3, or SSE-C with the customer's 256-bit key. */
export type SseRequest = { mode: "SSE-S3" } | { mode: "SSE-C"; key: Uint8Array; keyMd5: string };

/** An encryption ready to write with: the manifest's record (no part salts yet) and the object key. */
export interface Cipher {
  encryption: Omit<Encryption, "partSalts">;
  objectKey: Uint8Array;
}

/** Whether the bucket encrypts new objects by default (PutBucketEncryption; cached: bucket-settings.ts). */
export async function encryptsByDefault(env: Env, bucket: string): Promise<boolean> {
  return (await cachedSetting(env, bucket, "encryption")) !== null;
}

/** The cipher of a new version: the request's, else SSE-S3 when the bucket encrypts by default, else none. */
export async function newCipher(env: Env, config: GatewayConfig, bucket: string, request: SseRequest | null): Promise<Cipher | null> {
  const mode = request ?? ((await encryptsByDefault(env, bucket)) ? ({ mode: "SSE-S3" } as const) : null);
  if (!mode) return null;
  const segmentBytes = segmentBytesFor(config.chunkBytes);
  if (mode.mode === "SSE-S3") {
    const { objectKey, sealed } = await newSseS3Key(requireMasterKey(config.masterKey, "Server-side encryption keys"));
    return { encryption: { mode: "SSE-S3", segmentBytes, key: sealed, keyCheck: "" }, objectKey };
  }
  const { objectKey, salt, check } = await newSseCKey(mode.key);
  return { encryption: { mode: "SSE-C", segmentBytes, key: salt, keyCheck: check }, objectKey };
}

/**
 * The object key of a stored version: opened with the master key (SSE-S3) or derived from the
 * customer's key (SSE-C: 400 without it, 403 AccessDenied when it is not the object's key).
 * `master`: GatewayConfig.masterKey.
 */
export async function objectKeyOf(master: string | null, encryption: Encryption, customerKey: Uint8Array | null): Promise<Uint8Array> {
  if (encryption.mode === "SSE-S3") return openSseS3Key(requireMasterKey(master, "Server-side encryption keys"), encryption.key);
  if (!customerKey) {
    throw new S3Error(
      "InvalidRequest",
      "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.",
    );
  }
  return openSseCKey(customerKey, encryption.key, encryption.keyCheck);
}

/** A written part and the MD5 of its plaintext (null when not asked for). */
export interface WrittenObjectPart {
  written: WrittenPart;
  md5: Uint8Array | null;
  /** The part's key salt when encrypted. */
  salt: string | null;
}

/**
 * Writes `size` plaintext bytes of `body` as one part: as they are, or encrypted under `cipher`
 * (segments of its size; `observe` sees the plaintext). One MD5 is computed where it can be: the
 * plaintext's for plain and SSE-S3 parts (their ETag), the stored bytes' for SSE-C (its ETag, which
 * must not be the plaintext's), and the plaintext's too for SSE-C only with `plainMd5` (a
 * Content-MD5 to check).
 */
export async function writeObjectPart(
  config: GatewayConfig,
  core: Core,
  body: ReadableStream<Uint8Array> | null,
  size: number,
  observe: (piece: Uint8Array) => void,
  cipher: Cipher | null,
  source: PartSource = "request",
  plainMd5 = false,
): Promise<WrittenObjectPart> {
  if (!cipher) {
    const written = await writePart(config, core, body, size, observe, source);
    return { written, md5: written.md5, salt: null };
  }
  const customer = cipher.encryption.mode === "SSE-C";
  const salt = newPartSalt();
  const key = await partKey(cipher.objectKey, salt);
  const md5 = !customer || plainMd5 ? new crypto.DigestStream("MD5") : null;
  const md5Writer = md5?.getWriter();
  const segmentBytes = cipher.encryption.segmentBytes;
  const encrypted = encryptingStream(body, size, key, segmentBytes, async (piece) => {
    observe(piece);
    await md5Writer?.write(piece);
  });
  const written = await writePart(config, core, encrypted, storedSize(size, segmentBytes), () => {}, source, customer);
  await md5Writer?.close();
  return { written, md5: md5 ? new Uint8Array(await md5.digest) : null, salt };
}

/**
 * The ETag of a part or single-part object: the MD5 of its plaintext, as S3 answers for plain and
 * SSE-S3 objects; for SSE-C the MD5 of what is stored, so that listings never reveal the digest
 * of data whose key the gateway does not hold.
 */
export function objectEtag(cipher: Cipher | null, part: WrittenObjectPart): string {
  return hex(cipher?.encryption.mode === "SSE-C" ? part.written.md5 : (part.md5 as Uint8Array));
}

/** The manifest's record of a cipher, with the salts of the parts written under it. */
export function encryptionOf(cipher: Cipher, salts: string[]): Encryption {
  return { ...cipher.encryption, partSalts: salts };
}

/** The cipher of a stored version (to write more parts or copies under the same key). */
export async function cipherOf(master: string | null, encryption: Encryption, customerKey: Uint8Array | null): Promise<Cipher> {
  const { partSalts: _, ...rest } = encryption;
  return { encryption: rest, objectKey: await objectKeyOf(master, encryption, customerKey) };
}

/**
 * Plaintext bytes [skip, skip + length) of the segments that `stored` yields, starting with
 * segment `first`, decrypted a batch at a time. Whole segments are decrypted straight from the lent
 * pieces (WebCrypto copies its input when called); only a segment split across two pieces is
 * gathered first. A batch's decryptions are all issued before any is awaited (workerd runs them on
 * the isolate's thread as they are called, so this saves nothing but awaits). The batch is joined
 * into one buffer that the source reuses, as its pieces are lent (the runtime's write() copies); a
 * batch of one segment is lent as WebCrypto returned it. A segment that fails authentication
 * fails the read (its chunk checksums matched, so only someone rewriting it knowingly gets here).
 * docs/benchmarks.md, "Encryption": what a WebCrypto call costs and what was tried.
 */
export function decryptingSource(stored: RangeSource, key: CryptoKey, segmentBytes: number, first: number, skip: number, length: number): RangeSource {
  return new DecryptingSource(stored, key, segmentBytes + TAG_BYTES, first, skip, length);
}

class DecryptingSource implements RangeSource {
  /** A segment split across two stored pieces, gathered here. */
  private readonly partial: Uint8Array;
  private partialLength = 0;
  /** Decryptions issued and not yet awaited, in segment order. */
  private pending: Promise<ArrayBuffer>[] = [];
  private ended = false;
  /** The buffer a batch of several segments is joined into, reused. */
  private joined = new Uint8Array(0);
  /** `take` bound once, as stored.next's callback. */
  private readonly taker = (piece: Uint8Array): object => this.take(piece);

  constructor(
    private readonly stored: RangeSource,
    private readonly key: CryptoKey,
    private readonly framed: number,
    private segment: number,
    private toSkip: number,
    private left: number,
  ) {
    this.partial = new Uint8Array(framed);
  }

  async next<T extends object>(use: (piece: Uint8Array) => T): Promise<T | null> {
    while (this.left > 0) {
      const plain = await this.decryptBatch();
      if (plain === null) return null;
      const from = Math.min(this.toSkip, plain.length);
      this.toSkip -= from;
      const piece = plain.subarray(from, from + Math.min(this.left, plain.length - from));
      this.left -= piece.length;
      if (piece.length > 0) return use(piece);
    }
    return null;
  }

  close(): void {
    this.stored.close();
  }

  /** The next batch of segments, decrypted (joined when more than one), or null at the end. */
  private async decryptBatch(): Promise<Uint8Array | null> {
    while (this.pending.length < BATCH && !this.ended) {
      if ((await this.stored.next(this.taker)) === null) this.ended = true;
    }
    if (this.ended && this.partialLength > 0) {
      this.open(this.partial.subarray(0, this.partialLength)); // the part's last, shorter segment
      this.partialLength = 0;
    }
    if (this.pending.length === 0) return null;
    const batch = this.pending;
    this.pending = [];
    const opened = await Promise.all(batch).catch(() => {
      throw new Error("an encrypted segment failed authentication");
    });
    return opened.length === 1 ? new Uint8Array(opened[0] as ArrayBuffer) : this.join(opened);
  }

  /** Issues the decryption of whole segments of a lent piece; keeps a split one's start. */
  private take(piece: Uint8Array): object {
    const framed = this.framed;
    let at = 0;
    if (this.partialLength > 0) {
      const n = Math.min(framed - this.partialLength, piece.length);
      this.partial.set(piece.subarray(0, n), this.partialLength);
      this.partialLength += n;
      at = n;
      if (this.partialLength === framed) {
        this.open(this.partial);
        this.partialLength = 0;
      }
    }
    for (; piece.length - at >= framed; at += framed) this.open(piece.subarray(at, at + framed));
    if (at < piece.length) {
      this.partial.set(piece.subarray(at), 0);
      this.partialLength = piece.length - at;
    }
    return {};
  }

  private open(bytes: Uint8Array): void {
    this.pending.push(crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce(this.segment++) }, this.key, bytes));
  }

  private join(opened: ArrayBuffer[]): Uint8Array {
    const total = opened.reduce((n, o) => n + o.byteLength, 0);
    if (this.joined.length < total) this.joined = new Uint8Array(total);
    let at = 0;
    for (const o of opened) {
      this.joined.set(new Uint8Array(o), at);
      at += o.byteLength;
    }
    return this.joined.subarray(0, total);
  }
}
