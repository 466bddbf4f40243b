// The bucket settings that requests consult before they are authorized or before they write: the
// policy, the CORS rules, the default encryption. Read through here they are
//   - asked of the registry first, so that a request naming a bucket that does not exist (anyone's:
//     anonymous requests and CORS preflights get here) never brings a Durable Object into being
//     for that name;
//   - remembered per isolate for SETTINGS_CACHE_MS at most, as values (never promises), and
//     forgotten at once by the isolate that changes them (setSetting).
import type { Env } from "../config";
import type { BucketSetting } from "../meta/bucket-settings";
import { bucketIndex, bucketRegistry, orNullWithoutBucket } from "../meta/stubs";
import { Lru } from "../shared/bounded";

/** How long an isolate trusts a setting it read (ms): a change reaches other isolates within it. */
export const SETTINGS_CACHE_MS = 5_000;

/** Settings read, 2,000 at most and 8 Mi characters of their text (policies take up to 20 KB each). */
const known = new Lru<string, { at: number; value: string | null }>({ entries: 2_000, weight: 8 * 1024 * 1024 });
const keyOf = (bucket: string, name: BucketSetting) => `${name}\u0000${bucket}`;

/** A setting as stored (JSON text), or null when the bucket has none or does not exist. */
export async function cachedSetting(env: Env, bucket: string, name: BucketSetting, now = Date.now()): Promise<string | null> {
  const id = keyOf(bucket, name);
  const hit = known.peek(id);
  if (hit && now - hit.at < SETTINGS_CACHE_MS) return hit.value;
  const value = (await bucketRegistry(env).get(bucket)) ? await orNullWithoutBucket(bucketIndex(env, bucket).setting(name)) : null;
  known.set(id, { at: now, value }, id.length + (value?.length ?? 0));
  return value;
}

/** Sets (null: removes) a setting. */
export async function setSetting(env: Env, bucket: string, name: BucketSetting, value: string | null): Promise<void> {
  try {
    await bucketIndex(env, bucket).setSetting(name, value);
  } finally {
    known.delete(keyOf(bucket, name));
  }
}

/** Forgets what this isolate knows of a bucket's settings (it was deleted or created again). */
export function forgetSettings(bucket: string): void {
  for (const id of known.keys()) if (id.endsWith(`\u0000${bucket}`)) known.delete(id);
}
