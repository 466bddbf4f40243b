// Small crypto helpers for request authentication: hex, SHA-256, HMAC-SHA256 (all WebCrypto) and a
// constant-time comparison for signatures.

const encoder = new TextEncoder();

/** SHA-256 of the empty string, hex. */
export const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const HEX = "0123456789abcdef";

export function toHex(data: ArrayBuffer | Uint8Array): string {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  let out = "";
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    out += HEX[b >>> 4]! + HEX[b & 15]!;
  }
  return out;
}

export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", typeof data === "string" ? encoder.encode(data) : data));
}

/** An HMAC-SHA256 signing key from raw key bytes (or a string, UTF-8). */
export function importHmacKey(raw: ArrayBuffer | Uint8Array | string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", typeof raw === "string" ? encoder.encode(raw) : raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
}

export async function hmac(key: CryptoKey, data: string): Promise<ArrayBuffer> {
  return crypto.subtle.sign("HMAC", key, encoder.encode(data));
}

export async function hmacHex(key: CryptoKey, data: string): Promise<string> {
  return toHex(await hmac(key, data));
}

/**
 * Compares two strings in time that depends only on the length of `expected`: every position is
 * looked at, with no early exit on the first difference. A different length is a mismatch (the
 * length of a signature is public; its content is not).
 */
export function constantTimeEqual(expected: string, provided: string): boolean {
  let diff = expected.length ^ provided.length;
  for (let i = 0; i < expected.length; i++) {
    // charCodeAt past the end is NaN, which `| 0` turns into 0: still one comparison per position.
    diff |= expected.charCodeAt(i) ^ (provided.charCodeAt(i) | 0);
  }
  return diff === 0;
}

/**
 * Incremental SHA-256 over a byte stream written in pieces, with workerd's `crypto.DigestStream`
 * (never holds the data; each piece is hashed as it is written).
 */
export class Sha256Stream {
  private readonly stream = new crypto.DigestStream("SHA-256");
  private readonly writer = this.stream.getWriter();

  constructor() {
    // Aborting rejects these; nobody else waits on them.
    this.stream.digest.catch(() => {});
    this.writer.closed.catch(() => {});
  }

  async update(piece: Uint8Array): Promise<void> {
    if (piece.byteLength > 0) await this.writer.write(piece);
  }

  async hex(): Promise<string> {
    await this.writer.close();
    return toHex(await this.stream.digest);
  }

  /** Releases the stream when it will not be finished. */
  abort(): void {
    this.writer.abort().catch(() => {});
  }
}

/** `n` characters drawn uniformly from `alphabet` (rejection sampling: no modulo bias). */
export function randomText(alphabet: string, n: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < n) {
    for (const b of crypto.getRandomValues(new Uint8Array(n * 2))) {
      if (b < limit && out.length < n) out += alphabet[b % alphabet.length];
    }
  }
  return out;
}
