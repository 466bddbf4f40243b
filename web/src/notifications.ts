// A bucket's event notifications (docs/operations.md#event-notifications-webhooks): its rules as
// GetBucketNotificationConfiguration answers them and PutBucketNotificationConfiguration takes
// them (the whole document each time), and the outbox's state from the admin API (root key only).
import { adminJson } from "./access";
import { encodeSegment, type S3Client } from "./s3";
import { childText, children, parseXml, xmlEscape } from "./xml";
import { QUEUE_ARN_PREFIX, WEBHOOK_ARN_PREFIX } from "../../worker/src/shared/arns";

export interface NotificationRule {
  id: string;
  /** Queue, Topic or CloudFunction: the element the rule came in, kept when written back. */
  kind: string;
  /** The target, `arn:shardgate:webhook::NAME` or `arn:shardgate:queue::BINDING`. */
  arn: string;
  events: string[];
  prefix: string;
  suffix: string;
}

export interface NotificationStatus {
  pending: number;
  deadLetters: number;
  dropped: number;
  nextDue: string | null;
}

/** The events the gateway takes, the wildcards first. */
export const EVENTS = [
  "s3:ObjectCreated:*",
  "s3:ObjectRemoved:*",
  "s3:ObjectCreated:Put",
  "s3:ObjectCreated:Post",
  "s3:ObjectCreated:Copy",
  "s3:ObjectCreated:CompleteMultipartUpload",
  "s3:ObjectRemoved:Delete",
  "s3:ObjectRemoved:DeleteMarkerCreated",
];

const S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/";
const KINDS = ["Queue", "Topic", "CloudFunction"];

export async function getNotifications(s3: S3Client, bucket: string): Promise<NotificationRule[]> {
  const res = await s3.request("GET", `/${encodeSegment(bucket)}`, { query: { notification: "" } });
  return parseNotifications(await res.text());
}

/** The rules of a NotificationConfiguration document; an element missing reads as empty. */
export function parseNotifications(text: string): NotificationRule[] {
  const doc = parseXml(text);
  return KINDS.flatMap((kind) =>
    children(doc, `${kind}Configuration`).map((el) => {
      const filters = children(el, "Filter").flatMap((f) => children(f, "S3Key").flatMap((k) => children(k, "FilterRule")));
      const filter = (name: string) => filters.find((r) => childText(r, "Name").trim().toLowerCase() === name);
      const value = (name: string) => {
        const rule = filter(name);
        return rule ? childText(rule, "Value") : "";
      };
      return {
        id: childText(el, "Id"),
        kind,
        arn: childText(el, kind).trim(),
        events: children(el, "Event").map((e) => (e.textContent ?? "").trim()),
        prefix: value("prefix"),
        suffix: value("suffix"),
      };
    }),
  );
}

/** The document PutBucketNotificationConfiguration takes for `rules`. */
export function notificationXml(rules: readonly NotificationRule[]): string {
  const el = (name: string, value: string) => `<${name}>${xmlEscape(value)}</${name}>`;
  const body = rules
    .map((r) => {
      const kind = KINDS.includes(r.kind) ? r.kind : "Queue";
      const filterRule = (name: string, value: string) => (value === "" ? "" : `<FilterRule>${el("Name", name)}${el("Value", value)}</FilterRule>`);
      const filters = filterRule("prefix", r.prefix) + filterRule("suffix", r.suffix);
      const filter = filters === "" ? "" : `<Filter><S3Key>${filters}</S3Key></Filter>`;
      const id = r.id === "" ? "" : el("Id", r.id);
      return `<${kind}Configuration>${id}${el(kind, r.arn)}${r.events.map((e) => el("Event", e)).join("")}${filter}</${kind}Configuration>`;
    })
    .join("");
  return `<NotificationConfiguration xmlns="${S3_XMLNS}">${body}</NotificationConfiguration>`;
}

/** Stores `rules` as the bucket's whole configuration (the gateway checks it: InvalidArgument with the reason). */
export async function saveNotifications(s3: S3Client, bucket: string, rules: readonly NotificationRule[]): Promise<void> {
  await s3.request("PUT", `/${encodeSegment(bucket)}`, {
    query: { notification: "" },
    headers: { "content-type": "application/xml" },
    body: notificationXml(rules),
  });
}

/** The kinds of target a rule may name, and the ARN prefix of each. */
export const TARGET_KINDS = { webhook: WEBHOOK_ARN_PREFIX, queue: QUEUE_ARN_PREFIX } as const;
export type TargetKind = keyof typeof TARGET_KINDS;

/** A rule's target as the panel names it: "webhook NAME", "queue BINDING", or the ARN as it is. */
export function targetLabel(arn: string): string {
  for (const [kind, prefix] of Object.entries(TARGET_KINDS)) if (arn.startsWith(prefix)) return `${kind} ${arn.slice(prefix.length)}`;
  return arn;
}

/** The ARN a typed name stands for: itself when it is one of a target's ARNs already, else `kind`'s ARN of the name. */
export function targetArn(kind: TargetKind, name: string): string {
  return Object.values(TARGET_KINDS).some((prefix) => name.startsWith(prefix)) ? name : `${TARGET_KINDS[kind]}${name}`;
}

const adminPath = (bucket: string) => `buckets/${encodeSegment(bucket)}/notifications`;

/** The bucket's outbox: events waiting, dead letters, events dropped (admin API, root key only). */
export async function getNotificationStatus(s3: S3Client, bucket: string): Promise<NotificationStatus> {
  const s = ((await adminJson<Partial<NotificationStatus>>(s3, "GET", adminPath(bucket))) ?? {}) as Partial<NotificationStatus>;
  return { pending: s.pending ?? 0, deadLetters: s.deadLetters ?? 0, dropped: s.dropped ?? 0, nextDue: s.nextDue ?? null };
}

/** Puts every dead letter back in the outbox; how many. */
export async function retryDeadLetters(s3: S3Client, bucket: string): Promise<number> {
  const r = (await adminJson<{ retried?: number }>(s3, "POST", `${adminPath(bucket)}/retry`)) ?? {};
  return r.retried ?? 0;
}
