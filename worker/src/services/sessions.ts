// Temporary credentials (docs/access.md "Temporary credentials"): issuing them for a key, and
// resolving a request signed with one to the secret it signs with and the key it acts as. Nothing
// is stored per session (auth/session-token.ts): a temporary key has exactly its parent key's
// rights, bucket policies name it by its parent's id, and it stops working with its parent (a
// disabled or deleted key is refused within KEY_CACHE_MS, services/access-keys.ts).
import { masterKeyOf } from "../auth/secret-box";
import { mintSession, openSession, TEMPORARY_KEY_PREFIX, type TemporaryCredentials } from "../auth/session-token";
import type { Env } from "../config";
import { S3Error } from "../s3-error";
import { type ResolvedKey, signerOf } from "./access-keys";

/** Shortest and longest validity (s) of temporary credentials: AWS's minimum, at most an hour. */
export const MIN_SESSION_SECONDS = 900;
export const MAX_SESSION_SECONDS = 3600;

type Root = { accessKeyId: string; secretAccessKey: string };

/**
 * What tokens are sealed under: the master key, or without one the root secret (both known to the
 * gateway alone). Changing it ends every session at once.
 */
function sealingKey(env: Pick<Env, "SHARDGATE_MASTER_KEY">, root: Root): string {
  return masterKeyOf(env) ?? `root secret\n${root.secretAccessKey}`;
}

/** Temporary credentials for the key `parentId`, valid for `seconds`. */
export function issueSession(env: Env, root: Root, parentId: string, seconds: number, now = Date.now()): Promise<TemporaryCredentials> {
  return mintSession(sealingKey(env, root), parentId, now + seconds * 1000);
}

/** Whether `id` names a temporary key (which never exists without its token). */
export function isTemporaryKeyId(id: string, root: Root): boolean {
  return id !== root.accessKeyId && id.startsWith(TEMPORARY_KEY_PREFIX);
}

/**
 * The key a request signed with temporary key `id` and session `token` signs with: the temporary
 * secret, acting as its parent key; null when the parent is gone or disabled (InvalidAccessKeyId).
 * Throws InvalidToken for a token this gateway did not make for `id`, ExpiredToken past its expiry.
 */
export async function sessionSignerOf(env: Env, root: Root, id: string, token: string, now = Date.now()): Promise<ResolvedKey | null> {
  const claims = await openSession(sealingKey(env, root), id, token, now);
  if (claims === "invalid") throw new S3Error("InvalidToken", "The provided token is malformed or otherwise invalid.");
  if (claims === "expired") throw new S3Error("ExpiredToken", "The provided token has expired.");
  const parent = await signerOf(env, root, claims.parentId);
  return parent ? { secret: claims.secretAccessKey, principal: parent.principal, expires: claims.expires } : null;
}
