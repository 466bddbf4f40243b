// A bucket's policy (auth/policy.ts): stored with the bucket in its Durable Object as the document
// given, and read by authorization for every request of a key other than the root key or of
// nobody, through the registry-gated, per-isolate cache of services/bucket-settings.ts.
import { type BucketPolicy, POLICY_ACTIONS, parsePolicy } from "../auth/policy";
import type { Env } from "../config";
import { bucketIndex } from "../meta/stubs";
import { Lru } from "../shared/bounded";
import { cachedSetting, setSetting } from "./bucket-settings";

/** Parsed policies by their text (the same text parses to the same policy): the 1,000 used last, 8 Mi characters of text at most. */
const parsed = new Lru<string, BucketPolicy | null>({ entries: 1_000, weight: 8 * 1024 * 1024 });

/** The bucket's policy, parsed; null when it has none (or there is no such bucket). */
export async function bucketPolicy(env: Env, bucket: string): Promise<BucketPolicy | null> {
  const text = await cachedSetting(env, bucket, "policy");
  if (!text) return null;
  const key = `${bucket}\u0000${text}`;
  let policy = parsed.get(key);
  if (policy === undefined) {
    // Stored only after parsing: a stored document parses, unless the parser grew stricter since
    // (new limits). Then it fails closed: reading it as no policy would drop its Denies.
    try {
      policy = parsePolicy(text, bucket);
    } catch (e) {
      console.error(JSON.stringify({ bucket, error: `stored policy no longer parses, denying all but policy changes: ${String(e)}` }));
      policy = denyAllButPolicyChanges(bucket);
    }
    parsed.set(key, policy, key.length);
  }
  return policy;
}

/** Actions still open under a policy that no longer parses: reading and replacing that policy. */
const POLICY_MANAGEMENT = new Set<string>(["s3:GetBucketPolicy", "s3:PutBucketPolicy", "s3:DeleteBucketPolicy", "s3:GetBucketPolicyStatus"]);

/** A policy denying every key (the root key is never bound) everything but fixing the policy. */
function denyAllButPolicyChanges(bucket: string): BucketPolicy {
  const statement = {
    Effect: "Deny",
    Principal: "*",
    Action: POLICY_ACTIONS.filter((a) => !POLICY_MANAGEMENT.has(a)),
    Resource: [`arn:aws:s3:::${bucket}`, `arn:aws:s3:::${bucket}/*`],
  };
  return parsePolicy(JSON.stringify({ Version: "2012-10-17", Statement: [statement] }), bucket);
}

/** The policy document as stored: null when none. */
export function storedPolicy(env: Env, bucket: string): Promise<string | null> {
  return bucketIndex(env, bucket).setting("policy");
}

/** Checks and stores a policy document (null removes it). */
export async function setBucketPolicy(env: Env, bucket: string, text: string | null): Promise<void> {
  if (text !== null) parsePolicy(text, bucket); // MalformedPolicy before anything is stored
  return setSetting(env, bucket, "policy", text);
}
