// A bucket's Quota panel: what it stores (bytes and objects, every version counted) against its
// hard quota, which the root key sets or removes (docs/operations.md#bucket-quotas). Other keys see
// that quotas are the root key's.
import type { App } from "../app";
import { messageOf, S3Error } from "../errors";
import { clearQuota, getQuota, parseSize, type QuotaState, setQuota } from "../quota";
import { h, humanSize, labelledField, mount, toast } from "../ui";

interface QuotaView {
  app: App;
  bucket: string;
  summary: HTMLElement;
  status: HTMLElement;
  maxBytes: HTMLInputElement;
  maxObjects: HTMLInputElement;
  problem: HTMLElement;
  form: HTMLFormElement;
}

export function quotaPanel(app: App, bucket: string): HTMLElement {
  const view: QuotaView = {
    app,
    bucket,
    summary: h("summary", null, "Quota"),
    status: h("div", { class: "small", id: "quota-status" }, "Loading…"),
    maxBytes: h("input", { id: "quota-bytes", placeholder: "10 GiB", spellcheck: false, autocomplete: "off" }),
    maxObjects: h("input", { id: "quota-objects", placeholder: "100000", inputmode: "numeric", autocomplete: "off" }),
    problem: h("p", { class: "error", role: "alert", id: "quota-error" }),
    form: h("form", { class: "quota-form", "aria-label": "Bucket quota" }),
  };
  view.form.onsubmit = (e: Event) => {
    e.preventDefault();
    void save(view);
  };
  mount(
    view.form,
    labelledField("quota-bytes", "Most bytes", view.maxBytes, "e.g. 500 MiB, 10 GiB, or a number of bytes (1 MB here is 1 MiB, as shown); empty: no limit."),
    labelledField("quota-objects", "Most objects", view.maxObjects, "Every version counts; empty: no limit."),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Save quota"),
      h("button", { type: "button", class: "danger", onclick: () => void remove(view) }, "Remove quota"),
    ),
    view.problem,
  );
  const panel = h("details", { class: "quota card" }, view.summary, view.status, view.form);
  void load(view);
  return panel;
}

async function load(view: QuotaView): Promise<void> {
  let state: QuotaState;
  try {
    state = await getQuota(view.app.s3, view.bucket);
  } catch (err) {
    const rootOnly = err instanceof S3Error && (err.code === "AccessDenied" || err.status === 403);
    view.summary.textContent = "Quota";
    mount(view.status, h("p", { class: rootOnly ? "muted small" : "error" }, rootOnly ? "Quotas are seen and set with the root key." : messageOf(err)));
    view.form.hidden = true;
    return;
  }
  const { quota, usage } = state;
  const of = (used: string, max: string | null) => (max === null ? `${used} (no limit)` : `${used} of ${max}`);
  const inUploads = usage.pending > 0 ? ` (${humanSize(usage.pending)} in uploads in progress)` : "";
  const bytes = of(humanSize(usage.bytes + usage.pending), quota?.maxBytes != null ? humanSize(quota.maxBytes) : null) + inUploads;
  const objects = of(String(usage.objects), quota?.maxObjects != null ? String(quota.maxObjects) : null);
  // Over: past a limit lowered below what is stored (writes are refused until it is back under).
  const over = (quota?.maxBytes != null && usage.bytes + usage.pending > quota.maxBytes) || (quota?.maxObjects != null && usage.objects > quota.maxObjects);
  view.summary.textContent = quota ? `Quota: ${bytes}${over ? " (over quota)" : ""}` : "Quota: none";
  mount(
    view.status,
    h("p", { id: "quota-usage" }, `Stored: ${bytes}; objects: ${objects}.`),
    over
      ? h("p", { class: "error", id: "quota-over", role: "status" }, "Over quota: writes to this bucket are refused until it is back under its limit.")
      : null,
  );
  view.maxBytes.value = quota?.maxBytes != null ? String(quota.maxBytes) : "";
  view.maxObjects.value = quota?.maxObjects != null ? String(quota.maxObjects) : "";
}

async function save(view: QuotaView): Promise<void> {
  view.problem.textContent = "";
  const maxBytes = parseSize(view.maxBytes.value);
  const objectsText = view.maxObjects.value.trim();
  const maxObjects = objectsText === "" ? null : /^[0-9]{1,15}$/.test(objectsText) ? Number(objectsText) : undefined;
  if (maxBytes === undefined) {
    view.problem.textContent = "Most bytes: a size such as 500 MiB or 10 GiB, a number of bytes, or empty.";
    return;
  }
  if (maxObjects === undefined) {
    view.problem.textContent = "Most objects: a whole number, or empty.";
    return;
  }
  try {
    await setQuota(view.app.s3, view.bucket, { maxBytes, maxObjects });
    toast(maxBytes === null && maxObjects === null ? "The bucket has no quota." : "The quota is saved: writes past it are refused.");
  } catch (err) {
    view.problem.textContent = messageOf(err);
    return;
  }
  await load(view);
}

async function remove(view: QuotaView): Promise<void> {
  view.problem.textContent = "";
  try {
    await clearQuota(view.app.s3, view.bucket);
    toast("The bucket has no quota.");
  } catch (err) {
    view.problem.textContent = messageOf(err);
    return;
  }
  await load(view);
}
