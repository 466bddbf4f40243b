// A bucket's event notifications: PutBucketNotificationConfiguration / GetBucketNotificationConfiguration
// (`?notification`) with S3's document. Each QueueConfiguration, TopicConfiguration or
// CloudFunctionConfiguration names its target by the ARN-like id of a target the operator
// configured (SHARDGATE_WEBHOOKS: `arn:shardgate:webhook::NAME`; on Cloudflare, a Queue binding of
// SHARDGATE_QUEUES: `arn:shardgate:queue::BINDING`); the URL and secret stay the operator's, so a
// bucket owner cannot make the gateway send anywhere else. Checked as S3 checks:
// unknown elements MalformedXML; an unknown event name, an unknown target, a filter rule not named
// prefix or suffix (or named twice), overlapping configurations InvalidArgument; nothing is stored
// unless the whole document is valid. The rules are applied in the bucket's index (meta/outbox.ts).
import { CONFIGURABLE_EVENTS, type NotificationRule, type RuleKind, rulesOverlap, targetOfArn } from "../../meta/notification-rules";
import { notificationTargets } from "../../services/notification-delivery";
import { QUEUE_ARN_PREFIX, WEBHOOK_ARN_PREFIX } from "../../shared/arns";
import { invalidArgument } from "../../s3-error";
import { bucketIndex, type BucketAt, type RequestContext } from "../http/context";
import { element, xmlResponse, xmlDocument } from "../format/xml";
import { childrenNamed, malformedXml, readXml, type XmlElement } from "../format/xml-parse";

/** The most configurations one document holds, and its size. */
const MAX_CONFIGURATIONS = 100;
const MAX_DOCUMENT_BYTES = 64 * 1024;
/** S3's bounds: a filter value of at most 1024 characters, an Id of at most 255. */
const MAX_FILTER_VALUE = 1024;
const MAX_ID = 255;

/** Each configuration element (`<kind>Configuration`), and its kind: also the name of the element naming its target. */
const KINDS: Record<string, RuleKind> = { QueueConfiguration: "Queue", TopicConfiguration: "Topic", CloudFunctionConfiguration: "CloudFunction" };

export async function putBucketNotification(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  const rules = parseNotificationXml(await readXml(ctx.auth.body, MAX_DOCUMENT_BYTES), notificationTargets(ctx.env, ctx.config));
  await bucketIndex(ctx, bucket).setNotificationConfiguration(rules);
  return new Response(null, { status: 200 });
}

export async function getBucketNotification(ctx: RequestContext, { bucket }: BucketAt): Promise<Response> {
  return xmlResponse(renderNotification(await bucketIndex(ctx, bucket).notificationConfiguration()));
}

/** The document's configurations, each checked; S3's error for the first thing wrong. */
export function parseNotificationXml(doc: XmlElement, targets: ReadonlySet<string>): NotificationRule[] {
  if (doc.name !== "NotificationConfiguration") throw malformedXml();
  const rules: NotificationRule[] = [];
  for (const child of doc.children) {
    if (child.name === "EventBridgeConfiguration")
      throw invalidArgument(
        `EventBridge is not a notification target here: name a webhook (${WEBHOOK_ARN_PREFIX}NAME) or a Queue (${QUEUE_ARN_PREFIX}BINDING).`,
      );
    const kind = KINDS[child.name];
    if (!kind) throw malformedXml();
    if (rules.length >= MAX_CONFIGURATIONS) throw invalidArgument(`A notification configuration may hold at most ${MAX_CONFIGURATIONS} configurations.`);
    rules.push(parseRule(child, kind, targets));
  }
  for (const [i, rule] of rules.entries()) {
    const earlier = rules.slice(0, i);
    if (earlier.some((other) => other.id === rule.id)) throw invalidArgument("Configuration Id must be unique within the notification configuration.");
    if (earlier.some((other) => rulesOverlap(rule, other)))
      throw invalidArgument("Configurations overlap. Configurations on the same bucket cannot share a common event type.");
  }
  return rules;
}

/** One configuration element: Id, its target (an element named `kind`), Event+ and an optional Filter. */
function parseRule(el: XmlElement, kind: RuleKind, targets: ReadonlySet<string>): NotificationRule {
  let id: string | undefined;
  let arn: string | undefined;
  const events: string[] = [];
  let filter: { prefix?: string; suffix?: string } = {};
  for (const c of el.children) {
    if (c.name === "Id" && id === undefined && c.children.length === 0) id = c.text.trim();
    else if (c.name === kind && arn === undefined && c.children.length === 0) arn = c.text.trim();
    else if (c.name === "Event" && c.children.length === 0) events.push(c.text.trim());
    else if (c.name === "Filter") filter = parseFilter(c);
    else throw malformedXml();
  }
  if (arn === undefined || events.length === 0) throw malformedXml();
  if (id !== undefined && id.length > MAX_ID) throw invalidArgument(`A configuration Id is at most ${MAX_ID} characters.`);
  for (const e of events) if (!CONFIGURABLE_EVENTS.includes(e)) throw invalidArgument(`The event is not supported for notifications: ${e.slice(0, 100)}`);
  const target = targetOfArn(arn);
  if (target === null || !targets.has(target)) {
    throw invalidArgument(
      `Unable to validate the following destination configurations: ${arn.slice(0, 200)} (a target is named ${WEBHOOK_ARN_PREFIX}NAME for a webhook the operator configured, or ${QUEUE_ARN_PREFIX}BINDING for a Queue binding)`,
    );
  }
  return { id: id || crypto.randomUUID(), kind, arn, events: [...new Set(events)], ...filter };
}

/** <Filter><S3Key><FilterRule><Name>prefix|suffix</Name><Value>…</Value></FilterRule>…</S3Key></Filter>. */
function parseFilter(el: XmlElement): { prefix?: string; suffix?: string } {
  const keys = el.children;
  if (keys.length !== 1 || keys[0]?.name !== "S3Key") throw malformedXml();
  const out: { prefix?: string; suffix?: string } = {};
  for (const rule of keys[0].children) {
    if (rule.name !== "FilterRule") throw malformedXml();
    const names = childrenNamed(rule, "Name");
    const values = childrenNamed(rule, "Value");
    if (names.length !== 1 || values.length > 1 || rule.children.length !== names.length + values.length) throw malformedXml();
    const name = (names[0] as XmlElement).text.trim().toLowerCase();
    const value = values[0]?.text ?? "";
    if (name !== "prefix" && name !== "suffix") throw invalidArgument("filter rule name must be either prefix or suffix");
    if (out[name] !== undefined) throw invalidArgument(`Cannot specify more than one ${name} rule in a filter.`);
    if (value.length > MAX_FILTER_VALUE) throw invalidArgument(`The ${name} filter value is at most ${MAX_FILTER_VALUE} characters.`);
    out[name] = value;
  }
  // An empty value filters nothing.
  if (out.prefix === "") delete out.prefix;
  if (out.suffix === "") delete out.suffix;
  return out;
}

function renderNotification(rules: readonly NotificationRule[]): string {
  const body = rules
    .map((r) => {
      const filters = [...(r.prefix !== undefined ? [["Prefix", r.prefix]] : []), ...(r.suffix !== undefined ? [["Suffix", r.suffix]] : [])]
        .map(([n, v]) => `<FilterRule>${element("Name", n as string)}${element("Value", v as string)}</FilterRule>`)
        .join("");
      const filter = filters ? `<Filter><S3Key>${filters}</S3Key></Filter>` : "";
      const tag = `${r.kind}Configuration`;
      return `<${tag}>${element("Id", r.id)}${element(r.kind, r.arn)}${r.events.map((e) => element("Event", e)).join("")}${filter}</${tag}>`;
    })
    .join("");
  return xmlDocument("NotificationConfiguration", body);
}
