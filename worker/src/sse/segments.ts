// Encrypted parts as streams (docs/storage-format.md, "Encryption"): a part's plaintext in
// segments of `segmentBytes`, each stored as its AES-256-GCM ciphertext followed by the 16-byte tag,
// with the segment's number as the nonce. With segments one stored chunk long, a range read
// fetches and decrypts just the chunks it covers, and heal and scrub see ordinary shard files.
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
 * `observe` sees every plaintext byte first (checksums, MD5). Fails if the body is not `size` long.
 */
export function encryptingStream(
  plain: ReadableStream<Uint8Array> | null,
  size: number,
  key: CryptoKey,
  segmentBytes: number,
  observe: (piece: Uint8Array) => void,
): ReadableStream<Uint8Array> {
  const reader = plain?.getReader() ?? null;
  let held = new Uint8Array(0);
  let segment = 0;
  let read = 0;
  let ended = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // Gather up to a batch of whole segments (or the rest), then encrypt them in parallel.
        while (held.length < BATCH * segmentBytes && !ended) {
          const r = reader ? await reader.read() : { done: true as const, value: undefined };
          if (r.done) {
            ended = true;
            break;
          }
          observe(r.value);
          const joined = new Uint8Array(held.length + r.value.length);
          joined.set(held);
          joined.set(r.value, held.length);
          held = joined;
        }
        if (held.length === 0) {
          if (read !== size) return controller.error(new Error("the body is shorter than its length"));
          return controller.close();
        }
        const take = Math.min(held.length, BATCH * segmentBytes);
        const batch = held.subarray(0, take);
        held = held.slice(take);
        read += take;
        if (read > size) return controller.error(new Error("the body is longer than its length"));
        const sealed = await Promise.all(
          Array.from({ length: Math.ceil(take / segmentBytes) }, (_, i) =>
            crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce(segment + i) }, key, batch.subarray(i * segmentBytes, (i + 1) * segmentBytes)),
          ),
        );
        segment += sealed.length;
        const out = new Uint8Array(sealed.reduce((n, s) => n + s.byteLength, 0));
        let at = 0;
        for (const s of sealed) {
          out.set(new Uint8Array(s), at);
          at += s.byteLength;
        }
        controller.enqueue(out);
        if (ended && held.length === 0) {
          if (read !== size) return controller.error(new Error("the body is shorter than its length"));
          controller.close();
        }
      },
      cancel: (reason) => reader?.cancel(reason),
    },
    { highWaterMark: 0 },
  );
}
