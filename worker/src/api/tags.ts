// Object tags: S3's rules for them, the x-amz-tagging header and the <Tagging> document.
import { S3Error } from "../s3-error";
import { element, S3_XMLNS, XML_DECLARATION } from "./xml";

export type Tags = [string, string][];

const MAX_TAGS = 10;
const MAX_KEY_CHARS = 128;
const MAX_VALUE_CHARS = 256;

function invalidTag(message: string): S3Error {
  return new S3Error("InvalidTag", message);
}

/** S3's rules: at most 10 tags, unique keys of 1..128 and values of 0..256 characters. */
export function validateTags(tags: Tags): Tags {
  if (tags.length > MAX_TAGS) throw new S3Error("BadRequest", "Object tags cannot be greater than 10");
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

export function renderTagging(tags: Tags): string {
  const items = tags.map(([k, v]) => `<Tag>${element("Key", k)}${element("Value", v)}</Tag>`).join("");
  return `${XML_DECLARATION}<Tagging xmlns="${S3_XMLNS}"><TagSet>${items}</TagSet></Tagging>`;
}
