// A bucket's policy (auth/policy.ts): stored with the bucket in its Durable Object as the document
// given, and read by authorization for every request of a key other than the root key or of
// nobody, through the registry-gated, per-isolate cache of services/bucket-settings.ts.
import { type BucketPolicy, parsePolicy } from "../auth/policy";
import type { Env } from "../config";
import { bucketIndex } from "../meta/stubs";
import { cachedSetting, setSetting } from "./bucket-settings";

/** Parsed policies by their text (the same text parses to the same policy). */
const parsed = new Map<string, BucketPolicy | null>();
const PARSED_ENTRIES = 1_000;

/** The bucket's policy, parsed; null when it has none (or there is no such bucket). */
export async function bucketPolicy(env: Env, bucket: string): Promise<BucketPolicy | null> {
  const text = await cachedSetting(env, bucket, "policy");
  if (!text) return null;
  const key = `${bucket}\u0000${text}`;
  let policy = parsed.get(key);
  if (policy === undefined) {
    // Stored only after parsing: a stored document parses (or the parser grew stricter: then none).
    try {
      policy = parsePolicy(text, bucket);
    } catch (e) {
      console.error(JSON.stringify({ bucket, error: `stored policy no longer parses: ${String(e)}` }));
      policy = null;
    }
    if (parsed.size >= PARSED_ENTRIES) parsed.clear();
    parsed.set(key, policy);
  }
  return policy;
}

/** The policy document as stored: null when none, undefined when there is no such bucket. */
export function storedPolicy(env: Env, bucket: string): Promise<string | null | undefined> {
  return bucketIndex(env, bucket).setting("policy");
}

/** Checks and stores a policy document (null removes it); false when there is no such bucket. */
export async function setBucketPolicy(env: Env, bucket: string, text: string | null): Promise<boolean> {
  if (text !== null) parsePolicy(text, bucket); // MalformedPolicy before anything is stored
  return setSetting(env, bucket, "policy", text);
}
