// A bucket's replication: PutBucketReplication / GetBucketReplication / DeleteBucketReplication
// (`?replication`) with S3's document (meta/replication-rules.ts applies it). Role is accepted and
// unused. Each Rule: ID, Priority, Status, a Filter (Prefix, or And with a Prefix; tag filters are
// NotImplemented) or the older top-level Prefix, DeleteMarkerReplication, and a Destination
// Bucket: `arn:aws:s3:::BUCKET`, a bucket of this gateway that keeps versions, or
// `arn:shardgate:s3:::TARGET/BUCKET`, a remote endpoint the operator configured in
// SHARDGATE_REPLICATION_TARGETS (its credentials stay there, never in a rule). Setting and deleting
// it is the root key's (api/operations.ts): replication writes into other buckets for good, long
// after the request, with the gateway's authority. Checked as S3 checks: the source keeps versions
// (InvalidRequest), unknown elements MalformedXML, duplicate IDs or priorities, an unknown target,
// too many rules or destinations, a target that is this gateway InvalidArgument; nothing is stored
// unless the whole document is valid.
import { parseReplicationTargets } from "../../config-vars";
import { type ReplicationRule, targetOfDestination } from "../../meta/replication-rules";
import { LOCAL_ARN_PREFIX, REMOTE_ARN_PREFIX } from "../../shared/arns";
import { NoSuchBucketError } from "../../meta/types";
import { S3Error } from "../../s3-error";
import { bucketPolicy } from "../../services/bucket-policy";
import { bucketIndex, type BucketAt, type RequestContext } from "../common/context";
import { permitted } from "../common/permissions";
import { element, S3_XMLNS, XML_DECLARATION, xmlResponse } from "../common/xml";
import { malformedXml, readXml, type XmlElement } from "../common/xml-parse";

/** S3's bounds: 1000 rules, an ID of at most 255 characters, a prefix of at most 1024. */
const MAX_RULES = 1000;
/** The gateway's own bound: every write is copied to each destination. */
const MAX_DESTINATIONS = 8;
const MAX_ID = 255;
const MAX_PREFIX = 1024;
const MAX_DOCUMENT_BYTES = 512 * 1024;
/** S3 elements of a rule this gateway does not do. */
const NOT_IMPLEMENTED = new Set(["SourceSelectionCriteria", "ReplicationTime", "Metrics", "EncryptionConfiguration", "AccessControlTranslation", "Account"]);

const invalidArgument = (message: string) => new S3Error("InvalidArgument", message);
const notImplemented = (what: string) => new S3Error("NotImplemented", `${what} is not implemented in replication rules.`);

export async function putBucketReplication(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const targets = parseReplicationTargets(ctx.env.SHARDGATE_REPLICATION_TARGETS) ?? {};
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
  const rules = await bucketIndex(ctx, bucket).replicationConfiguration();
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

type RuleFields = { id?: string; priority?: number; status?: string; prefix?: string; filtered: boolean; deleteMarkers?: boolean; destination?: string };

/** One Rule element, and whether its priority orders it (the newer form, with a Filter). */
function parseRule(el: XmlElement, remotes: ReadonlySet<string>, index: number): { rule: ReplicationRule; ordered: boolean } {
  const f: RuleFields = { filtered: false };
  for (const c of el.children) readRuleChild(c, f);
  if (f.status === undefined || f.destination === undefined) throw malformedXml();
  if (f.status !== "Enabled" && f.status !== "Disabled") throw malformedXml("Status must be Enabled or Disabled.");
  // The older form (a top-level Prefix) takes no Filter; the newer one wants DeleteMarkerReplication.
  if (f.filtered && f.deleteMarkers === undefined)
    throw invalidArgument("DeleteMarkerReplication must be specified for this version of Cross Region Replication configuration schema.");
  const target = targetOfDestination(f.destination);
  if (target === null || (target.remote !== null && !remotes.has(target.remote)) || !validBucketName(target.bucket)) {
    throw invalidArgument(
      `Invalid Destination bucket: ${f.destination.slice(0, 200)} (a destination is ${LOCAL_ARN_PREFIX}BUCKET on this gateway, or ${REMOTE_ARN_PREFIX}TARGET/BUCKET for a target the operator configured)`,
    );
  }
  const rule = {
    id: f.id || `rule-${index + 1}`,
    priority: f.priority ?? 0,
    enabled: f.status === "Enabled",
    prefix: f.prefix ?? "",
    deleteMarkers: f.deleteMarkers ?? false,
    destination: f.destination,
    target: target.target,
  };
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
    f.prefix = parseFilter(c);
  } else if (c.name === "DeleteMarkerReplication" && f.deleteMarkers === undefined) f.deleteMarkers = statusOf(c) === "Enabled";
  else if (c.name === "Destination" && f.destination === undefined) f.destination = parseDestination(c);
  else if (c.name === "ExistingObjectReplication") {
    if (statusOf(c) === "Enabled") throw notImplemented("ExistingObjectReplication");
  } else if (NOT_IMPLEMENTED.has(c.name)) throw notImplemented(c.name);
  else throw malformedXml();
}

/** <Filter> with a Prefix, nothing, or And holding one Prefix; a Tag is NotImplemented. */
function parseFilter(el: XmlElement): string {
  if (el.children.length === 0) return "";
  if (el.children.length !== 1) throw malformedXml();
  const only = el.children[0] as XmlElement;
  if (only.name === "Prefix" && only.children.length === 0) return checkedPrefix(only.text);
  if (only.name === "Tag") throw notImplemented("A Tag filter");
  if (only.name !== "And") throw malformedXml();
  let prefix: string | undefined;
  for (const c of only.children) {
    if (c.name === "Tag") throw notImplemented("A Tag filter");
    if (c.name !== "Prefix" || c.children.length > 0 || prefix !== undefined) throw malformedXml();
    prefix = checkedPrefix(c.text);
  }
  return prefix ?? "";
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
function validBucketName(name: string): boolean {
  return /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name);
}

function renderReplication(rules: readonly ReplicationRule[]): string {
  const body = rules
    .map((r) => {
      const marker = `<DeleteMarkerReplication>${element("Status", r.deleteMarkers ? "Enabled" : "Disabled")}</DeleteMarkerReplication>`;
      const filter = `<Filter>${element("Prefix", r.prefix)}</Filter>`;
      return `<Rule>${element("ID", r.id)}${element("Priority", String(r.priority))}${element("Status", r.enabled ? "Enabled" : "Disabled")}${filter}${marker}<Destination>${element("Bucket", r.destination)}</Destination></Rule>`;
    })
    .join("");
  return `${XML_DECLARATION}<ReplicationConfiguration xmlns="${S3_XMLNS}"><Role></Role>${body}</ReplicationConfiguration>`;
}
