// A bucket's event notification configuration (PutBucketNotificationConfiguration) as the bucket's
// index keeps and applies it: the event names S3 sends that this gateway sends too, a rule's
// filters, which rules an event matches, and the check that two rules do not overlap (S3 refuses
// a configuration where they do). Pure: the XML is api/s3/bucket-notification.ts's, the outbox
// meta/outbox.ts's. A rule names its target by an ARN-like id of a target the operator configured
// (SHARDGATE_WEBHOOKS: `arn:shardgate:webhook::NAME`; SHARDGATE_QUEUES: `arn:shardgate:queue::BINDING`);
// the URL and its secret are never here.
import { QUEUE_ARN_PREFIX, WEBHOOK_ARN_PREFIX } from "../shared/arns";

/** The events a commit or a delete produces (S3's names, without the "s3:" prefix). */
export type EventName =
  | "ObjectCreated:Put"
  | "ObjectCreated:Post"
  | "ObjectCreated:Copy"
  | "ObjectCreated:CompleteMultipartUpload"
  | "ObjectRemoved:Delete"
  | "ObjectRemoved:DeleteMarkerCreated";

/** How a new version was written: the event it makes is ObjectCreated:<this>. */
export type CreatedBy = "Put" | "Post" | "Copy" | "CompleteMultipartUpload";

/** The event names a configuration may name: each event, and the two wildcards. */
export const CONFIGURABLE_EVENTS: readonly string[] = [
  "s3:ObjectCreated:*",
  "s3:ObjectCreated:Put",
  "s3:ObjectCreated:Post",
  "s3:ObjectCreated:Copy",
  "s3:ObjectCreated:CompleteMultipartUpload",
  "s3:ObjectRemoved:*",
  "s3:ObjectRemoved:Delete",
  "s3:ObjectRemoved:DeleteMarkerCreated",
];

/** Which element of the configuration a rule came in (its target's element is Queue, Topic or CloudFunction). */
export type RuleKind = "Queue" | "Topic" | "CloudFunction";

/** One configuration of the document: its id, target, events and key filters. */
export interface NotificationRule {
  id: string;
  kind: RuleKind;
  /** The target's ARN-like id as given (`arn:shardgate:webhook::NAME`, `arn:shardgate:queue::BINDING`). */
  arn: string;
  /** Event names as given (s3:ObjectCreated:*, …). */
  events: string[];
  prefix?: string;
  suffix?: string;
}

/** The outbox targets of event notifications start with one of these (replication's do not). */
export const WEBHOOK_TARGET = "webhook:";
export const QUEUE_TARGET = "queue:";
export const NOTIFICATION_TARGETS: readonly string[] = [WEBHOOK_TARGET, QUEUE_TARGET];

/** The outbox target (meta/outbox.ts) a rule's ARN names: "webhook:NAME", "queue:BINDING", or null when it names none. */
export function targetOfArn(arn: string): string | null {
  for (const [prefix, target] of [
    [WEBHOOK_ARN_PREFIX, WEBHOOK_TARGET],
    [QUEUE_ARN_PREFIX, QUEUE_TARGET],
  ] as const) {
    if (!arn.startsWith(prefix)) continue;
    const name = arn.slice(prefix.length);
    return /^[A-Za-z0-9_-]{1,64}$/.test(name) ? `${target}${name}` : null;
  }
  return null;
}

/** Whether `event` (s3:…) is named by `configured` (itself, or its family's wildcard). */
function names(configured: string, event: string): boolean {
  return configured === event || (configured.endsWith(":*") && event.startsWith(configured.slice(0, -1)));
}

/** The rules `event` on `key` matches (an event name and both filters). */
export function matchingRules(rules: readonly NotificationRule[], event: EventName, key: string): NotificationRule[] {
  const full = `s3:${event}`;
  return rules.filter(
    (r) => r.events.some((e) => names(e, full)) && (r.prefix === undefined || key.startsWith(r.prefix)) && (r.suffix === undefined || key.endsWith(r.suffix)),
  );
}

/** Every single event a configured name stands for (a wildcard: its family). */
function expand(configured: string): string[] {
  return configured.endsWith(":*") ? CONFIGURABLE_EVENTS.filter((e) => !e.endsWith(":*") && names(configured, e)) : [configured];
}

/**
 * Whether two rules overlap as S3 judges it: they share an event type and a key could pass both
 * filters' prefixes (one is a prefix of the other, no prefix counting as "") and suffixes (one
 * is a suffix of the other). S3 refuses such a configuration (InvalidArgument).
 */
export function rulesOverlap(a: NotificationRule, b: NotificationRule): boolean {
  const eventsA = new Set(a.events.flatMap(expand));
  if (!b.events.flatMap(expand).some((e) => eventsA.has(e))) return false;
  const pa = a.prefix ?? "";
  const pb = b.prefix ?? "";
  const sa = a.suffix ?? "";
  const sb = b.suffix ?? "";
  return (pa.startsWith(pb) || pb.startsWith(pa)) && (sa.endsWith(sb) || sb.endsWith(sa));
}
