// A bucket's lifecycle rules (list, add, delete) and object lock state in a panel above its
// listing, and an object's retention and legal hold in its dialog.
import { messageOf } from "../errors";
import type { App } from "../app";
import {
  type LifecycleRule,
  type LockState,
  lifecycleRules,
  lockState,
  defaultEncryption,
  setDefaultEncryption,
  type NewRule,
  objectLockOf,
  ruleXml,
  saveLifecycleRules,
  setLegalHold,
} from "../protection";
import { confirmDialog, h, humanDate, mount, toast } from "../ui";

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

function retentionText(r: NonNullable<LockState["defaultRetention"]>): string {
  const span = r.years !== undefined ? plural(r.years, "year") : plural(r.days ?? 0, "day");
  return `new versions are locked in ${r.mode} mode for ${span}`;
}

/** What a lock configuration means, in a sentence. */
function lockText(state: LockState | null): string {
  if (!state) return "Object lock is off (it can only be chosen when a bucket is created).";
  const what = state.defaultRetention ? retentionText(state.defaultRetention) : "versions are locked only when an upload or a client asks";
  return `Object lock is on: ${what}. Locked versions cannot be deleted until their retention ends.`;
}

/** What a rule does, one phrase per action. */
export function ruleActions(rule: LifecycleRule): string[] {
  const out: string[] = [];
  if (rule.expireDays !== undefined) out.push(`objects expire ${plural(rule.expireDays, "day")} after they are written`);
  if (rule.expireDate) out.push(`objects expire on ${rule.expireDate.slice(0, 10)}`);
  if (rule.expiredDeleteMarkers) out.push("delete markers with no versions left are removed");
  if (rule.noncurrentDays !== undefined) {
    const keep = rule.keepNewer ? ` (the newest ${rule.keepNewer} are kept)` : "";
    out.push(`earlier versions are deleted ${plural(rule.noncurrentDays, "day")} after they are replaced${keep}`);
  }
  if (rule.abortUploadDays !== undefined) out.push(`unfinished uploads are abandoned after ${plural(rule.abortUploadDays, "day")}`);
  return out;
}

function scopeOf(rule: LifecycleRule): string {
  const where = rule.prefix ? `Under “${rule.prefix}”` : "Everywhere";
  return rule.conditions.length ? `${where}, ${rule.conditions.join(", ")}` : where;
}

/** The panel's regions, and the rules as last loaded. */
interface ProtectionView {
  app: App;
  bucket: string;
  summary: HTMLElement;
  lock: HTMLElement;
  encrypts: HTMLInputElement;
  rules: HTMLElement;
  current: LifecycleRule[];
}

/** The panel: a summary line that opens onto the rules, the form for a new one and the lock state. */
export function protectionPanel(app: App, bucket: string): HTMLElement {
  const view: ProtectionView = {
    app,
    bucket,
    summary: h("summary", null, "Lifecycle rules and object lock"),
    lock: h("p", { class: "small", id: "object-lock-status" }, "Object lock: …"),
    encrypts: h("input", { type: "checkbox", id: "default-encryption" }),
    rules: h("div", { class: "lifecycle-rules" }, h("p", { class: "muted small" }, "Loading the rules…")),
    current: [],
  };
  const panel = h(
    "details",
    { class: "protection card" },
    view.summary,
    h("section", { "aria-labelledby": "encryption-title" }, h("h3", { id: "encryption-title" }, "Encryption at rest"), encryptionSwitch(view)),
    h("section", { "aria-labelledby": "lock-title" }, h("h3", { id: "lock-title" }, "Object lock"), view.lock),
    h(
      "section",
      { "aria-labelledby": "lifecycle-title" },
      h("h3", { id: "lifecycle-title" }, "Lifecycle rules"),
      view.rules,
      ruleForm(app, bucket, () => load(view)),
    ),
  );
  void load(view);
  return panel;
}

/** The default encryption check box: saved when changed (put back if that fails). */
function encryptionSwitch(view: ProtectionView): HTMLElement {
  const { app, bucket, encrypts } = view;
  encrypts.addEventListener("change", async () => {
    try {
      await setDefaultEncryption(app.s3, bucket, encrypts.checked);
      toast(encrypts.checked ? "New objects in this bucket are now encrypted." : "New objects are no longer encrypted by default.");
    } catch (err) {
      encrypts.checked = !encrypts.checked;
      toast(messageOf(err), "error");
    }
    await load(view);
  });
  return h(
    "div",
    null,
    h("label", { class: "check" }, encrypts, " Encrypt new objects (SSE-S3: AES-256; storage nodes only ever hold ciphertext)"),
    h("p", { class: "muted small" }, "Objects already stored stay as they are. Clients can still choose their own key (SSE-C) per object."),
  );
}

/** Loads the rules, the lock state and the default encryption, and sums them up in the summary line. */
async function load(view: ProtectionView): Promise<void> {
  const { app, bucket } = view;
  try {
    const [list, state, encrypted] = await Promise.all([lifecycleRules(app.s3, bucket), lockState(app.s3, bucket), defaultEncryption(app.s3, bucket)]);
    view.current = list;
    view.lock.textContent = lockText(state);
    view.encrypts.checked = encrypted;
    view.summary.textContent = `Lifecycle rules: ${list.length || "none"} · Object lock: ${state ? "on" : "off"} · Encryption: ${encrypted ? "SSE-S3" : "off"}`;
    renderRules(view);
  } catch (err) {
    mount(view.rules, h("p", { class: "error" }, messageOf(err)));
  }
}

function renderRules(view: ProtectionView): void {
  if (view.current.length === 0) {
    mount(view.rules, h("p", { class: "muted small" }, "No rules: objects and their versions stay until someone deletes them."));
    return;
  }
  const item = (rule: LifecycleRule) =>
    h(
      "li",
      { class: "rule" },
      h("strong", null, rule.id),
      rule.enabled ? null : h("span", { class: "badge" }, "disabled"),
      h("span", { class: "rule-text small" }, `${scopeOf(rule)}: ${ruleActions(rule).join("; ")}.`),
      h("button", { type: "button", class: "small danger", "aria-label": `Delete rule ${rule.id}`, onclick: () => removeRule(view, rule) }, "Delete"),
    );
  mount(view.rules, h("ul", { class: "rules", "aria-label": "Lifecycle rules" }, view.current.map(item)));
}

async function removeRule(view: ProtectionView, rule: LifecycleRule): Promise<void> {
  if (!(await confirmDialog("Delete rule", `Delete the lifecycle rule “${rule.id}”? Nothing expires by it any more.`, "Delete"))) return;
  try {
    await saveLifecycleRules(
      view.app.s3,
      view.bucket,
      view.current.filter((r) => r !== rule).map((r) => r.xml),
    );
    toast(`Rule ${rule.id} deleted.`);
  } catch (err) {
    toast(messageOf(err), "error");
  }
  await load(view);
}

/** The form that adds a rule: a prefix and any of three day counts. */
function ruleForm(app: App, bucket: string, saved: () => Promise<void>): HTMLElement {
  const input = (id: string, label: string, attrs: Record<string, unknown>) => {
    const el = h("input", { id, ...attrs });
    return { el, field: h("div", { class: "field" }, h("label", { for: id }, label), el) };
  };
  const id = input("rule-id", "Rule name", { placeholder: "expire-logs", maxlength: 255 });
  const prefix = input("rule-prefix", "Key prefix (empty: every object)", { placeholder: "logs/", spellcheck: false });
  const days = (name: string, label: string) => input(name, label, { type: "number", min: 1, step: 1, inputmode: "numeric", placeholder: "days" });
  const expire = days("rule-expire", "Expire objects after (days)");
  const noncurrent = days("rule-noncurrent", "Delete earlier versions after (days)");
  const abort = days("rule-abort", "Abandon unfinished uploads after (days)");
  const error = h("p", { class: "error", role: "alert" });
  const value = (el: HTMLInputElement) => (el.value.trim() === "" ? undefined : Number(el.value));
  return h(
    "form",
    {
      class: "rule-form",
      "aria-label": "New lifecycle rule",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = "";
        const rule: NewRule = {
          id: id.el.value.trim() || `rule-${Date.now().toString(36)}`,
          prefix: prefix.el.value,
          expireDays: value(expire.el),
          noncurrentDays: value(noncurrent.el),
          abortUploadDays: value(abort.el),
        };
        if (rule.expireDays === undefined && rule.noncurrentDays === undefined && rule.abortUploadDays === undefined) {
          error.textContent = "Give at least one number of days.";
          return;
        }
        try {
          const rules = await lifecycleRules(app.s3, bucket);
          await saveLifecycleRules(app.s3, bucket, [...rules.map((r) => r.xml), ruleXml(rule)]);
          toast(`Rule ${rule.id} added.`);
          for (const f of [id, prefix, expire, noncurrent, abort]) f.el.value = "";
          await saved();
        } catch (err) {
          error.textContent = messageOf(err);
        }
      },
    },
    h("div", { class: "rule-fields" }, id.field, prefix.field, expire.field, noncurrent.field, abort.field),
    h("button", { type: "submit" }, "Add rule"),
    error,
  );
}

/** An object's retention and legal hold (its bucket has object lock), with the legal hold switch. */
export async function renderObjectLock(app: App, el: HTMLElement, bucket: string, key: string, headers: Headers): Promise<void> {
  let state: LockState | null;
  try {
    state = await lockState(app.s3, bucket);
  } catch (err) {
    mount(el, h("p", { class: "error" }, messageOf(err)));
    return;
  }
  const lock = objectLockOf(headers);
  if (!state && !lock.mode && !lock.legalHold) {
    el.closest("section")?.setAttribute("hidden", "");
    return;
  }
  const retention =
    lock.mode && lock.retainUntil && lock.retainUntil.getTime() > Date.now()
      ? `${lock.mode} until ${humanDate(lock.retainUntil)}${lock.mode === "COMPLIANCE" ? " (nobody can delete it before)" : ""}`
      : "none";
  const hold = h("dd", { id: "legal-hold" }, lock.legalHold ? "on" : "off");
  const toggle = h("button", { type: "button", class: "small" }, lock.legalHold ? "Lift legal hold" : "Place legal hold");
  toggle.addEventListener("click", async () => {
    const on = hold.textContent !== "on";
    try {
      await setLegalHold(app.s3, bucket, key, on);
      hold.textContent = on ? "on" : "off";
      toggle.textContent = on ? "Lift legal hold" : "Place legal hold";
      toast(on ? "Legal hold placed: the current version cannot be deleted." : "Legal hold lifted.");
    } catch (err) {
      toast(messageOf(err), "error");
    }
  });
  mount(
    el,
    h("dl", { class: "kv" }, h("dt", null, "Retention"), h("dd", { id: "retention" }, retention), h("dt", null, "Legal hold"), hold),
    state ? h("div", { class: "row" }, toggle) : null,
  );
}
