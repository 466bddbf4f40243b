// Temporary credentials (STS GetSessionToken / AssumeRole, docs/access.md): an access key id, a
// secret and a session token. Nothing is stored: the token is the temporary key sealed under a key
// derived from the master key (auth/secret-box.ts, AES-256-GCM, its own purpose), bound to the
// temporary key id as associated data, and holds who it stands for (the parent key and a fingerprint
// of its secret at the time), its secret, when it was issued and when it expires. A request signed
// with the temporary secret carries the token; the gateway opens it, checks the expiry, and signs
// with the secret inside, acting as the parent key (services/sessions.ts checks the parent).
import { constantTimeEqual, hmac, importHmacKey, randomText, toHex } from "./crypto";
import { open, seal } from "./secret-box";

/** Temporary key ids: AWS's prefix for them. No access key the gateway makes starts so ("SG…"). */
export const TEMPORARY_KEY_PREFIX = "ASIA";
/** A token longer than this is refused before anything is decoded. */
export const MAX_TOKEN_LENGTH = 4096;

const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const SECRET_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** What a session token says. */
export interface SessionClaims {
  /** The temporary access key id. */
  accessKeyId: string;
  /** The key it acts as: its rights, its bucket policies, its revocation. */
  parentId: string;
  /** secretFingerprint of the parent's secret when the session was issued: a new secret ends the session. */
  parentFingerprint: string;
  secretAccessKey: string;
  /** ms since the epoch */
  issued: number;
  /** ms since the epoch */
  expires: number;
}

export interface TemporaryCredentials extends SessionClaims {
  sessionToken: string;
}

/** Why a token was refused. */
export type TokenFailure = "invalid" | "expired";

/**
 * What a session token holds of its parent key's secret: the first 16 bytes of
 * HMAC-SHA-256(secret, "shardgate session"), hex. Nothing of the secret can be learnt from it, and
 * a changed secret no longer matches it.
 */
export async function secretFingerprint(secret: string): Promise<string> {
  return toHex(new Uint8Array(await hmac(await importHmacKey(secret), "shardgate session"), 0, 16));
}

/** Whether `fingerprint` (from a token) is that of `secret`, compared in constant time. */
export async function fingerprintMatches(fingerprint: string, secret: string): Promise<boolean> {
  return constantTimeEqual(await secretFingerprint(secret), fingerprint);
}

/** Makes temporary credentials for the parent key, valid from `issued` until `expires` (ms). */
export async function mintSession(
  sealingKey: string,
  parent: Pick<SessionClaims, "parentId" | "parentFingerprint" | "issued" | "expires">,
): Promise<TemporaryCredentials> {
  const claims: SessionClaims = {
    accessKeyId: TEMPORARY_KEY_PREFIX + randomText(ID_ALPHABET, 16),
    ...parent,
    secretAccessKey: randomText(SECRET_ALPHABET, 40),
  };
  const body = JSON.stringify({ p: claims.parentId, f: claims.parentFingerprint, s: claims.secretAccessKey, i: claims.issued, x: claims.expires });
  return { ...claims, sessionToken: await seal(sealingKey, "session tokens v1", claims.accessKeyId, body) };
}

/**
 * What `token` says for the temporary key `accessKeyId`, or why not: "invalid" when it was not made
 * by this gateway for that key id (or is malformed), "expired" once `now` is past its expiry.
 */
export async function openSession(sealingKey: string, accessKeyId: string, token: string, now: number): Promise<SessionClaims | TokenFailure> {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH || !accessKeyId.startsWith(TEMPORARY_KEY_PREFIX)) return "invalid";
  let fields: unknown;
  try {
    fields = JSON.parse(await open(sealingKey, "session tokens v1", accessKeyId, token));
  } catch {
    return "invalid";
  }
  // Tokens of earlier versions (no fingerprint, no issue time) are invalid: they were at most an hour long.
  const { p, f, s, i, x } = (fields ?? {}) as { p?: unknown; f?: unknown; s?: unknown; i?: unknown; x?: unknown };
  if (typeof p !== "string" || typeof f !== "string" || typeof s !== "string" || typeof i !== "number" || typeof x !== "number") return "invalid";
  if (now >= x) return "expired";
  return { accessKeyId, parentId: p, parentFingerprint: f, secretAccessKey: s, issued: i, expires: x };
}
