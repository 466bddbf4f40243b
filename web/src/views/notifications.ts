// A bucket's Notifications panel: its event notification rules (docs/operations.md#event-notifications-webhooks),
// each sending matching events to a webhook or, on Cloudflare, a Queue binding the operator
// configured (`arn:shardgate:webhook::NAME`, `arn:shardgate:queue::BINDING`; the console cannot
// list them: the name is typed), added and removed by writing the whole
// configuration back; and, for the root key, the events waiting and the dead letters, with a retry.
import type { App } from "../app";
import { messageOf, S3Error } from "../errors";
import {
  EVENTS,
  getNotificationStatus,
  getNotifications,
  type NotificationRule,
  retryDeadLetters,
  saveNotifications,
  TARGET_KINDS,
  type TargetKind,
  targetArn,
  targetLabel,
} from "../notifications";
import { h, labelledField, mount, savedOrShown, toast } from "../ui";

interface NotificationsView {
  app: App;
  bucket: string;
  summary: HTMLElement;
  status: HTMLElement;
  rules: HTMLElement;
  outbox: HTMLElement;
  id: HTMLInputElement;
  kind: HTMLSelectElement;
  target: HTMLInputElement;
  events: HTMLInputElement[];
  prefix: HTMLInputElement;
  suffix: HTMLInputElement;
  problem: HTMLElement;
  /** The rules as last loaded, written back with the new one or without a removed one. */
  current: NotificationRule[];
}

export function notificationsPanel(app: App, bucket: string): HTMLElement {
  const view: NotificationsView = {
    app,
    bucket,
    summary: h("summary", null, "Notifications"),
    status: h("div", { class: "small", id: "notifications-status" }, "Loading…"),
    rules: h("div", { id: "notification-rules" }),
    outbox: h("div", { class: "small", id: "notifications-outbox" }),
    id: h("input", { id: "notification-id", placeholder: "new-images", spellcheck: false, autocomplete: "off" }),
    kind: h("select", { id: "notification-kind" }, h("option", { value: "webhook" }, "Webhook"), h("option", { value: "queue" }, "Queue (Cloudflare)")),
    target: h("input", { id: "notification-target", placeholder: "a configured webhook's name", spellcheck: false, autocomplete: "off" }),
    events: EVENTS.map((e) => h("input", { type: "checkbox", value: e, "aria-label": e, checked: e === "s3:ObjectCreated:*" })),
    prefix: h("input", { id: "notification-prefix", placeholder: "images/", spellcheck: false, autocomplete: "off" }),
    suffix: h("input", { id: "notification-suffix", placeholder: ".jpg", spellcheck: false, autocomplete: "off" }),
    problem: h("p", { class: "error", role: "alert", id: "notification-error" }),
    current: [],
  };
  const panel = h("details", { class: "notifications card" }, view.summary, view.status, view.rules, addForm(view), view.outbox);
  // Opened again, the outbox's counts are read again.
  panel.addEventListener("toggle", () => {
    if (panel.open) void loadOutbox(view);
  });
  void load(view);
  return panel;
}

function addForm(view: NotificationsView): HTMLFormElement {
  const events = h(
    "fieldset",
    { class: "field" },
    h("legend", { class: "small" }, "Events"),
    view.events.map((box) => h("label", { class: "small inline" }, box, ` ${box.value}`)),
  );
  return h(
    "form",
    {
      class: "notification-form",
      "aria-label": "Add a notification rule",
      onsubmit: (e: Event) => {
        e.preventDefault();
        void add(view);
      },
    },
    labelledField(
      "notification-kind",
      "Send to",
      view.kind,
      "A webhook or a Queue binding the operator configured: webhooks are named in the gateway's configuration (SHARDGATE_WEBHOOKS, in shardgate.json's vars or wrangler.toml), not here.",
    ),
    labelledField(
      "notification-target",
      "Target name",
      view.target,
      `The webhook's name as configured (${TARGET_KINDS.webhook}NAME) or the Queue's binding (${TARGET_KINDS.queue}BINDING); a name the gateway does not know is refused.`,
    ),
    events,
    labelledField("notification-prefix", "Key prefix", view.prefix, "Only keys starting with it, optional."),
    labelledField("notification-suffix", "Key suffix", view.suffix, "Only keys ending with it, optional."),
    labelledField("notification-id", "Notification id", view.id, "Optional: the gateway names it otherwise."),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add rule")),
    view.problem,
  );
}

async function load(view: NotificationsView): Promise<void> {
  try {
    view.current = await getNotifications(view.app.s3, view.bucket);
  } catch (err) {
    mount(view.status, h("p", { class: "error" }, messageOf(err)));
    return;
  }
  const n = view.current.length;
  view.summary.textContent = n === 0 ? "Notifications: none" : `Notifications: ${n} rule${n === 1 ? "" : "s"}`;
  mount(view.status, h("p", { class: "muted small" }, n === 0 ? "No event is sent. Add a rule to send events to a webhook or a Queue." : ""));
  mount(
    view.rules,
    n === 0
      ? null
      : h(
          "ul",
          { class: "notification-rules", "aria-label": "Notification rules" },
          view.current.map((r) => ruleItem(view, r)),
        ),
  );
  await loadOutbox(view);
}

function ruleItem(view: NotificationsView, rule: NotificationRule): HTMLElement {
  const filter = [rule.prefix ? `prefix ${rule.prefix}` : "", rule.suffix ? `suffix ${rule.suffix}` : ""].filter(Boolean).join(", ");
  return h(
    "li",
    { class: "row" },
    h(
      "span",
      { class: "grow" },
      h("strong", null, rule.id || "(no name)"),
      ` → ${targetLabel(rule.arn)}: ${rule.events.join(", ") || "no event"}`,
      h("span", { class: "muted" }, filter ? ` (${filter})` : " (every key)"),
    ),
    h("button", { type: "button", class: "danger", "aria-label": `Remove rule ${rule.id}`, onclick: () => void remove(view, rule) }, "Remove"),
  );
}

/** The outbox's counts for the root key; other keys are told they are the root key's. */
async function loadOutbox(view: NotificationsView): Promise<void> {
  try {
    const s = await getNotificationStatus(view.app.s3, view.bucket);
    const dropped = s.dropped > 0 ? `; ${s.dropped} dropped (the outbox was full)` : "";
    mount(
      view.outbox,
      h("p", { id: "notifications-counts" }, `Events waiting: ${s.pending}; dead letters: ${s.deadLetters}${dropped}.`),
      s.deadLetters > 0 ? h("button", { type: "button", onclick: () => void retry(view) }, "Retry dead letters") : null,
    );
  } catch (err) {
    const rootOnly = err instanceof S3Error && (err.code === "AccessDenied" || err.status === 403);
    mount(
      view.outbox,
      h("p", { class: rootOnly ? "muted small" : "error" }, rootOnly ? "Events waiting and dead letters are seen with the root key." : messageOf(err)),
    );
  }
}

async function add(view: NotificationsView): Promise<void> {
  view.problem.textContent = "";
  const name = view.target.value.trim();
  const kind: TargetKind = view.kind.value === "queue" ? "queue" : "webhook";
  const events = view.events.filter((b) => b.checked).map((b) => b.value);
  if (name === "") {
    view.problem.textContent = `Name the ${kind} to send the events to.`;
    return;
  }
  if (events.length === 0) {
    view.problem.textContent = "Pick at least one event.";
    return;
  }
  const arn = targetArn(kind, name);
  const rule = { id: view.id.value.trim(), kind: "Queue", arn, events, prefix: view.prefix.value, suffix: view.suffix.value };
  const saved = () => saveNotifications(view.app.s3, view.bucket, [...view.current, rule]);
  if (!(await savedOrShown(view.problem, saved, `Events now go to ${targetLabel(arn)}.`))) return;
  view.id.value = "";
  view.prefix.value = "";
  view.suffix.value = "";
  await load(view);
}

async function remove(view: NotificationsView, rule: NotificationRule): Promise<void> {
  const saved = () =>
    saveNotifications(
      view.app.s3,
      view.bucket,
      view.current.filter((r) => r !== rule),
    );
  if (await savedOrShown(view.problem, saved, `Rule ${rule.id} removed.`)) await load(view);
}

async function retry(view: NotificationsView): Promise<void> {
  try {
    const n = await retryDeadLetters(view.app.s3, view.bucket);
    toast(`${n} dead letter${n === 1 ? "" : "s"} sent again.`);
  } catch (err) {
    toast(messageOf(err));
  }
  await loadOutbox(view);
}
