// Access keys besides the root key: creating one (its secret returned once, stored sealed under the
// master key), listing, changing, deleting, granting rights on buckets; and resolving the key of a
// request to its secret and rights. Resolved keys are remembered per isolate for KEY_CACHE_MS at
// most, so a disabled or deleted key is refused everywhere within that time (at once in the isolate
// that made the change).
import { randomText } from "../auth/crypto";
import { openSecret, requireMasterKey, sealSecret } from "../auth/secret-box";
import type { Env } from "../config";
import type { KeyChange } from "../meta/key-store";
import { keyStore } from "../meta/stubs";
import type { BucketGrant, KeyRecord } from "../meta/types";
import { metrics } from "../observability/metrics";
import { S3Error } from "../s3-error";
import { Lru } from "../shared/bounded";

/** How long an isolate trusts what it looked up about a key (ms). */
export const KEY_CACHE_MS = 5_000;

/** Who signed a request: the root key (from the environment), a key of the key store, or nobody. */
export type Principal =
  | { kind: "root"; keyId: string }
  | { kind: "anonymous" }
  | { kind: "key"; keyId: string; createBucket: boolean; grants: ReadonlyMap<string, BucketGrant> };

/** A key a request may be signed with: its secret and who it is. */
export interface ResolvedKey {
  secret: string;
  principal: Principal;
  /** Temporary credentials: when they expire (ms); what a request signed with them hands out ends then too. */
  expires?: number;
  /** A key of the key store: its sessions issued before this time (ms) are refused (services/sessions.ts). */
  sessionsNotBefore?: number;
}

const ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
/** Every id createKey makes: another cannot be in the key store, and is refused without asking it. */
const KEY_ID = /^SG[A-Z0-9]{18}$/;
const SECRET_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** Creates a key, its secret sealed under `master` (GatewayConfig.masterKey); the secret is in the answer and nowhere else in clear. */
export async function createKey(
  env: Env,
  master: string | null,
  opts: { name: string; createBucket: boolean },
  now = Date.now(),
): Promise<KeyRecord & { secret: string }> {
  const sealingKey = requireMasterKey(master, "Access keys");
  for (;;) {
    const record: KeyRecord = { id: `SG${randomText(ID_ALPHABET, 18)}`, name: opts.name, created: now, enabled: true, createBucket: opts.createBucket };
    const secret = randomText(SECRET_ALPHABET, 40);
    const sealedSecret = await sealSecret(sealingKey, record.id, secret);
    if (await keyStore(env).create({ ...record, sealedSecret })) {
      forget(record.id);
      return { ...record, secret };
    }
  }
}

export function listKeys(env: Env): Promise<(KeyRecord & { grants: BucketGrant[] })[]> {
  return keyStore(env).list();
}

export async function updateKey(env: Env, id: string, change: KeyChange): Promise<KeyRecord | null> {
  const key = await keyStore(env).update(id, change);
  markStale(id);
  return key;
}

export async function deleteKey(env: Env, id: string): Promise<boolean> {
  const gone = await keyStore(env).remove(id);
  forget(id);
  return gone;
}

export async function grantBucket(env: Env, id: string, grant: BucketGrant): Promise<boolean> {
  const ok = await keyStore(env).grant(id, grant);
  markStale(id);
  return ok;
}

export function bucketGrants(env: Env, bucket: string): Promise<{ keyId: string; grant: BucketGrant }[]> {
  return keyStore(env).bucketGrants(bucket);
}

/** Forgets the grants on a deleted bucket. */
export async function dropBucketGrants(env: Env, bucket: string): Promise<void> {
  await keyStore(env).dropBucket(bucket);
  for (const id of resolved.keys()) markStale(id);
}

/** The key `id` signs with: the root key (no lookup), or a key of the key store (resolveKey; `master`: GatewayConfig.masterKey). */
export async function signerOf(
  env: Env,
  master: string | null,
  root: { accessKeyId: string; secretAccessKey: string },
  id: string,
): Promise<ResolvedKey | null> {
  if (id === root.accessKeyId) return { secret: root.secretAccessKey, principal: { kind: "root", keyId: id } };
  return resolveKey(env, master, id);
}

/** What this isolate looked up, by key id, and when (values, never promises: a promise one request created and another awaits can make workerd cancel the second as hung). */
const resolved = new Lru<string, { at: number; key: ResolvedKey }>({ entries: 1_000 });
/**
 * Ids the key store answered null for (no such key, disabled, secret not opening), and when: kept
 * apart from `resolved`, so that made-up ids, however many, never evict a real key's entry.
 */
const unknownIds = new Lru<string, number>({ entries: 10_000 });

/**
 * Lookups of ids this isolate holds no answer for, as a token bucket: a flood of made-up ids costs
 * the key store at most UNKNOWN_LOOKUP_BURST at once, then UNKNOWN_LOOKUPS_PER_S, and past that
 * is answered SlowDown. A lookup that finds a key gives its token back: only unknown ids spend them.
 */
const UNKNOWN_LOOKUP_BURST = 100;
const UNKNOWN_LOOKUPS_PER_S = 50;
const lookupBudget = { tokens: UNKNOWN_LOOKUP_BURST, at: 0 };

function forget(id: string): void {
  resolved.delete(id);
  unknownIds.delete(id);
}

/**
 * Looks `id` up again on its next use, as a key this isolate knows: its refresh spends nothing
 * from the lookup budget, so a flood of made-up ids cannot lock out a key that a change touched.
 */
function markStale(id: string): void {
  // Changed in place (its `at` only: the next lookup fetches it again), keeping its place in the eviction order.
  const known = resolved.peek(id);
  if (known) known.at = Number.NEGATIVE_INFINITY;
  unknownIds.delete(id);
}

/**
 * The key `id` of the key store, or null when there is none, it is disabled, or its secret does
 * not open under the master key (which then was changed: logged). Remembered for KEY_CACHE_MS,
 * null answers too (apart). An id createKey cannot have made is null without a lookup.
 * Throws SlowDown when unknown ids have used up the lookup budget.
 */
export async function resolveKey(env: Env, master: string | null, id: string, now = Date.now()): Promise<ResolvedKey | null> {
  if (!KEY_ID.test(id)) return null;
  const known = resolved.peek(id);
  if (known && now - known.at < KEY_CACHE_MS) return known.key;
  const missed = unknownIds.peek(id);
  if (missed !== undefined && now - missed < KEY_CACHE_MS) return null;
  // A key this isolate knew refreshes freely; any other id spends from the budget.
  const budgeted = !known;
  if (budgeted && !takeLookupToken(now)) throw new S3Error("SlowDown", "Please reduce your request rate.");
  const key = await lookup(env, master, id);
  forget(id);
  if (key) {
    if (budgeted) lookupBudget.tokens = Math.min(UNKNOWN_LOOKUP_BURST, lookupBudget.tokens + 1);
    resolved.set(id, { at: now, key });
  } else {
    unknownIds.set(id, now);
  }
  return key;
}

function takeLookupToken(now: number): boolean {
  const b = lookupBudget;
  b.tokens = Math.min(UNKNOWN_LOOKUP_BURST, b.tokens + (Math.max(0, now - b.at) / 1000) * UNKNOWN_LOOKUPS_PER_S);
  b.at = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

async function lookup(env: Env, master: string | null, id: string): Promise<ResolvedKey | null> {
  if (master === null) return null; // no key but the root key can exist
  const row = await keyStore(env).lookup(id);
  metrics.add("shardgate_key_lookups_total", 1, { result: row ? "found" : "unknown" });
  if (!row?.enabled) return null;
  let secret: string;
  try {
    secret = await openSecret(master, id, row.sealedSecret);
  } catch (e) {
    console.error(JSON.stringify({ accessKey: id, error: `secret does not open under the master key: ${String(e)}` }));
    return null;
  }
  const grants = new Map(row.grants.map((g) => [g.bucket, g]));
  return { secret, principal: { kind: "key", keyId: id, createBucket: row.createBucket, grants }, sessionsNotBefore: row.sessionsNotBefore };
}
