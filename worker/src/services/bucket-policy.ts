// A bucket's policy (auth/policy.ts): stored with the bucket in its Durable Object as the document
// given, and read by authorization for every request of a key other than the root key or of
// nobody. Like keys, an isolate trusts what it read for POLICY_CACHE_MS at most (values, never
// promises), and forgets it at once when it changes the policy itself.
import { type BucketPolicy, parsePolicy } from "../auth/policy";
import type { Env } from "../config";
import { bucketIndex } from "../meta/stubs";

/** How long an isolate trusts a policy it read (ms). */
export const POLICY_CACHE_MS = 5_000;
const POLICY_CACHE_ENTRIES = 1_000;

const known = new Map<string, { at: number; policy: BucketPolicy | null }>();

/** The bucket's policy, parsed; null when it has none (or there is no such bucket). */
export async function bucketPolicy(env: Env, bucket: string, now = Date.now()): Promise<BucketPolicy | null> {
  const cached = known.get(bucket);
  if (cached && now - cached.at < POLICY_CACHE_MS) return cached.policy;
  const text = await bucketIndex(env, bucket).setting("policy");
  // Stored only after parsing: a stored document parses (or the parser grew stricter: then none).
  let policy: BucketPolicy | null = null;
  if (text) {
    try {
      policy = parsePolicy(text, bucket);
    } catch (e) {
      console.error(JSON.stringify({ bucket, error: `stored policy no longer parses: ${String(e)}` }));
    }
  }
  known.delete(bucket);
  known.set(bucket, { at: now, policy });
  while (known.size > POLICY_CACHE_ENTRIES) known.delete(known.keys().next().value as string);
  return policy;
}

/** The policy document as stored: null when none, undefined when there is no such bucket. */
export function storedPolicy(env: Env, bucket: string): Promise<string | null | undefined> {
  return bucketIndex(env, bucket).setting("policy");
}

/** Checks and stores a policy document (null removes it); false when there is no such bucket. */
export async function setBucketPolicy(env: Env, bucket: string, text: string | null): Promise<boolean> {
  if (text !== null) parsePolicy(text, bucket); // MalformedPolicy before anything is stored
  const ok = await bucketIndex(env, bucket).setSetting("policy", text);
  known.delete(bucket);
  return ok;
}

/** Forgets what this isolate knows of a bucket's policy (the bucket was deleted). */
export function forgetBucketPolicy(bucket: string): void {
  known.delete(bucket);
}
