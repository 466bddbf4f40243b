// The keys of server-side encryption (docs/storage-format.md, "Encryption"). Every object version
// has its own 256-bit object key; every part of it is encrypted with a key derived from that and a
// random salt of the part, so segment numbers alone make GCM nonces unique.
//   SSE-S3: the object key is random; the manifest keeps it sealed under a key derived from the
//           master key (SHARDGATE_MASTER_KEY).
//   SSE-C:  the object key is derived from the customer's key and a random salt kept in the
//           manifest, with an HMAC of the customer's key to tell a wrong one; the customer's key
//           itself is never stored.
import { constantTimeEqual } from "../auth/crypto";
import { fromBase64, toBase64 } from "../shared/bytes";
import { S3Error } from "../s3-error";

const encoder = new TextEncoder();

async function hkdf(secret: Uint8Array, salt: Uint8Array, info: string, usage: "aes" | "raw"): Promise<CryptoKey | Uint8Array> {
  const base = await crypto.subtle.importKey("raw", secret, "HKDF", false, ["deriveBits", "deriveKey"]);
  const params = { name: "HKDF", hash: "SHA-256", salt, info: encoder.encode(info) };
  if (usage === "aes") return crypto.subtle.deriveKey(params, base, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
  return new Uint8Array(await crypto.subtle.deriveBits(params, base, 256));
}

/** The key of one part: AES-256-GCM, from the object key and the part's random salt. */
export async function partKey(objectKey: Uint8Array, salt: string): Promise<CryptoKey> {
  return (await hkdf(objectKey, fromBase64(salt), "shardgate part key", "aes")) as CryptoKey;
}

/** A new part salt (base64). */
export function newPartSalt(): string {
  return toBase64(crypto.getRandomValues(new Uint8Array(16)));
}

/** Key-encryption keys by master key (values, one per isolate). */
const keks = new Map<string, CryptoKey>();

async function kek(master: string): Promise<CryptoKey> {
  let key = keks.get(master);
  if (!key) {
    key = (await hkdf(encoder.encode(master), encoder.encode("shardgate"), "sse-s3 object keys v1", "aes")) as CryptoKey;
    keks.set(master, key);
  }
  return key;
}

/** A new SSE-S3 object key and its sealed form for the manifest. */
export async function newSseS3Key(master: string): Promise<{ objectKey: Uint8Array; sealed: string }> {
  const objectKey = crypto.getRandomValues(new Uint8Array(32));
  const nonce = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, await kek(master), objectKey));
  const out = new Uint8Array(12 + sealed.length);
  out.set(nonce);
  out.set(sealed, 12);
  return { objectKey, sealed: toBase64(out) };
}

/** Opens an SSE-S3 object key sealed by newSseS3Key. */
export async function openSseS3Key(master: string, sealed: string): Promise<Uint8Array> {
  const bytes = fromBase64(sealed);
  try {
    return new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.subarray(0, 12) }, await kek(master), bytes.subarray(12)));
  } catch {
    throw new Error("an SSE-S3 object key does not open under the master key (was it changed?)");
  }
}

async function hmac(key: Uint8Array, text: string, salt: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const data = new Uint8Array([...encoder.encode(text), ...salt]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data));
}

/** A new SSE-C object: its salt, key check, and object key, from the customer's key. */
export async function newSseCKey(customerKey: Uint8Array): Promise<{ objectKey: Uint8Array; salt: string; check: string }> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const objectKey = (await hkdf(customerKey, salt, "shardgate sse-c object key", "raw")) as Uint8Array;
  return { objectKey, salt: toBase64(salt), check: toBase64(await hmac(customerKey, "shardgate sse-c key check", salt)) };
}

/** The object key of an SSE-C object, or 403 AccessDenied when `customerKey` is not its key. */
export async function openSseCKey(customerKey: Uint8Array, salt: string, check: string): Promise<Uint8Array> {
  const s = fromBase64(salt);
  const expected = toBase64(await hmac(customerKey, "shardgate sse-c key check", s));
  if (!constantTimeEqual(expected, check)) throw new S3Error("AccessDenied", "The provided customer key does not match the key the object was encrypted with.");
  return (await hkdf(customerKey, s, "shardgate sse-c object key", "raw")) as Uint8Array;
}
