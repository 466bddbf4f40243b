// A bucket's Permissions panel, above its listing: which access keys have read, write or owner on
// it (changed with the admin API: root key only), whether the bucket or a prefix is public (a
// statement of the bucket policy that lets everyone GET objects), and the policy's JSON itself,
// checked by the gateway when saved. Rights are set with the root secret, asked for each time
// (views/signin.ts withKeySecret): temporary credentials may not set them.
import { type AccessKey, getPolicy, listKeys, publicPrefixes, type Rights, savePolicy, setRights, withPublicRead } from "../access";
import type { App } from "../app";
import { messageOf, S3Error } from "../errors";
import { h, mount, toast } from "../ui";
import { withKeySecret } from "./signin";

const RIGHTS = ["read", "write", "owner"] as const;

export function permissionsPanel(app: App, bucket: string): HTMLElement {
  const summary = h("summary", null, "Permissions");
  const keys = h("div", { class: "bucket-keys" }, h("p", { class: "muted small" }, "Loading keys…"));
  const publicAccess = h("div", { class: "public-access" });
  const policyError = h("p", { class: "error", role: "alert", id: "policy-error" });
  const policy = h("textarea", { id: "bucket-policy", rows: 8, spellcheck: false, placeholder: '{"Version": "2012-10-17", "Statement": [...]}' });
  const panel = h(
    "details",
    { class: "permissions card" },
    summary,
    h("section", { "aria-labelledby": "bucket-keys-title" }, h("h3", { id: "bucket-keys-title" }, "Keys with rights on this bucket"), keys),
    h("section", { "aria-labelledby": "public-title" }, h("h3", { id: "public-title" }, "Public access"), publicAccess),
    h(
      "section",
      { "aria-labelledby": "policy-title" },
      h("h3", { id: "policy-title" }, "Bucket policy"),
      h("label", { for: "bucket-policy", class: "small muted" }, "The policy as JSON (empty: no policy). Unsupported parts are refused with the reason."),
      policy,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", onclick: () => void save(policy.value) }, "Save policy"),
        h("button", { type: "button", class: "danger", onclick: () => void save("") }, "Delete policy"),
      ),
      policyError,
    ),
  );

  let text: string | null = null;
  let keyCount = 0;

  async function load(): Promise<void> {
    const [p, k] = await Promise.allSettled([getPolicy(app.s3, bucket), listKeys(app.s3)]);
    if (p.status === "fulfilled") {
      text = p.value;
      policy.value = text ?? "";
      renderPublic();
    } else {
      mount(publicAccess, h("p", { class: "error" }, messageOf(p.reason)));
    }
    if (k.status === "fulfilled") renderKeys(k.value);
    else {
      const rootOnly = k.reason instanceof S3Error && k.reason.code === "AccessDenied";
      mount(keys, h("p", { class: "muted small" }, rootOnly ? "Only the root key can see and change which keys have rights here." : messageOf(k.reason)));
    }
    const open = text === null ? [] : publicPrefixes(text, bucket);
    summary.textContent = `Permissions: ${keyCount} ${keyCount === 1 ? "key" : "keys"} · Public: ${open.length === 0 ? "no" : open.includes("") ? "everything" : open.map((x) => `“${x}”`).join(", ")}`;
  }

  async function save(next: string, done?: string): Promise<void> {
    policyError.textContent = "";
    try {
      if (next.trim() !== "") JSON.parse(next);
    } catch {
      policyError.textContent = "That is not valid JSON.";
      return;
    }
    try {
      await savePolicy(app.s3, bucket, next);
      toast(done ?? (next.trim() === "" ? "Policy deleted." : "Policy saved."));
    } catch (err) {
      policyError.textContent = messageOf(err);
      return;
    }
    await load();
  }

  function renderPublic(): void {
    const open = publicPrefixes(text, bucket);
    const everything = h("input", { type: "checkbox", id: "public-bucket", checked: open.includes("") });
    everything.addEventListener(
      "change",
      () =>
        void save(
          withPublicRead(text, bucket, "", everything.checked),
          everything.checked ? "Every object can now be read without a key." : "The bucket is no longer public.",
        ),
    );
    const prefix = h("input", { id: "public-prefix", placeholder: "public/", spellcheck: false });
    mount(
      publicAccess,
      h("label", { class: "check" }, everything, " Anyone may read every object of this bucket (no key needed)"),
      open.filter((p) => p !== "").length
        ? h(
            "ul",
            { class: "rules", "aria-label": "Public prefixes" },
            open
              .filter((p) => p !== "")
              .map((p) =>
                h(
                  "li",
                  { class: "rule" },
                  h("span", { class: "rule-text small" }, `Objects under “${p}” can be read by anyone.`),
                  h(
                    "button",
                    {
                      type: "button",
                      class: "small",
                      "aria-label": `Make ${p} private`,
                      onclick: () => void save(withPublicRead(text, bucket, p, false), `“${p}” is private again.`),
                    },
                    "Make private",
                  ),
                ),
              ),
          )
        : null,
      h(
        "form",
        {
          class: "inline-form",
          "aria-label": "Make a prefix public",
          onsubmit: (e: Event) => {
            e.preventDefault();
            const p = prefix.value;
            if (p === "") return;
            void save(withPublicRead(text, bucket, p, true), `Objects under “${p}” can now be read by anyone.`);
          },
        },
        h("label", { for: "public-prefix", class: "small" }, "Make a prefix public"),
        prefix,
        h("button", { type: "submit" }, "Make public"),
      ),
    );
  }

  function renderKeys(all: AccessKey[]): void {
    const holders = all.filter((k) => k.grants.some((g) => g.bucket === bucket));
    keyCount = holders.length;
    const others = all.filter((k) => !holders.includes(k));
    const rightsOf = (k: AccessKey): Rights => {
      const g = k.grants.find((x) => x.bucket === bucket);
      return { read: g?.read ?? false, write: g?.write ?? false, owner: g?.owner ?? false };
    };
    const change = async (k: AccessKey, rights: Rights) => {
      try {
        if (await withKeySecret(app.s3.origin, app.accessKeyId, "Setting a key's rights", (s3) => setRights(s3, k.id, bucket, rights)))
          toast(`Rights of ${k.name} on ${bucket} saved.`);
      } catch (err) {
        toast(messageOf(err), "error");
      }
      await load();
    };
    const pick = h(
      "select",
      { id: "grant-key", "aria-label": "Key to give rights to" },
      others.map((k) => h("option", { value: k.id }, `${k.name} (${k.id})`)),
    );
    const boxes = RIGHTS.map((r) => h("input", { type: "checkbox", id: `grant-${r}`, checked: r === "read" }));
    mount(
      keys,
      holders.length
        ? h(
            "table",
            { class: "table", "aria-label": "Keys with rights" },
            h(
              "thead",
              null,
              h("tr", null, h("th", { scope: "col" }, "Key"), ...RIGHTS.map((r) => h("th", { scope: "col" }, r[0]?.toUpperCase() + r.slice(1)))),
            ),
            h(
              "tbody",
              null,
              holders.map((k) => {
                const rights = rightsOf(k);
                return h(
                  "tr",
                  null,
                  h("td", null, `${k.name} `, h("code", { class: "small" }, k.id)),
                  ...RIGHTS.map((r) => {
                    const box = h("input", { type: "checkbox", checked: rights[r], "aria-label": `${r} for ${k.name}` });
                    box.addEventListener("change", () => void change(k, { ...rights, [r]: box.checked }));
                    return h("td", null, box);
                  }),
                );
              }),
            ),
          )
        : h("p", { class: "muted small" }, "No key but the root key has rights on this bucket."),
      others.length
        ? h(
            "form",
            {
              class: "inline-form",
              "aria-label": "Give a key rights",
              onsubmit: (e: Event) => {
                e.preventDefault();
                const k = others.find((x) => x.id === pick.value);
                if (k) void change(k, { read: boxes[0]?.checked ?? false, write: boxes[1]?.checked ?? false, owner: boxes[2]?.checked ?? false });
              },
            },
            pick,
            ...RIGHTS.map((r, i) => h("label", { class: "check" }, boxes[i] as HTMLInputElement, ` ${r}`)),
            h("button", { type: "submit" }, "Give rights"),
          )
        : null,
    );
  }

  void load();
  return panel;
}
