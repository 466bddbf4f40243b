// Object tags: S3's rules for them, the x-amz-tagging header and the <Tagging> document.
import { S3Error } from "../../s3-error";
import { element, xmlDocument } from "./xml";
import { childrenNamed, childText, malformedXml, readXml } from "./xml-parse";

export type Tags = [string, string][];

const MAX_TAGS = 10;
/** A bucket takes more tags than an object. */
export const MAX_BUCKET_TAGS = 50;
const MAX_KEY_CHARS = 128;
const MAX_VALUE_CHARS = 256;

function invalidTag(message: string): S3Error {
  return new S3Error("InvalidTag", message);
}

/**
 * S3's rules: at most 10 tags on an object (50 on a bucket), unique keys of 1..128 and values of
 * 0..256 characters.
 */
export function validateTags(tags: Tags, max = MAX_TAGS): Tags {
  if (tags.length > max) {
    // S3 names the two limits differently.
    if (max === MAX_TAGS) throw new S3Error("BadRequest", "Object tags cannot be greater than 10");
    throw invalidTag(`Bucket tag count cannot be greater than ${max}`);
  }
  const seen = new Set<string>();
  for (const [key, value] of tags) {
    if (key.length === 0 || [...key].length > MAX_KEY_CHARS) throw invalidTag("The TagKey you have provided is invalid");
    if ([...value].length > MAX_VALUE_CHARS) throw invalidTag("The TagValue you have provided is invalid");
    if (seen.has(key)) throw invalidTag("Cannot provide multiple Tags with the same key");
    seen.add(key);
  }
  return tags;
}

/** The x-amz-tagging header (URL query encoding: `k1=v1&k2=v2`); none: no tags. */
export function parseTaggingHeader(value: string | null): Tags {
  if (value === null || value === "") return [];
  return validateTags([...new URLSearchParams(value)]);
}

/** A <Tagging> body (PutObjectTagging, PutBucketTagging), checked by S3's rules. */
export async function parseTaggingXml(body: ReadableStream<Uint8Array> | null, max = MAX_TAGS): Promise<Tags> {
  const doc = await readXml(body);
  const tagSet = doc.name === "Tagging" ? childrenNamed(doc, "TagSet") : [];
  if (tagSet.length !== 1) throw malformedXml();
  const tags: Tags = childrenNamed(tagSet[0], "Tag").map((tag) => {
    const key = childText(tag, "Key");
    const value = childText(tag, "Value");
    if (key === undefined || value === undefined) throw malformedXml();
    return [key, value];
  });
  return validateTags(tags, max);
}

/** A <Tagging> document, its tags sorted by key (as S3 lists them). */
export function renderTagging(tags: Tags): string {
  const sorted = [...tags].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const items = sorted.map(([k, v]) => `<Tag>${element("Key", k)}${element("Value", v)}</Tag>`).join("");
  return xmlDocument("Tagging", `<TagSet>${items}</TagSet>`);
}
