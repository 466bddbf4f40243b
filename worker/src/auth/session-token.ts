// Temporary credentials (STS GetSessionToken / AssumeRole, docs/access.md): an access key id, a
// secret and a session token. Nothing is stored: the token is the temporary key sealed under a key
// derived from the master key (auth/secret-box.ts, AES-256-GCM, its own purpose), bound to the
// temporary key id as associated data, and holds who it stands for (the parent key), its secret and
// when it expires. A request signed with the temporary secret carries the token; the gateway opens
// it, checks the expiry, and signs with the secret inside, acting as the parent key.
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
  secretAccessKey: string;
  /** ms since the epoch */
  expires: number;
}

export interface TemporaryCredentials extends SessionClaims {
  sessionToken: string;
}

/** Why a token was refused. */
export type TokenFailure = "invalid" | "expired";

/** `n` characters drawn uniformly from `alphabet` (rejection sampling: no modulo bias). */
function randomText(alphabet: string, n: number): string {
  const limit = 256 - (256 % alphabet.length);
  let out = "";
  while (out.length < n) {
    for (const b of crypto.getRandomValues(new Uint8Array(n * 2))) {
      if (b < limit && out.length < n) out += alphabet[b % alphabet.length];
    }
  }
  return out;
}

/** Makes temporary credentials for `parentId`, valid until `expires` (ms). */
export async function mintSession(sealingKey: string, parentId: string, expires: number): Promise<TemporaryCredentials> {
  const claims: SessionClaims = {
    accessKeyId: TEMPORARY_KEY_PREFIX + randomText(ID_ALPHABET, 16),
    parentId,
    secretAccessKey: randomText(SECRET_ALPHABET, 40),
    expires,
  };
  const body = JSON.stringify({ p: claims.parentId, s: claims.secretAccessKey, x: claims.expires });
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
  const { p, s, x } = (fields ?? {}) as { p?: unknown; s?: unknown; x?: unknown };
  if (typeof p !== "string" || typeof s !== "string" || typeof x !== "number") return "invalid";
  if (now >= x) return "expired";
  return { accessKeyId, parentId: p, secretAccessKey: s, expires: x };
}
