// Sealing access keys' secrets under the master key (SHARDGATE_MASTER_KEY), so that the key store's
// storage only ever holds ciphertext. AES-256-GCM with a random 96-bit nonce per secret; the key
// is derived from the master key with HKDF-SHA-256, and the access key id is the associated data,
// so a sealed secret copied onto another key's row does not open. Format: "v1." base64(nonce ‖
// ciphertext ‖ tag).
import { fromBase64, toBase64 } from "../shared/bytes";
import { S3Error } from "../s3-error";

const VERSION = "v1.";
const NONCE_BYTES = 12;
/** A master key shorter than this is refused (config.ts GatewayConfig.masterKey is then null): it would be guessable. */
export const MIN_MASTER_KEY_LENGTH = 32;

/** The master key (GatewayConfig.masterKey), or the 400 that says `what` needs one. */
export function requireMasterKey(master: string | null, what: string): string {
  if (master === null) {
    throw new S3Error("InvalidRequest", `${what} need a master key: set SHARDGATE_MASTER_KEY to a secret of ${MIN_MASTER_KEY_LENGTH} characters or more.`);
  }
  return master;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What a derived key seals: each purpose has its own key, so one's ciphertext never opens as another's. */
export type SealPurpose = "access key secrets v1" | "session tokens v1" | "node secrets v1";

/** Derived keys by purpose and master key (one per isolate: the master key does not change while it runs). */
const derived = new Map<string, CryptoKey>();

async function boxKey(master: string, purpose: SealPurpose = "access key secrets v1"): Promise<CryptoKey> {
  const id = `${purpose}\n${master}`;
  const known = derived.get(id);
  if (known) return known;
  const raw = await crypto.subtle.importKey("raw", encoder.encode(master), "HKDF", false, ["deriveKey"]);
  const key = await crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: encoder.encode("shardgate"), info: encoder.encode(purpose) },
    raw,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
  derived.set(id, key);
  return key;
}

/** Seals `secret` for the key `keyId`. */
export function sealSecret(master: string, keyId: string, secret: string): Promise<string> {
  return seal(master, "access key secrets v1", keyId, secret);
}

/** Opens a sealed secret of the key `keyId`; throws when it was not sealed for it under `master`. */
export function openSecret(master: string, keyId: string, sealed: string): Promise<string> {
  return open(master, "access key secrets v1", keyId, sealed);
}

/** AES-GCM with `nonce`, bound to `context` (associated data). */
const gcm = (nonce: Uint8Array, context: string) => ({ name: "AES-GCM", iv: nonce, additionalData: encoder.encode(context) });

/** Seals `plain` under the key of `purpose`, bound to `context` (associated data): "v1." base64(nonce ‖ ciphertext ‖ tag). */
export async function seal(master: string, purpose: SealPurpose, context: string, plain: string): Promise<string> {
  const nonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
  const sealed = await crypto.subtle.encrypt(gcm(nonce, context), await boxKey(master, purpose), encoder.encode(plain));
  const out = new Uint8Array(NONCE_BYTES + sealed.byteLength);
  out.set(nonce);
  out.set(new Uint8Array(sealed), NONCE_BYTES);
  return VERSION + toBase64(out);
}

/** Opens what `seal` made for `purpose` and `context` under `master`; throws otherwise. */
export async function open(master: string, purpose: SealPurpose, context: string, sealed: string): Promise<string> {
  if (!sealed.startsWith(VERSION)) throw new Error("unknown sealed secret format");
  const bytes = fromBase64(sealed.slice(VERSION.length));
  const plain = await crypto.subtle.decrypt(gcm(bytes.subarray(0, NONCE_BYTES), context), await boxKey(master, purpose), bytes.subarray(NONCE_BYTES));
  return decoder.decode(plain);
}
