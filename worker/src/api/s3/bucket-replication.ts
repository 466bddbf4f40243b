// A bucket's replication: PutBucketReplication / GetBucketReplication / DeleteBucketReplication
// (`?replication`) with S3's document (meta/replication-rules.ts applies it). Role is accepted and
// unused. Each Rule: ID, Priority, Status, a Filter (a Prefix, a Tag, or an And of two or more of
// them: one Prefix, Tags of unique keys) or the older top-level Prefix, DeleteMarkerReplication
// (never Enabled with a Tag), ExistingObjectReplication (Enabled: the versions already in the
// bucket are replicated too, meta/replication-rules.ts walkStep), and a Destination
// Bucket: `arn:aws:s3:::BUCKET`, a bucket of this gateway that keeps versions, or
// `arn:shardgate:s3:::TARGET/BUCKET`, a remote endpoint the operator configured in
// SHARDGATE_REPLICATION_TARGETS (its credentials stay there, never in a rule). Setting and deleting
// it is the root key's (api/operations.ts): replication writes into other buckets for good, long
// after the request, with the gateway's authority. Checked as S3 checks: the source keeps versions
// (InvalidRequest), unknown elements MalformedXML, duplicate IDs or priorities, an unknown target,
// too many rules or destinations, a target that is this gateway InvalidArgument, a Tag's key or
// value out of bounds InvalidTag, a repeated tag key InvalidRequest; nothing is stored unless the
// whole document is valid.
import { type ReplicationRule, targetOfDestination } from "../../meta/replication-rules";
import { LOCAL_ARN_PREFIX, REMOTE_ARN_PREFIX } from "../../shared/arns";
import { NoSuchBucketError } from "../../meta/types";
import { S3Error, invalidArgument } from "../../s3-error";
import { bucketPolicy } from "../../services/bucket-policy";
import { bucketIndex, type BucketAt, type RequestContext } from "../http/context";
import { permitted } from "../http/permissions";
import { validateTags } from "../format/tags";
import { element, xmlResponse, xmlDocument } from "../format/xml";
import { malformedXml, readXml, type XmlElement } from "../format/xml-parse";

/** S3's bounds: 1000 rules, an ID of at most 255 characters, a prefix of at most 1024. */
const MAX_RULES = 1000;
/** The gateway's own bound: every write is copied to each destination. */
const MAX_DESTINATIONS = 8;
const MAX_ID = 255;
const MAX_PREFIX = 1024;
/** A filter names at most as many tags as an object holds (S3: 10); more could never match. */
const MAX_FILTER_TAGS = 10;
const MAX_DOCUMENT_BYTES = 512 * 1024;
/** S3 elements of a rule this gateway does not do. */
const NOT_IMPLEMENTED = new Set(["SourceSelectionCriteria", "ReplicationTime", "Metrics", "EncryptionConfiguration", "AccessControlTranslation", "Account"]);

const notImplemented = (what: string) => new S3Error("NotImplemented", `${what} is not implemented in replication rules.`);

export async function putBucketReplication(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const targets = ctx.config.replicationTargets;
  const rules = parseReplicationXml(await readXml(ctx.auth.body, MAX_DOCUMENT_BYTES), new Set(Object.keys(targets)));
  checkDestinations(ctx, rules, targets);
  for (const dest of new Set(rules.map((r) => targetOfDestination(r.destination)).flatMap((d) => (d && d.remote === null ? [d.bucket] : [])))) {
    await checkLocalDestination(ctx, bucket, dest);
  }
  const result = await bucketIndex(ctx, bucket).setReplicationConfiguration(rules);
  if (result === "not-versioned") throw new S3Error("InvalidRequest", "Versioning must be 'Enabled' on the bucket to apply a replication configuration");
  return new Response(null, { status: 200 });
}

export async function getBucketReplication(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  // (The RPC's types widen a tag's [key, value] to string[].)
  const rules = (await bucketIndex(ctx, bucket).replicationConfiguration()) as ReplicationRule[];
  if (rules.length === 0) throw new S3Error("ReplicationConfigurationNotFoundError", "The replication configuration was not found");
  return xmlResponse(renderReplication(rules));
}

export async function deleteBucketReplication(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  await bucketIndex(ctx, bucket).setReplicationConfiguration([]);
  return new Response(null, { status: 204 });
}

/**
 * At most MAX_DESTINATIONS destinations (every write is copied to each), and no remote target that
 * is this gateway itself (its replicas would be replicated back).
 */
function checkDestinations(ctx: RequestContext, rules: readonly ReplicationRule[], targets: Record<string, { endpoint: string }>): void {
  const destinations = new Set(rules.map((r) => r.destination));
  if (destinations.size > MAX_DESTINATIONS) throw invalidArgument(`A replication configuration may name at most ${MAX_DESTINATIONS} destinations.`);
  const here = new URL(ctx.request.url).host;
  for (const d of destinations) {
    const remote = targetOfDestination(d)?.remote;
    const endpoint = remote ? targets[remote]?.endpoint : undefined;
    if (endpoint !== undefined && new URL(endpoint).host === here)
      throw invalidArgument(`Replication target ${remote} is this gateway: replicate to a bucket here with arn:aws:s3:::BUCKET.`);
  }
}

/** A destination on this gateway: another bucket, existing, keeping versions, that the caller may write. */
async function checkLocalDestination(ctx: RequestContext, source: string, dest: string): Promise<void> {
  if (dest === source) throw new S3Error("InvalidRequest", "Destination bucket cannot be the same as the source bucket.");
  let versioning: string | null;
  try {
    versioning = await bucketIndex(ctx, dest).versioning();
  } catch (e) {
    if (e instanceof NoSuchBucketError || (e instanceof S3Error && e.code === "NoSuchBucket"))
      throw new S3Error("InvalidRequest", "Destination bucket must exist.");
    throw e;
  }
  if (!(await permitted(ctx.principal, "write", "s3:PutObject", dest, null, (b) => bucketPolicy(ctx.env, b)))) {
    throw new S3Error("AccessDenied", "Access Denied: the destination bucket is not writable with these credentials.");
  }
  if (versioning !== "Enabled") throw new S3Error("InvalidRequest", "Destination bucket must have versioning enabled.");
}

/** The document's rules, each checked; S3's error for the first thing wrong. */
export function parseReplicationXml(doc: XmlElement, remotes: ReadonlySet<string>): ReplicationRule[] {
  if (doc.name !== "ReplicationConfiguration") throw malformedXml();
  const rules: ReplicationRule[] = [];
  const priorities: number[] = [];
  let roles = 0;
  for (const child of doc.children) {
    if (child.name === "Role" && child.children.length === 0 && roles++ === 0) continue;
    if (child.name !== "Rule") throw malformedXml();
    if (rules.length >= MAX_RULES) throw invalidArgument(`A replication configuration may hold at most ${MAX_RULES} rules.`);
    const { rule, ordered } = parseRule(child, remotes, rules.length);
    rules.push(rule);
    if (ordered) priorities.push(rule.priority);
  }
  if (rules.length === 0) throw malformedXml();
  if (new Set(rules.map((r) => r.id)).size !== rules.length) throw invalidArgument("Rule Id must be unique.");
  if (new Set(priorities).size !== priorities.length) throw invalidArgument("Found duplicate priority. Priority must be unique among rules.");
  return rules;
}

/** A Rule's children as read so far: the rule's own fields (each absent until read), its Status, and whether a Filter came. */
type RuleFields = Partial<Omit<ReplicationRule, "enabled" | "target" | "since">> & { status?: string; filtered: boolean };

/** One Rule element, and whether its priority orders it (the newer form, with a Filter). */
function parseRule(el: XmlElement, remotes: ReadonlySet<string>, index: number): { rule: ReplicationRule; ordered: boolean } {
  const f: RuleFields = { filtered: false };
  for (const c of el.children) readRuleChild(c, f);
  if (f.status === undefined || f.destination === undefined) throw malformedXml();
  if (f.status !== "Enabled" && f.status !== "Disabled") throw malformedXml("Status must be Enabled or Disabled.");
  // The older form (a top-level Prefix) takes no Filter; the newer one wants DeleteMarkerReplication.
  if (f.filtered && f.deleteMarkers === undefined)
    throw invalidArgument("DeleteMarkerReplication must be specified for this version of Cross Region Replication configuration schema.");
  // A delete marker has no tags: S3 refuses to replicate them under a rule that filters by tag.
  if (f.tags && f.tags.length > 0 && f.deleteMarkers)
    throw new S3Error(
      "InvalidRequest",
      "Delete marker replication is not supported if any Tag filter is specified. Please refer to S3 Developer Guide for more information.",
    );
  const target = targetOfDestination(f.destination);
  if (target === null || (target.remote !== null && !remotes.has(target.remote)) || !BUCKET_NAME.test(target.bucket)) {
    throw invalidArgument(
      `Invalid Destination bucket: ${f.destination.slice(0, 200)} (a destination is ${LOCAL_ARN_PREFIX}BUCKET on this gateway, or ${REMOTE_ARN_PREFIX}TARGET/BUCKET for a target the operator configured)`,
    );
  }
  const rule: ReplicationRule = {
    id: f.id || `rule-${index + 1}`,
    priority: f.priority ?? 0,
    enabled: f.status === "Enabled",
    prefix: f.prefix ?? "",
    deleteMarkers: f.deleteMarkers ?? false,
    destination: f.destination,
    target: target.target,
  };
  if (f.tags && f.tags.length > 0) rule.tags = f.tags;
  if (f.and) rule.and = true;
  if (f.existing !== undefined) rule.existing = f.existing;
  return { rule, ordered: f.filtered };
}

/** Reads one child of a Rule into `f`. */
function readRuleChild(c: XmlElement, f: RuleFields): void {
  const leaf = c.children.length === 0;
  const text = c.text.trim();
  if (c.name === "ID" && leaf && f.id === undefined) {
    if (text.length > MAX_ID) throw invalidArgument(`The ID is at most ${MAX_ID} characters.`);
    f.id = text;
  } else if (c.name === "Priority" && leaf && f.priority === undefined) {
    if (!/^[0-9]{1,9}$/.test(text)) throw malformedXml("Priority must be a whole number.");
    f.priority = Number(text);
  } else if (c.name === "Status" && leaf && f.status === undefined) f.status = text;
  else if (c.name === "Prefix" && leaf && f.prefix === undefined && !f.filtered) f.prefix = checkedPrefix(c.text);
  else if (c.name === "Filter" && !f.filtered && f.prefix === undefined) {
    f.filtered = true;
    Object.assign(f, parseFilter(c));
  } else if (c.name === "DeleteMarkerReplication" && f.deleteMarkers === undefined) f.deleteMarkers = statusOf(c) === "Enabled";
  else if (c.name === "Destination" && f.destination === undefined) f.destination = parseDestination(c);
  else if (c.name === "ExistingObjectReplication" && f.existing === undefined) f.existing = statusOf(c) === "Enabled";
  else if (NOT_IMPLEMENTED.has(c.name)) throw notImplemented(c.name);
  else throw malformedXml();
}

/**
 * <Filter> with nothing, a Prefix, a Tag, or an And of at least two conditions (at most one Prefix,
 * Tags of unique keys). S3's errors: another shape MalformedXML, a repeated key InvalidRequest, a
 * key or value out of bounds InvalidTag; more than MAX_FILTER_TAGS InvalidArgument.
 */
function parseFilter(el: XmlElement): { prefix: string; tags: [string, string][]; and: boolean } {
  if (el.children.length === 0) return { prefix: "", tags: [], and: false };
  if (el.children.length !== 1) throw malformedXml();
  const only = el.children[0] as XmlElement;
  if (only.name === "Prefix" && only.children.length === 0) return { prefix: checkedPrefix(only.text), tags: [], and: false };
  if (only.name === "Tag") return { prefix: "", tags: checkedTags([parseTag(only)]), and: false };
  if (only.name !== "And") throw malformedXml();
  let prefix: string | undefined;
  const tags: [string, string][] = [];
  for (const c of only.children) {
    if (c.name === "Tag") tags.push(parseTag(c));
    else if (c.name === "Prefix" && c.children.length === 0 && prefix === undefined) prefix = checkedPrefix(c.text);
    else throw malformedXml();
  }
  // S3: And combines two or more conditions.
  if (tags.length + (prefix === undefined ? 0 : 1) < 2) throw malformedXml();
  return { prefix: prefix ?? "", tags: checkedTags(tags), and: true };
}

/** <Tag><Key>k</Key><Value>v</Value></Tag>: those two leaves and nothing else. */
function parseTag(el: XmlElement): [string, string] {
  const [key, value] = ["Key", "Value"].map((name) => el.children.find((c) => c.name === name));
  if (el.children.length !== 2 || !key || !value || key.children.length + value.children.length > 0) throw malformedXml();
  return [key.text, value.text];
}

function checkedTags(tags: [string, string][]): [string, string][] {
  if (tags.length > MAX_FILTER_TAGS) throw invalidArgument(`A replication rule's filter names at most ${MAX_FILTER_TAGS} tags.`);
  if (new Set(tags.map(([k]) => k)).size !== tags.length) throw new S3Error("InvalidRequest", "Duplicate Tag Keys are not allowed.");
  return validateTags(tags, MAX_FILTER_TAGS);
}

function checkedPrefix(text: string): string {
  if (text.length > MAX_PREFIX) throw invalidArgument(`The prefix is at most ${MAX_PREFIX} characters.`);
  return text;
}

/** <X><Status>Enabled|Disabled</Status></X>. */
function statusOf(el: XmlElement): string {
  const only = el.children[0];
  if (el.children.length !== 1 || only?.name !== "Status" || only.children.length > 0) throw malformedXml();
  const status = only.text.trim();
  if (status !== "Enabled" && status !== "Disabled") throw malformedXml("Status must be Enabled or Disabled.");
  return status;
}

/** <Destination><Bucket>ARN</Bucket> and an optional StorageClass (kept as the bucket's own). */
function parseDestination(el: XmlElement): string {
  let bucket: string | undefined;
  for (const c of el.children) {
    if (c.name === "Bucket" && c.children.length === 0 && bucket === undefined) bucket = c.text.trim();
    else if (c.name === "StorageClass" && c.children.length === 0) continue;
    else if (NOT_IMPLEMENTED.has(c.name)) throw notImplemented(`Destination ${c.name}`);
    else throw malformedXml();
  }
  if (bucket === undefined) throw malformedXml();
  return bucket;
}

/** S3's bucket names: 3-63 of a-z 0-9 . - (a target's bucket is checked as strictly). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** A rule's Filter as it came: a Prefix, one Tag, or an And (its Prefix kept when it makes the two conditions). */
function renderFilter(r: ReplicationRule): string {
  const tags = (r.tags ?? []).map(([k, v]) => `<Tag>${element("Key", k)}${element("Value", v)}</Tag>`);
  if (!r.and && tags.length === 0) return `<Filter>${element("Prefix", r.prefix)}</Filter>`;
  if (!r.and && tags.length === 1 && r.prefix === "") return `<Filter>${tags[0]}</Filter>`;
  const prefix = r.prefix !== "" || tags.length < 2 ? element("Prefix", r.prefix) : "";
  return `<Filter><And>${prefix}${tags.join("")}</And></Filter>`;
}

function renderReplication(rules: readonly ReplicationRule[]): string {
  const body = rules
    .map((r) => {
      const marker = `<DeleteMarkerReplication>${element("Status", r.deleteMarkers ? "Enabled" : "Disabled")}</DeleteMarkerReplication>`;
      const existing =
        r.existing === undefined ? "" : `<ExistingObjectReplication>${element("Status", r.existing ? "Enabled" : "Disabled")}</ExistingObjectReplication>`;
      return `<Rule>${element("ID", r.id)}${element("Priority", String(r.priority))}${element("Status", r.enabled ? "Enabled" : "Disabled")}${renderFilter(r)}${marker}${existing}<Destination>${element("Bucket", r.destination)}</Destination></Rule>`;
    })
    .join("");
  return xmlDocument("ReplicationConfiguration", `<Role></Role>${body}`);
}
