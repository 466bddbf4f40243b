// Get/Put/DeleteBucketLifecycleConfiguration: the <LifecycleConfiguration> document to and from
// the rules meta/lifecycle-rules.ts applies. Checked by S3's rules before anything is stored; actions
// about storage classes (transitions) are refused by name: there is one storage class.
import { DAY_MS, type LifecycleFilter, type LifecycleRule } from "../../meta/lifecycle-rules";
import { S3Error, invalidArgument } from "../../s3-error";
import { MAX_BUCKET_TAGS, validateTags } from "../format/tags";
import { element, xmlDocument } from "../format/xml";
import { childrenNamed, childText, malformedXml, onlyChild, readXml, type XmlElement } from "../format/xml-parse";
import { settingOperations } from "../http/setting-operations";

const MAX_RULES = 1000;
const MAX_ID_CHARS = 255;

export const bucketLifecycle = settingOperations<LifecycleRule[]>({
  name: "lifecycle",
  read: async (body) => parseLifecycle(await readXml(body)),
  render: renderLifecycle,
  missing: ["NoSuchLifecycleConfiguration", "The lifecycle configuration does not exist"],
});

/** A positive whole number of days (or versions, bytes): S3 names the field it refuses. */
function positive(el: XmlElement, name: string, what: string, min = 1): number | undefined {
  const text = childText(el, name)?.trim();
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < min)
    throw invalidArgument(`'${name}' for ${what} must be ${min === 0 ? "a non-negative" : "a positive"} integer`);
  return n;
}

export function parseLifecycle(doc: XmlElement): LifecycleRule[] {
  if (doc.name !== "LifecycleConfiguration") throw malformedXml();
  const rules = childrenNamed(doc, "Rule").map(parseRule);
  if (rules.length === 0) throw malformedXml();
  if (rules.length > MAX_RULES) throw invalidArgument(`Lifecycle configurations hold at most ${MAX_RULES} rules`);
  if (new Set(rules.map((r) => r.id)).size !== rules.length) throw invalidArgument("Rule ID must be unique. Found same ID for more than one rule");
  return rules;
}

/**
 * Transitions are refused (one storage class): with 501 NotImplemented when well formed, else with
 * S3's 400 InvalidArgument for what it checks first (a Date that is not midnight ISO 8601, Days
 * that are not a non-negative integer), as S3 answers a rule it could never apply.
 */
function refuseTransitions(el: XmlElement): void {
  for (const name of ["Transition", "NoncurrentVersionTransition"]) {
    const transition = onlyChild(el, name);
    if (!transition) continue;
    const date = childText(transition, "Date")?.trim();
    if (date !== undefined) parseMidnight(date);
    positive(transition, name === "Transition" ? "Days" : "NoncurrentDays", `${name} action`, 0);
    throw new S3Error("NotImplemented", `${name} is not supported: the gateway has one storage class.`);
  }
}

function parseRule(el: XmlElement): LifecycleRule {
  refuseTransitions(el);
  const id = childText(el, "ID")?.trim() || crypto.randomUUID();
  if ([...id].length > MAX_ID_CHARS) throw invalidArgument("ID length should not exceed allowed limit of 255");
  const status = childText(el, "Status")?.trim();
  if (status !== "Enabled" && status !== "Disabled") throw malformedXml();
  const legacy = childText(el, "Prefix");
  const filterEl = onlyChild(el, "Filter");
  if (legacy !== undefined && filterEl) throw malformedXml();
  const filter = filterEl ? parseFilter(filterEl) : { prefix: legacy ?? "", tags: [] };
  const rule: LifecycleRule = { id, enabled: status === "Enabled", filter, ...(legacy !== undefined ? { legacyPrefix: true } : {}) };

  const exp = onlyChild(el, "Expiration");
  if (exp) {
    const days = positive(exp, "Days", "Expiration action");
    const dateText = childText(exp, "Date")?.trim();
    const marker = childText(exp, "ExpiredObjectDeleteMarker")?.trim();
    const set = [days !== undefined, dateText !== undefined, marker !== undefined].filter(Boolean).length;
    if (set !== 1) throw malformedXml();
    if (marker !== undefined && marker !== "true" && marker !== "false") throw malformedXml();
    if (marker === "true" && filter.tags.length > 0) throw invalidArgument("ExpiredObjectDeleteMarker cannot be specified with Tags");
    const date = dateText === undefined ? undefined : parseMidnight(dateText);
    rule.expiration = {
      ...(days !== undefined ? { days } : {}),
      ...(date !== undefined ? { date } : {}),
      ...(marker === "true" ? { expiredObjectDeleteMarker: true } : {}),
    };
  }
  const nc = onlyChild(el, "NoncurrentVersionExpiration");
  if (nc) {
    const days = positive(nc, "NoncurrentDays", "NoncurrentVersionExpiration action");
    if (days === undefined) throw malformedXml();
    const newer = positive(nc, "NewerNoncurrentVersions", "NoncurrentVersionExpiration action");
    if (newer !== undefined && newer > 100) throw invalidArgument("'NewerNoncurrentVersions' must be at most 100");
    rule.noncurrentExpiration = { days, ...(newer !== undefined ? { newerVersions: newer } : {}) };
  }
  const abort = onlyChild(el, "AbortIncompleteMultipartUpload");
  if (abort) {
    const days = positive(abort, "DaysAfterInitiation", "AbortIncompleteMultipartUpload action");
    if (days === undefined) throw malformedXml();
    if (filter.tags.length > 0 || filter.sizeGreaterThan !== undefined || filter.sizeLessThan !== undefined) {
      throw new S3Error("InvalidRequest", "AbortIncompleteMultipartUpload cannot be specified with Tags or object size filters");
    }
    rule.abortUploadDays = days;
  }
  if (!rule.expiration && !rule.noncurrentExpiration && rule.abortUploadDays === undefined) {
    throw malformedXml("At least one action needs to be specified in a rule");
  }
  return rule;
}

/** A <Filter>: one of Prefix, Tag, ObjectSizeGreaterThan, ObjectSizeLessThan, or an <And> of them. */
function parseFilter(el: XmlElement): LifecycleFilter {
  if (el.children.length > 1) throw malformedXml();
  const from = onlyChild(el, "And") ?? el;
  const tags = childrenNamed(from, "Tag").map((t): [string, string] => {
    const key = childText(t, "Key");
    if (key === undefined) throw malformedXml();
    return [key, childText(t, "Value") ?? ""];
  });
  try {
    validateTags(tags, MAX_BUCKET_TAGS);
  } catch {
    throw invalidArgument("Duplicate or invalid Tag in the lifecycle rule's filter");
  }
  const filter: LifecycleFilter = { prefix: onlyChild(from, "Prefix")?.text ?? "", tags };
  const gt = positive(from, "ObjectSizeGreaterThan", "a lifecycle filter", 0);
  const lt = positive(from, "ObjectSizeLessThan", "a lifecycle filter");
  if (gt !== undefined) filter.sizeGreaterThan = gt;
  if (lt !== undefined) filter.sizeLessThan = lt;
  if (gt !== undefined && lt !== undefined && gt >= lt) throw invalidArgument("ObjectSizeGreaterThan must be less than ObjectSizeLessThan");
  return filter;
}

/** An ISO 8601 date at midnight UTC (S3 refuses any other time of day). */
function parseMidnight(text: string): number {
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  // ISO 8601 only: Date.parse also takes forms such as "Sep 27 2022".
  if (Number.isNaN(ms) || !/^\d{4}-\d{2}-\d{2}(T|$)/.test(text)) throw invalidArgument("'Date' must be a valid ISO 8601 date");
  if (ms % DAY_MS !== 0) throw invalidArgument("'Date' must be at midnight GMT");
  return ms;
}

export function renderLifecycle(rules: readonly LifecycleRule[]): string {
  return xmlDocument("LifecycleConfiguration", rules.map(renderRule).join(""));
}

function renderRule(rule: LifecycleRule): string {
  let out = element("ID", rule.id);
  out += rule.legacyPrefix ? element("Prefix", rule.filter.prefix) : `<Filter>${renderFilter(rule.filter)}</Filter>`;
  out += element("Status", rule.enabled ? "Enabled" : "Disabled");
  const e = rule.expiration;
  if (e) {
    const inner =
      e.days !== undefined
        ? element("Days", e.days)
        : e.date !== undefined
          ? element("Date", new Date(e.date).toISOString())
          : element("ExpiredObjectDeleteMarker", true);
    out += `<Expiration>${inner}</Expiration>`;
  }
  const nc = rule.noncurrentExpiration;
  if (nc) {
    const newer = nc.newerVersions === undefined ? "" : element("NewerNoncurrentVersions", nc.newerVersions);
    out += `<NoncurrentVersionExpiration>${element("NoncurrentDays", nc.days)}${newer}</NoncurrentVersionExpiration>`;
  }
  if (rule.abortUploadDays !== undefined) {
    out += `<AbortIncompleteMultipartUpload>${element("DaysAfterInitiation", rule.abortUploadDays)}</AbortIncompleteMultipartUpload>`;
  }
  return `<Rule>${out}</Rule>`;
}

function renderFilter(f: LifecycleFilter): string {
  const parts: string[] = [];
  if (f.prefix !== "") parts.push(element("Prefix", f.prefix));
  for (const [k, v] of f.tags) parts.push(`<Tag>${element("Key", k)}${element("Value", v)}</Tag>`);
  if (f.sizeGreaterThan !== undefined) parts.push(element("ObjectSizeGreaterThan", f.sizeGreaterThan));
  if (f.sizeLessThan !== undefined) parts.push(element("ObjectSizeLessThan", f.sizeLessThan));
  if (parts.length === 0) return element("Prefix", "");
  return parts.length === 1 ? (parts[0] as string) : `<And>${parts.join("")}</And>`;
}
