// Temporary credentials (docs/access.md "Temporary credentials"): issuing them for a key, and
// resolving a request signed with one to the secret it signs with and the key it acts as. Nothing
// is stored per session (auth/session-token.ts): a temporary key has exactly its parent key's
// rights, bucket policies name it by its parent's id, and it stops working with its parent (a
// disabled or deleted key is refused within KEY_CACHE_MS, services/access-keys.ts), for good:
// the token holds a fingerprint of the parent's secret and its issue time, so a new secret, or the
// key enabled again after it was disabled, does not bring it back.
import { fingerprintMatches, mintSession, openSession, secretFingerprint, TEMPORARY_KEY_PREFIX, type TemporaryCredentials } from "../auth/session-token";
import type { Env } from "../config";
import { S3Error } from "../s3-error";
import { type ResolvedKey, signerOf } from "./access-keys";

/** Shortest and longest validity (s) of temporary credentials: AWS's minimum, at most an hour. */
export const MIN_SESSION_SECONDS = 900;
export const MAX_SESSION_SECONDS = 3600;

type Root = { accessKeyId: string; secretAccessKey: string };

/**
 * What tokens are sealed under: the master key, or without one the root secret (both known to the
 * gateway alone). Changing it ends every session at once; changing a parent key's secret ends that
 * key's (the fingerprint in the token).
 */
function sealingKey(master: string | null, root: Root): string {
  return master ?? `root secret\n${root.secretAccessKey}`;
}

/** Temporary credentials for the key `parentId`, valid for `seconds` (`master`: GatewayConfig.masterKey). */
export async function issueSession(
  env: Env,
  master: string | null,
  root: Root,
  parentId: string,
  seconds: number,
  now = Date.now(),
): Promise<TemporaryCredentials> {
  // The key that just signed the request: known to this isolate, no lookup.
  const parent = await signerOf(env, master, root, parentId);
  if (!parent) throw new S3Error("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.");
  return mintSession(sealingKey(master, root), {
    parentId,
    parentFingerprint: await secretFingerprint(parent.secret),
    issued: now,
    expires: now + seconds * 1000,
  });
}

/** Whether `id` names a temporary key (which never exists without its token). */
export function isTemporaryKeyId(id: string, root: Root): boolean {
  return id !== root.accessKeyId && id.startsWith(TEMPORARY_KEY_PREFIX);
}

/**
 * The key a request signed with temporary key `id` and session `token` signs with: the temporary
 * secret, acting as its parent key; null when the parent is gone or disabled (InvalidAccessKeyId).
 * Throws InvalidToken for a token this gateway did not make for `id`, ExpiredToken past its expiry
 * and for a session its parent no longer stands for (revoked before its time, as a token ends: the
 * remedy is new credentials): the parent's secret changed, or it was disabled after the session began.
 */
export async function sessionSignerOf(env: Env, master: string | null, root: Root, id: string, token: string, now = Date.now()): Promise<ResolvedKey | null> {
  const claims = await openSession(sealingKey(master, root), id, token, now);
  if (claims === "invalid") throw new S3Error("InvalidToken", "The provided token is malformed or otherwise invalid.");
  if (claims === "expired") throw new S3Error("ExpiredToken", "The provided token has expired.");
  const parent = await signerOf(env, master, root, claims.parentId);
  if (!parent) return null;
  if (!(await fingerprintMatches(claims.parentFingerprint, parent.secret)))
    throw new S3Error("ExpiredToken", "The provided token has expired: the secret of its key has changed.");
  if (claims.issued < (parent.sessionsNotBefore ?? 0))
    throw new S3Error("ExpiredToken", "The provided token has expired: its key was disabled after it was issued.");
  return { secret: claims.secretAccessKey, principal: parent.principal, expires: claims.expires };
}
