// Encrypted parts as streams (docs/storage-format.md, "Encryption"): a part's plaintext in
// segments of `segmentBytes`, each stored as its AES-256-GCM ciphertext followed by the 16-byte tag,
// with the segment's number as the nonce. With segments one stored chunk long, a range read
// fetches and decrypts just the chunks it covers, and heal and scrub see ordinary shard files.
import { PieceReader } from "../shared/piece-reader";

export const TAG_BYTES = 16;
/** Segments encrypted or decrypted per batch (in parallel; about 256 KiB at the default chunk size). */
export const BATCH = 16;

/** Plaintext per segment for shard files of `chunkBytes` chunks: segment and tag fill one chunk. */
export function segmentBytesFor(chunkBytes: number): number {
  return chunkBytes - TAG_BYTES;
}

/** Stored bytes of `plain` plaintext bytes (as core/src/manifest.rs `stored_size`). */
export function storedSize(plain: number, segmentBytes: number): number {
  return plain + Math.ceil(plain / segmentBytes) * TAG_BYTES;
}

/** Plaintext bytes stored in `stored` bytes (as core/src/manifest.rs `plain_size`, which checks it). */
export function plainSize(stored: number, segmentBytes: number): number {
  const framed = segmentBytes + TAG_BYTES;
  const rest = stored % framed;
  return Math.floor(stored / framed) * segmentBytes + (rest === 0 ? 0 : rest - TAG_BYTES);
}

/** The GCM nonce of segment `segment` of a part (each part has its own key). */
export function nonce(segment: number): Uint8Array {
  const iv = new Uint8Array(12);
  new DataView(iv.buffer).setBigUint64(4, BigInt(segment));
  return iv;
}

/**
 * The ciphertext of `plain` (exactly `size` bytes) under `key`: what the write path stores.
 * `observe` sees every plaintext byte first (checksums, MD5), and is awaited before the buffer is reused. Fails if the body is not `size` long.
 * The body is read a batch of segments at a time (one large read, not the runtime's 4 KiB pieces),
 * and the batch's segments are encrypted in parallel.
 */
export function encryptingStream(
  plain: ReadableStream<Uint8Array> | null,
  size: number,
  key: CryptoKey,
  segmentBytes: number,
  observe: (piece: Uint8Array) => void | Promise<void>,
): ReadableStream<Uint8Array> {
  const batchBytes = BATCH * segmentBytes;
  const reader = plain ? new PieceReader(plain, { pieceBytes: batchBytes, reuse: false }) : null;
  let batch = new Uint8Array(0);
  let filled = 0;
  let carry: Uint8Array | null = null;
  let segment = 0;
  let read = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // One batch: whole segments, or what is left. A byte stream fills it in one go; another
        // stream's pieces are gathered (and a piece that overhangs carried to the next batch).
        const want = Math.min(batchBytes, size - read);
        if (want <= 0) {
          if (reader && !reader.ended && (carry?.length || (await reader.read(1)))) return controller.error(new Error("the body is longer than its length"));
          return controller.close();
        }
        if (batch.length !== want) batch = new Uint8Array(want);
        filled = 0;
        while (filled < want) {
          const piece = carry ?? (reader ? await reader.read(want - filled) : null);
          carry = null;
          if (!piece) return controller.error(new Error("the body is shorter than its length"));
          const take = Math.min(piece.length, want - filled);
          batch.set(piece.subarray(0, take), filled);
          if (take < piece.length) carry = piece.subarray(take);
          filled += take;
        }
        await observe(batch);
        read += want;
        const count = Math.ceil(want / segmentBytes);
        const sealed = await Promise.all(
          Array.from({ length: count }, (_, i) =>
            crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce(segment + i) }, key, batch.subarray(i * segmentBytes, (i + 1) * segmentBytes)),
          ),
        );
        segment += count;
        const out = new Uint8Array(want + count * TAG_BYTES);
        let at = 0;
        for (const s of sealed) {
          out.set(new Uint8Array(s), at);
          at += s.byteLength;
        }
        controller.enqueue(out);
      },
      cancel: (reason) => reader?.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
