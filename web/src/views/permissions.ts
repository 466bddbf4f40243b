// A bucket's Permissions panel, above its listing: which access keys have read, write or owner on
// it (changed with the admin API: root key only), whether the bucket or a prefix is public (a
// statement of the bucket policy that lets everyone GET objects), and the policy's JSON itself,
// checked by the gateway when saved. Rights and the policy are set with the key's own secret, asked
// for each time (S3Client.askForKey): temporary credentials may not set them.
import { type AccessKey, getPolicy, listKeys, publicPrefixes, type Rights, savePolicy, setRights, withPublicRead } from "../access";
import type { App } from "../app";
import { messageOf, S3Error } from "../errors";
import { h, mount, toast } from "../ui";

const RIGHTS = ["read", "write", "owner"] as const;

/** The panel's regions, and what the last load found. */
interface PermissionsView {
  app: App;
  bucket: string;
  summary: HTMLElement;
  /** The keys with rights here, and the form that gives a key rights. */
  keys: HTMLElement;
  publicAccess: HTMLElement;
  policy: HTMLTextAreaElement;
  policyError: HTMLElement;
  /** The bucket policy's JSON as last loaded (null: the bucket has none). */
  text: string | null;
  keyCount: number;
}

export function permissionsPanel(app: App, bucket: string): HTMLElement {
  const view: PermissionsView = {
    app,
    bucket,
    summary: h("summary", null, "Permissions"),
    keys: h("div", { class: "bucket-keys" }, h("p", { class: "muted small" }, "Loading keys…")),
    publicAccess: h("div", { class: "public-access" }),
    policy: h("textarea", { id: "bucket-policy", rows: 8, spellcheck: false, placeholder: '{"Version": "2012-10-17", "Statement": [...]}' }),
    policyError: h("p", { class: "error", role: "alert", id: "policy-error" }),
    text: null,
    keyCount: 0,
  };
  const panel = h(
    "details",
    { class: "permissions card" },
    view.summary,
    h("section", { "aria-labelledby": "bucket-keys-title" }, h("h3", { id: "bucket-keys-title" }, "Keys with rights on this bucket"), view.keys),
    h("section", { "aria-labelledby": "public-title" }, h("h3", { id: "public-title" }, "Public access"), view.publicAccess),
    policySection(view),
  );
  void load(view);
  return panel;
}

/** The policy's JSON in a text box, with Save and Delete. */
function policySection(view: PermissionsView): HTMLElement {
  return h(
    "section",
    { "aria-labelledby": "policy-title" },
    h("h3", { id: "policy-title" }, "Bucket policy"),
    h("label", { for: "bucket-policy", class: "small muted" }, "The policy as JSON (empty: no policy). Unsupported parts are refused with the reason."),
    view.policy,
    h(
      "div",
      { class: "actions" },
      h("button", { type: "button", onclick: () => void save(view, view.policy.value) }, "Save policy"),
      h("button", { type: "button", class: "danger", onclick: () => void save(view, "") }, "Delete policy"),
    ),
    view.policyError,
  );
}

/** Loads the policy and the keys, draws both, and sums them up in the panel's summary line. */
async function load(view: PermissionsView): Promise<void> {
  const { app, bucket } = view;
  const [p, k] = await Promise.allSettled([getPolicy(app.s3, bucket), listKeys(app.s3)]);
  if (p.status === "fulfilled") {
    view.text = p.value;
    view.policy.value = view.text ?? "";
    renderPublic(view);
  } else {
    mount(view.publicAccess, h("p", { class: "error" }, messageOf(p.reason)));
  }
  if (k.status === "fulfilled") renderKeys(view, k.value);
  else {
    const rootOnly = k.reason instanceof S3Error && k.reason.code === "AccessDenied";
    mount(view.keys, h("p", { class: "muted small" }, rootOnly ? "Only the root key can see and change which keys have rights here." : messageOf(k.reason)));
  }
  const open = view.text === null ? [] : publicPrefixes(view.text, bucket);
  const keyCount = view.keyCount;
  view.summary.textContent = `Permissions: ${keyCount} ${keyCount === 1 ? "key" : "keys"} · Public: ${open.length === 0 ? "no" : open.includes("") ? "everything" : open.map((x) => `“${x}”`).join(", ")}`;
}

/** Saves `next` as the bucket's policy (empty: deletes it), says `done`, and loads the panel again. */
async function save(view: PermissionsView, next: string, done?: string): Promise<void> {
  view.policyError.textContent = "";
  try {
    if (next.trim() !== "") JSON.parse(next);
  } catch {
    view.policyError.textContent = "That is not valid JSON.";
    return;
  }
  try {
    await savePolicy(view.app.s3, view.bucket, next);
    toast(done ?? (next.trim() === "" ? "Policy deleted." : "Policy saved."));
  } catch (err) {
    view.policyError.textContent = messageOf(err);
    return;
  }
  await load(view);
}

/** Public access: the whole bucket (a check box), the public prefixes, and a form to add one. */
function renderPublic(view: PermissionsView): void {
  const { bucket } = view;
  const open = publicPrefixes(view.text, bucket);
  const everything = h("input", { type: "checkbox", id: "public-bucket", checked: open.includes("") });
  everything.addEventListener(
    "change",
    () =>
      void save(
        view,
        withPublicRead(view.text, bucket, "", everything.checked),
        everything.checked ? "Every object can now be read without a key." : "The bucket is no longer public.",
      ),
  );
  const prefixes = open.filter((p) => p !== "");
  mount(
    view.publicAccess,
    h("label", { class: "check" }, everything, " Anyone may read every object of this bucket (no key needed)"),
    prefixes.length
      ? h(
          "ul",
          { class: "rules", "aria-label": "Public prefixes" },
          prefixes.map((p) => publicPrefixRule(view, p)),
        )
      : null,
    makePublicForm(view),
  );
}

function publicPrefixRule(view: PermissionsView, prefix: string): HTMLElement {
  return h(
    "li",
    { class: "rule" },
    h("span", { class: "rule-text small" }, `Objects under “${prefix}” can be read by anyone.`),
    h(
      "button",
      {
        type: "button",
        class: "small",
        "aria-label": `Make ${prefix} private`,
        onclick: () => void save(view, withPublicRead(view.text, view.bucket, prefix, false), `“${prefix}” is private again.`),
      },
      "Make private",
    ),
  );
}

function makePublicForm(view: PermissionsView): HTMLElement {
  const prefix = h("input", { id: "public-prefix", placeholder: "public/", spellcheck: false });
  return h(
    "form",
    {
      class: "inline-form",
      "aria-label": "Make a prefix public",
      onsubmit: (e: Event) => {
        e.preventDefault();
        const p = prefix.value;
        if (p === "") return;
        void save(view, withPublicRead(view.text, view.bucket, p, true), `Objects under “${p}” can now be read by anyone.`);
      },
    },
    h("label", { for: "public-prefix", class: "small" }, "Make a prefix public"),
    prefix,
    h("button", { type: "submit" }, "Make public"),
  );
}

/** The keys with rights on the bucket (a table of check boxes), and a form giving another key rights. */
function renderKeys(view: PermissionsView, all: AccessKey[]): void {
  const holders = all.filter((k) => k.grants.some((g) => g.bucket === view.bucket));
  view.keyCount = holders.length;
  const others = all.filter((k) => !holders.includes(k));
  mount(
    view.keys,
    holders.length ? keyRightsTable(view, holders) : h("p", { class: "muted small" }, "No key but the root key has rights on this bucket."),
    others.length ? grantForm(view, others) : null,
  );
}

function rightsOf(k: AccessKey, bucket: string): Rights {
  const g = k.grants.find((x) => x.bucket === bucket);
  return { read: g?.read ?? false, write: g?.write ?? false, owner: g?.owner ?? false };
}

/** Sets `k`'s rights on the bucket (the console asks for the root secret: web/src/s3.ts askForKey), then loads the panel again. */
async function changeRights(view: PermissionsView, k: AccessKey, rights: Rights): Promise<void> {
  const { app, bucket } = view;
  try {
    await setRights(app.s3, k.id, bucket, rights);
    toast(`Rights of ${k.name} on ${bucket} saved.`);
  } catch (err) {
    toast(messageOf(err), "error");
  }
  await load(view);
}

/** One row per key, one check box per right: changing one saves it. */
function keyRightsTable(view: PermissionsView, holders: AccessKey[]): HTMLElement {
  const row = (k: AccessKey) => {
    const rights = rightsOf(k, view.bucket);
    return h(
      "tr",
      null,
      h("td", null, `${k.name} `, h("code", { class: "small" }, k.id)),
      ...RIGHTS.map((r) => {
        const box = h("input", { type: "checkbox", checked: rights[r], "aria-label": `${r} for ${k.name}` });
        box.addEventListener("change", () => void changeRights(view, k, { ...rights, [r]: box.checked }));
        return h("td", null, box);
      }),
    );
  };
  return h(
    "table",
    { class: "table", "aria-label": "Keys with rights" },
    h("thead", null, h("tr", null, h("th", { scope: "col" }, "Key"), ...RIGHTS.map((r) => h("th", { scope: "col" }, r[0]?.toUpperCase() + r.slice(1))))),
    h("tbody", null, holders.map(row)),
  );
}

/** Gives one of the `others` (keys without rights here) the rights ticked. */
function grantForm(view: PermissionsView, others: AccessKey[]): HTMLElement {
  const pick = h(
    "select",
    { id: "grant-key", "aria-label": "Key to give rights to" },
    others.map((k) => h("option", { value: k.id }, `${k.name} (${k.id})`)),
  );
  const boxes = RIGHTS.map((r) => h("input", { type: "checkbox", id: `grant-${r}`, checked: r === "read" }));
  return h(
    "form",
    {
      class: "inline-form",
      "aria-label": "Give a key rights",
      onsubmit: (e: Event) => {
        e.preventDefault();
        const k = others.find((x) => x.id === pick.value);
        if (k) void changeRights(view, k, { read: boxes[0]?.checked ?? false, write: boxes[1]?.checked ?? false, owner: boxes[2]?.checked ?? false });
      },
    },
    pick,
    ...RIGHTS.map((r, i) => h("label", { class: "check" }, boxes[i] as HTMLInputElement, ` ${r}`)),
    h("button", { type: "submit" }, "Give rights"),
  );
}
