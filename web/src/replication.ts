// A bucket's replication (docs/operations.md#bucket-replication): its rules as GetBucketReplication
// answers them, written back whole with PutBucketReplication (DeleteBucketReplication when none
// remain), and the replication backlog from the admin API when it gives one (root key only).
import { adminJson } from "./access";
import { S3Error } from "./errors";
import { encodeSegment, type S3Client } from "./s3";
import { childText, children, parseXml, xmlEscape } from "./xml";
import { LOCAL_ARN_PREFIX, REMOTE_ARN_PREFIX } from "../../worker/src/shared/arns";

export interface ReplicationRule {
  id: string;
  priority: number;
  enabled: boolean;
  prefix: string;
  deleteMarkers: boolean;
  /** `arn:aws:s3:::BUCKET` (a bucket of this gateway) or `arn:shardgate:s3:::TARGET/BUCKET`. */
  destination: string;
}

const S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";

/** The bucket's rules; [] when it has no replication configuration. */
export async function getReplication(s3: S3Client, bucket: string): Promise<ReplicationRule[]> {
  let text: string;
  try {
    text = await (await s3.request("GET", `/${encodeSegment(bucket)}`, { query: { replication: "" } })).text();
  } catch (err) {
    if (err instanceof S3Error && err.code === "ReplicationConfigurationNotFoundError") return [];
    throw err;
  }
  return parseReplication(text);
}

/** The rules of a ReplicationConfiguration document (a Filter's Prefix, its And's, or the older top-level Prefix). */
export function parseReplication(text: string): ReplicationRule[] {
  return children(parseXml(text), "Rule").map((rule, i) => {
    const filter = children(rule, "Filter")[0];
    const and = filter ? children(filter, "And")[0] : undefined;
    const prefix = and ? childText(and, "Prefix") : filter ? childText(filter, "Prefix") : childText(rule, "Prefix");
    const marker = children(rule, "DeleteMarkerReplication")[0];
    const destination = children(rule, "Destination")[0];
    const priority = Number(childText(rule, "Priority"));
    return {
      id: childText(rule, "ID") || `rule-${i + 1}`,
      priority: Number.isSafeInteger(priority) ? priority : 0,
      enabled: childText(rule, "Status").trim() === "Enabled",
      prefix,
      deleteMarkers: marker ? childText(marker, "Status").trim() === "Enabled" : false,
      destination: destination ? childText(destination, "Bucket").trim() : "",
    };
  });
}

/** The document PutBucketReplication takes for `rules` (each with a Filter, so each needs its own priority). */
export function replicationXml(rules: readonly ReplicationRule[]): string {
  const el = (name: string, value: string) => `<${name}>${xmlEscape(value)}</${name}>`;
  const body = rules
    .map(
      (r) =>
        `<Rule>${el("ID", r.id)}${el("Priority", String(r.priority))}${el("Status", r.enabled ? "Enabled" : "Disabled")}` +
        `<Filter>${el("Prefix", r.prefix)}</Filter>` +
        `<DeleteMarkerReplication>${el("Status", r.deleteMarkers ? "Enabled" : "Disabled")}</DeleteMarkerReplication>` +
        `<Destination>${el("Bucket", r.destination)}</Destination></Rule>`,
    )
    .join("");
  return `<ReplicationConfiguration xmlns="${S3_XMLNS}"><Role></Role>${body}</ReplicationConfiguration>`;
}

/** Stores `rules` as the bucket's whole configuration, or deletes it when none remain. */
export async function saveReplication(s3: S3Client, bucket: string, rules: readonly ReplicationRule[]): Promise<void> {
  const path = `/${encodeSegment(bucket)}`;
  if (rules.length === 0) {
    await s3.request("DELETE", path, { query: { replication: "" } });
    return;
  }
  await s3.request("PUT", path, { query: { replication: "" }, headers: { "content-type": "application/xml" }, body: replicationXml(rules) });
}

/** The destination ARN for what the form holds: a bucket of this gateway, or TARGET/BUCKET on a remote target. */
export function destinationArn(text: string): string {
  const t = text.trim();
  if (t.startsWith(LOCAL_ARN_PREFIX) || t.startsWith(REMOTE_ARN_PREFIX)) return t;
  return t.includes("/") ? `${REMOTE_ARN_PREFIX}${t}` : `${LOCAL_ARN_PREFIX}${t}`;
}

/** The destination in words: "bucket NAME here" or "TARGET/BUCKET". */
export function destinationText(arn: string): string {
  if (arn.startsWith(REMOTE_ARN_PREFIX)) return `${arn.slice(REMOTE_ARN_PREFIX.length)} (remote target)`;
  if (arn.startsWith(LOCAL_ARN_PREFIX)) return `bucket ${arn.slice(LOCAL_ARN_PREFIX.length)} of this gateway`;
  return arn;
}

/** Versions waiting to be replicated and those that failed, when the admin API says (root key only); null otherwise. */
export async function getReplicationBacklog(s3: S3Client, bucket: string): Promise<{ pending: number; dead: number } | null> {
  try {
    const s = await adminJson<{ replication?: { pending?: number; dead?: number } }>(s3, "GET", `buckets/${encodeSegment(bucket)}/notifications`);
    const r = s?.replication;
    return r ? { pending: r.pending ?? 0, dead: r.dead ?? 0 } : null;
  } catch {
    return null;
  }
}
