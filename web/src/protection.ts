// The console's calls for data protection beyond versioning: a bucket's lifecycle rules and object
// lock configuration, and an object's retention and legal hold. Rules keep the XML they were
// stored with, so a rule the console cannot edit (tag or size filters, dates) goes back unchanged.
import { S3Error } from "./errors";
import { encodeSegment, objectPath, type S3Client } from "./s3";
import { childText, children, parseXml, xmlEscape } from "./xml";

const S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";

/** One lifecycle rule as the console shows it. */
export interface LifecycleRule {
  id: string;
  enabled: boolean;
  prefix: string;
  /** Tag and size conditions of its filter, in words. */
  conditions: string[];
  expireDays?: number;
  expireDate?: string;
  expiredDeleteMarkers: boolean;
  noncurrentDays?: number;
  keepNewer?: number;
  abortUploadDays?: number;
  /** The rule's own XML, as stored. */
  xml: string;
}

/** What the console's form makes a rule of: a prefix and any of the three day counts. */
export interface NewRule {
  id: string;
  prefix: string;
  expireDays?: number;
  noncurrentDays?: number;
  abortUploadDays?: number;
}

export interface LockState {
  defaultRetention: { mode: string; days?: number; years?: number } | null;
}

export interface ObjectLockHeaders {
  mode: string | null;
  retainUntil: Date | null;
  legalHold: boolean;
}

const numberOf = (s: string): number | undefined => (s === "" ? undefined : Number(s));

function ruleOf(el: Element): LifecycleRule {
  const filter = children(el, "Filter")[0];
  const and = filter ? children(filter, "And")[0] : undefined;
  const where = and ?? filter;
  const conditions: string[] = [];
  for (const tag of where ? children(where, "Tag") : []) conditions.push(`tagged ${childText(tag, "Key")}=${childText(tag, "Value")}`);
  const larger = where ? childText(where, "ObjectSizeGreaterThan") : "";
  const smaller = where ? childText(where, "ObjectSizeLessThan") : "";
  if (larger) conditions.push(`larger than ${larger} bytes`);
  if (smaller) conditions.push(`smaller than ${smaller} bytes`);
  const expiration = children(el, "Expiration")[0];
  const noncurrent = children(el, "NoncurrentVersionExpiration")[0];
  const abort = children(el, "AbortIncompleteMultipartUpload")[0];
  return {
    id: childText(el, "ID"),
    enabled: childText(el, "Status") === "Enabled",
    prefix: (where ? childText(where, "Prefix") : "") || childText(el, "Prefix"),
    conditions,
    expireDays: expiration ? numberOf(childText(expiration, "Days")) : undefined,
    expireDate: expiration ? childText(expiration, "Date") || undefined : undefined,
    expiredDeleteMarkers: expiration ? childText(expiration, "ExpiredObjectDeleteMarker") === "true" : false,
    noncurrentDays: noncurrent ? numberOf(childText(noncurrent, "NoncurrentDays")) : undefined,
    keepNewer: noncurrent ? numberOf(childText(noncurrent, "NewerNoncurrentVersions")) : undefined,
    abortUploadDays: abort ? numberOf(childText(abort, "DaysAfterInitiation")) : undefined,
    xml: new XMLSerializer().serializeToString(el),
  };
}

/** The XML of a rule made with the console's form. */
export function ruleXml(rule: NewRule): string {
  const actions = [
    rule.expireDays !== undefined ? `<Expiration><Days>${rule.expireDays}</Days></Expiration>` : "",
    rule.noncurrentDays !== undefined
      ? `<NoncurrentVersionExpiration><NoncurrentDays>${rule.noncurrentDays}</NoncurrentDays></NoncurrentVersionExpiration>`
      : "",
    rule.abortUploadDays !== undefined
      ? `<AbortIncompleteMultipartUpload><DaysAfterInitiation>${rule.abortUploadDays}</DaysAfterInitiation></AbortIncompleteMultipartUpload>`
      : "",
  ].join("");
  return `<Rule><ID>${xmlEscape(rule.id)}</ID><Filter><Prefix>${xmlEscape(rule.prefix)}</Prefix></Filter><Status>Enabled</Status>${actions}</Rule>`;
}

/** The bucket's lifecycle rules (none: an empty list). */
export async function lifecycleRules(s3: S3Client, bucket: string): Promise<LifecycleRule[]> {
  try {
    const res = await s3.request("GET", `/${encodeSegment(bucket)}`, { query: { lifecycle: "" } });
    return children(parseXml(await res.text()), "Rule").map(ruleOf);
  } catch (err) {
    if (err instanceof S3Error && err.code === "NoSuchLifecycleConfiguration") return [];
    throw err;
  }
}

/** Replaces the bucket's rules with `rules` (their XML); none left deletes the configuration. */
export async function saveLifecycleRules(s3: S3Client, bucket: string, rules: string[]): Promise<void> {
  const path = `/${encodeSegment(bucket)}`;
  if (rules.length === 0) {
    await s3.request("DELETE", path, { query: { lifecycle: "" } });
    return;
  }
  const body = `<LifecycleConfiguration xmlns="${S3_XMLNS}">${rules.join("")}</LifecycleConfiguration>`;
  await s3.request("PUT", path, { query: { lifecycle: "" }, headers: { "content-type": "application/xml" }, body });
}

/** The bucket's object lock configuration, or null when it has none. */
export async function lockState(s3: S3Client, bucket: string): Promise<LockState | null> {
  try {
    const res = await s3.request("GET", `/${encodeSegment(bucket)}`, { query: { "object-lock": "" } });
    const retention = parseXml(await res.text()).getElementsByTagNameNS("*", "DefaultRetention")[0];
    if (!retention) return { defaultRetention: null };
    return {
      defaultRetention: { mode: childText(retention, "Mode"), days: numberOf(childText(retention, "Days")), years: numberOf(childText(retention, "Years")) },
    };
  } catch (err) {
    if (err instanceof S3Error && err.code === "ObjectLockConfigurationNotFoundError") return null;
    throw err;
  }
}

/** An object's retention and legal hold, from the headers of its HEAD. */
export function objectLockOf(headers: Headers): ObjectLockHeaders {
  const until = headers.get("x-amz-object-lock-retain-until-date");
  return {
    mode: headers.get("x-amz-object-lock-mode"),
    retainUntil: until ? new Date(until) : null,
    legalHold: headers.get("x-amz-object-lock-legal-hold") === "ON",
  };
}

/** Places or lifts the legal hold of an object's current version. */
export async function setLegalHold(s3: S3Client, bucket: string, key: string, on: boolean): Promise<void> {
  const body = `<LegalHold xmlns="${S3_XMLNS}"><Status>${on ? "ON" : "OFF"}</Status></LegalHold>`;
  await s3.request("PUT", objectPath(bucket, key), { query: { "legal-hold": "" }, headers: { "content-type": "application/xml" }, body });
}

const ENCRYPTION_XML = `<ServerSideEncryptionConfiguration xmlns="${S3_XMLNS}"><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>`;

/** Whether the bucket encrypts new objects by default (SSE-S3). */
export async function defaultEncryption(s3: S3Client, bucket: string): Promise<boolean> {
  try {
    await s3.request("GET", `/${encodeSegment(bucket)}`, { query: { encryption: "" } });
    return true;
  } catch (err) {
    if (err instanceof S3Error && err.code === "ServerSideEncryptionConfigurationNotFoundError") return false;
    throw err;
  }
}

/** Turns the bucket's default encryption (SSE-S3) on or off; objects already stored stay as they are. */
export async function setDefaultEncryption(s3: S3Client, bucket: string, on: boolean): Promise<void> {
  const path = `/${encodeSegment(bucket)}`;
  if (on) await s3.request("PUT", path, { query: { encryption: "" }, headers: { "content-type": "application/xml" }, body: ENCRYPTION_XML });
  else await s3.request("DELETE", path, { query: { encryption: "" } });
}
