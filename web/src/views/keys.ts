// The Keys page (#/keys): the gateway's access keys besides the root key (admin API, root key
// only). Create one (its secret is shown once), enable or disable it, delete it; each key's
// rights on buckets are listed here and changed on a bucket's Permissions panel. Every change
// asks for the root secret for that one request (the gateway refuses it to the console's session).
import { type AccessKey, createKey, deleteKey, listKeys, updateKey } from "../access";
import type { App } from "../app";
import { messageOf, S3Error } from "../errors";
import { confirmDialog, h, humanDate, mount, openDialog, toast } from "../ui";

function rightsText(key: AccessKey): string {
  if (key.grants.length === 0) return key.createBucket ? "none yet (may create buckets)" : "none";
  const words = key.grants.map((g) => `${g.bucket}: ${[g.read && "read", g.write && "write", g.owner && "owner"].filter(Boolean).join(", ")}`);
  return `${words.join("; ")}${key.createBucket ? " · may create buckets" : ""}`;
}

export async function renderKeys(app: App): Promise<void> {
  document.title = "Keys · shardgate";
  const table = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading keys…"));
  mount(
    app.main,
    h("div", { class: "page-head" }, h("h1", null, "Access keys"), h("button", { type: "button", onclick: () => void renderKeys(app) }, "Refresh")),
    h(
      "p",
      { class: "muted" },
      "Keys for people, backup jobs and apps, each with read, write or owner rights on the buckets it should reach. The root key (from the gateway's configuration) may do everything and is not listed.",
    ),
    createForm(app, () => renderKeys(app)),
    h("section", { "aria-labelledby": "keys-title" }, h("h2", { id: "keys-title" }, "Keys"), table),
  );
  let keys: AccessKey[];
  try {
    keys = await listKeys(app.s3);
  } catch (err) {
    const rootOnly = err instanceof S3Error && err.code === "AccessDenied";
    mount(
      table,
      h("p", { class: "error", id: "keys-error" }, rootOnly ? "Only the root key can manage access keys. Sign in with it to see this page." : messageOf(err)),
    );
    return;
  }
  if (keys.length === 0) {
    mount(table, h("p", { class: "muted" }, "No keys yet: create one above."));
    return;
  }
  mount(table, keysTable(app, keys));
}

function keysTable(app: App, keys: AccessKey[]): HTMLElement {
  return h(
    "table",
    { class: "table", "aria-label": "Access keys" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        h("th", { scope: "col" }, "Name"),
        h("th", { scope: "col" }, "Access key"),
        h("th", { scope: "col", class: "hide-narrow" }, "Created"),
        h("th", { scope: "col" }, "Rights"),
        h("th", { scope: "col" }, "Status"),
        h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")),
      ),
    ),
    h(
      "tbody",
      null,
      keys.map((key) => keyRow(app, key)),
    ),
  );
}

/** A key's row: name, id, created, rights, status, and its Enable/Disable and Delete buttons. */
function keyRow(app: App, key: AccessKey): HTMLElement {
  const toggleLabel = key.enabled ? "Disable" : "Enable";
  return h(
    "tr",
    { "data-key": key.id },
    h("td", null, key.name),
    h("td", null, h("code", null, key.id)),
    h("td", { class: "hide-narrow" }, humanDate(key.created)),
    h("td", { class: "small" }, rightsText(key)),
    h("td", null, h("span", { class: key.enabled ? "badge ok" : "badge" }, key.enabled ? "Enabled" : "Disabled")),
    h(
      "td",
      { class: "row-actions" },
      h("button", { type: "button", class: "small", "aria-label": `${toggleLabel} key ${key.name}`, onclick: () => void toggle(app, key) }, toggleLabel),
      h("button", { type: "button", class: "small danger", "aria-label": `Delete key ${key.name}`, onclick: () => void remove(app, key) }, "Delete"),
    ),
  );
}

async function toggle(app: App, key: AccessKey): Promise<void> {
  try {
    await updateKey(app.s3, key.id, { enabled: !key.enabled });
    toast(`Key ${key.name} ${key.enabled ? "disabled: it is refused within seconds" : "enabled"}.`);
  } catch (err) {
    toast(messageOf(err), "error");
  }
  await renderKeys(app);
}

async function remove(app: App, key: AccessKey): Promise<void> {
  if (!(await confirmDialog("Delete key", `Delete the key “${key.name}” (${key.id})? Whatever uses it is refused from now on.`, "Delete"))) return;
  try {
    await deleteKey(app.s3, key.id);
    toast(`Key ${key.name} deleted.`);
  } catch (err) {
    toast(messageOf(err), "error");
  }
  await renderKeys(app);
}

function createForm(app: App, created: () => Promise<void>): HTMLElement {
  const name = h("input", { id: "new-key-name", required: true, maxlength: 128, placeholder: "backup job", autocomplete: "off" });
  const mayCreate = h("input", { id: "new-key-create-bucket", type: "checkbox" });
  const error = h("p", { class: "error", role: "alert" });
  return h(
    "form",
    {
      class: "card create-key",
      "aria-label": "New access key",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        error.textContent = "";
        try {
          const key = await createKey(app.s3, name.value.trim(), mayCreate.checked);
          name.value = "";
          mayCreate.checked = false;
          showSecret(key);
          await created();
        } catch (err) {
          error.textContent = messageOf(err);
        }
      },
    },
    h("div", { class: "field" }, h("label", { for: "new-key-name" }, "Key name"), name),
    h("label", { class: "check" }, mayCreate, " May create buckets"),
    h("button", { type: "submit", class: "primary" }, "Create key"),
    error,
  );
}

/** The new key's id and secret, once: the gateway keeps the secret only sealed. */
function showSecret(key: AccessKey & { secret: string }): void {
  const copy = (label: string, value: string) =>
    h(
      "button",
      {
        type: "button",
        class: "small",
        onclick: async () => {
          await navigator.clipboard.writeText(value);
          toast(`${label} copied.`);
        },
      },
      `Copy ${label.toLowerCase()}`,
    );
  openDialog(
    "New access key",
    h(
      "div",
      null,
      h("p", null, `Key “${key.name}” was created. Copy the secret now: it is shown only this once.`),
      h(
        "dl",
        { class: "details" },
        h("dt", null, "Access key"),
        h("dd", null, h("code", { id: "created-key-id" }, key.id), " ", copy("Access key", key.id)),
        h("dt", null, "Secret key"),
        h("dd", null, h("code", { id: "created-key-secret" }, key.secret), " ", copy("Secret key", key.secret)),
      ),
      h("p", { class: "muted small" }, "It has no rights yet: give it read, write or owner on a bucket from that bucket's Permissions panel."),
    ),
  );
}
