// A bucket's Replication panel: its rules (docs/operations.md#bucket-replication), each copying new
// versions under a prefix to a bucket of this gateway (`arn:aws:s3:::NAME`) or to a bucket on a
// remote target the operator configured (`arn:shardgate:s3:::TARGET/BUCKET`), added and removed by
// writing the whole configuration back (deleted when none remain); the backlog for the root key.
import type { App } from "../app";
import { messageOf } from "../errors";
import { destinationArn, destinationText, getReplication, getReplicationBacklog, type ReplicationRule, saveReplication } from "../replication";
import { h, labelledField, mount, savedOrShown } from "../ui";

interface ReplicationView {
  app: App;
  bucket: string;
  summary: HTMLElement;
  status: HTMLElement;
  rules: HTMLElement;
  backlog: HTMLElement;
  id: HTMLInputElement;
  destination: HTMLInputElement;
  prefix: HTMLInputElement;
  deleteMarkers: HTMLInputElement;
  problem: HTMLElement;
  /** The rules as last loaded, written back with the new one or without a removed one. */
  current: ReplicationRule[];
}

export function replicationPanel(app: App, bucket: string): HTMLElement {
  const view: ReplicationView = {
    app,
    bucket,
    summary: h("summary", null, "Replication"),
    status: h("div", { class: "small", id: "replication-status" }, "Loading…"),
    rules: h("div", { id: "replication-rules" }),
    backlog: h("div", { class: "small", id: "replication-backlog" }),
    id: h("input", { id: "replication-id", placeholder: "offsite", spellcheck: false, autocomplete: "off" }),
    destination: h("input", { id: "replication-destination", placeholder: "backup-bucket or offsite/backup-bucket", spellcheck: false, autocomplete: "off" }),
    prefix: h("input", { id: "replication-prefix", placeholder: "images/", spellcheck: false, autocomplete: "off" }),
    deleteMarkers: h("input", { type: "checkbox", id: "replication-delete-markers", checked: true }),
    problem: h("p", { class: "error", role: "alert", id: "replication-error" }),
    current: [],
  };
  const panel = h("details", { class: "replication card" }, view.summary, view.status, view.rules, addForm(view), view.backlog);
  void load(view);
  return panel;
}

function addForm(view: ReplicationView): HTMLFormElement {
  return h(
    "form",
    {
      class: "replication-form",
      "aria-label": "Add a replication rule",
      onsubmit: (e: Event) => {
        e.preventDefault();
        void add(view);
      },
    },
    labelledField(
      "replication-destination",
      "Destination",
      view.destination,
      "A bucket of this gateway (it must keep versions), or TARGET/BUCKET on a remote target the operator configured.",
    ),
    labelledField("replication-prefix", "Key prefix", view.prefix, "Only keys starting with it; empty: every key."),
    h(
      "div",
      { class: "field inline" },
      view.deleteMarkers,
      h("label", { for: "replication-delete-markers", class: "small" }, "Replicate deletes (delete markers)"),
    ),
    labelledField("replication-id", "Replication rule id", view.id, "Optional."),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Add replication rule")),
    view.problem,
  );
}

async function load(view: ReplicationView): Promise<void> {
  try {
    view.current = await getReplication(view.app.s3, view.bucket);
  } catch (err) {
    mount(view.status, h("p", { class: "error" }, messageOf(err)));
    return;
  }
  const n = view.current.length;
  view.summary.textContent = n === 0 ? "Replication: off" : `Replication: ${n} rule${n === 1 ? "" : "s"}`;
  mount(
    view.status,
    h(
      "p",
      { class: "muted small" },
      n === 0 ? "Not replicated. " : "New versions are copied as they are written (not those from before a rule). ",
      "Replication needs versioning enabled on this bucket.",
    ),
  );
  mount(
    view.rules,
    n === 0
      ? null
      : h(
          "ul",
          { class: "replication-rules", "aria-label": "Replication rules" },
          view.current.map((r) => ruleItem(view, r)),
        ),
  );
  await loadBacklog(view);
}

function ruleItem(view: ReplicationView, rule: ReplicationRule): HTMLElement {
  const what = rule.prefix ? `keys under ${rule.prefix}` : "every key";
  return h(
    "li",
    { class: "row" },
    h(
      "span",
      { class: "grow" },
      h("strong", null, rule.id),
      ` → ${destinationText(rule.destination)}: ${what}, deletes ${rule.deleteMarkers ? "replicated" : "not replicated"}`,
      h("span", { class: "muted" }, rule.enabled ? "" : " (disabled)"),
      h("div", { class: "muted small mono" }, rule.destination),
    ),
    h("button", { type: "button", class: "danger", "aria-label": `Remove replication rule ${rule.id}`, onclick: () => void remove(view, rule) }, "Remove"),
  );
}

/** The versions waiting and failed, when the admin API gives them (root key only); nothing said otherwise. */
async function loadBacklog(view: ReplicationView): Promise<void> {
  const backlog = view.current.length === 0 ? null : await getReplicationBacklog(view.app.s3, view.bucket);
  mount(
    view.backlog,
    backlog === null
      ? null
      : h(
          "p",
          { id: "replication-counts" },
          `Versions waiting: ${backlog.pending}; failed: ${backlog.dead}`,
          backlog.dead > 0 ? " (retried from the Notifications panel's dead letters)." : ".",
        ),
  );
}

async function add(view: ReplicationView): Promise<void> {
  view.problem.textContent = "";
  if (view.destination.value.trim() === "") {
    view.problem.textContent = "Name the destination: a bucket of this gateway, or TARGET/BUCKET.";
    return;
  }
  const taken = new Set(view.current.map((r) => r.id));
  let id = view.id.value.trim();
  for (let i = view.current.length + 1; id === "" || (view.id.value.trim() === "" && taken.has(id)); i++) id = `rule-${i}`;
  const rule: ReplicationRule = {
    id,
    priority: Math.max(0, ...view.current.map((r) => r.priority)) + 1,
    enabled: true,
    prefix: view.prefix.value,
    deleteMarkers: view.deleteMarkers.checked,
    destination: destinationArn(view.destination.value),
  };
  const saved = () => saveReplication(view.app.s3, view.bucket, [...view.current, rule]);
  if (!(await savedOrShown(view.problem, saved, `New versions now go to ${destinationText(rule.destination)}.`))) return;
  view.id.value = "";
  view.prefix.value = "";
  view.destination.value = "";
  await load(view);
}

async function remove(view: ReplicationView, rule: ReplicationRule): Promise<void> {
  const saved = () =>
    saveReplication(
      view.app.s3,
      view.bucket,
      view.current.filter((r) => r !== rule),
    );
  if (await savedOrShown(view.problem, saved, `Replication rule ${rule.id} removed.`)) await load(view);
}
