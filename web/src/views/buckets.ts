import { messageOf } from "../errors";
import { hashOf, type App } from "../app";
import type { Bucket } from "../s3";
import { confirmDialog, h, humanDate, icon, mount, toast } from "../ui";

export async function renderBuckets(app: App): Promise<void> {
  const list = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading buckets…"));
  const load = () => loadBuckets(app, list, load);
  mount(app.main, h("div", { class: "page-head" }, h("h1", null, "Buckets")), newBucketCard(app, load), list);
  document.title = "Buckets · shardgate";
  await load();
}

/** The "New bucket" form (name, object lock); `reload` lists the buckets again once it is created. */
function newBucketCard(app: App, reload: () => Promise<void>): HTMLElement {
  const name = h("input", {
    id: "new-bucket",
    placeholder: "my-bucket",
    required: true,
    pattern: "[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]",
    spellcheck: false,
    autocapitalize: "off",
  });
  const objectLock = h("input", { id: "new-bucket-lock", type: "checkbox" });
  const formError = h("p", { class: "error", role: "alert" });
  const form = h(
    "form",
    {
      class: "inline-form",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        formError.textContent = "";
        const bucket = name.value.trim();
        try {
          await app.s3.createBucket(bucket, objectLock.checked);
          toast(objectLock.checked ? `Bucket ${bucket} created, versioned, with object lock.` : `Bucket ${bucket} created.`);
          name.value = "";
          objectLock.checked = false;
          await reload();
        } catch (err) {
          formError.textContent = messageOf(err);
        }
      },
    },
    h("label", { for: "new-bucket" }, "New bucket name"),
    name,
    h("label", { class: "check small", title: "Versions can be locked against deletion (WORM); versioning stays on for good." }, objectLock, " Object lock"),
    h("button", { type: "submit", class: "primary" }, "Create bucket"),
  );
  return h("div", { class: "card" }, form, formError);
}

/** Lists the buckets into `list`: a table, or a line saying there are none (or why listing failed). */
async function loadBuckets(app: App, list: HTMLElement, reload: () => Promise<void>): Promise<void> {
  try {
    const buckets = await app.s3.listBuckets();
    if (buckets.length === 0) {
      mount(list, h("p", { class: "empty" }, "No buckets yet. Create one above."));
      return;
    }
    mount(
      list,
      h(
        "table",
        { class: "table" },
        h("caption", { class: "sr-only" }, "Buckets"),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", { scope: "col" }, "Name"),
            h("th", { scope: "col", class: "hide-narrow" }, "Created"),
            h("th", { scope: "col" }, h("span", { class: "sr-only" }, "Actions")),
          ),
        ),
        h(
          "tbody",
          null,
          buckets.map((b) => bucketRow(app, b, reload)),
        ),
      ),
    );
  } catch (err) {
    mount(list, h("p", { class: "error", role: "alert" }, messageOf(err)));
  }
}

/** A bucket's row: its name (opens its listing), when it was created, and its Delete button. */
function bucketRow(app: App, b: Bucket, reload: () => Promise<void>): HTMLElement {
  return h(
    "tr",
    null,
    h("td", null, h("a", { href: hashOf({ view: "browser", bucket: b.name, prefix: "" }), class: "bucket-link" }, icon("bucket"), b.name)),
    h("td", { class: "hide-narrow" }, humanDate(b.created)),
    h(
      "td",
      { class: "actions-cell" },
      h(
        "button",
        { type: "button", class: "danger subtle", "aria-label": `Delete bucket ${b.name}`, onclick: () => void deleteBucket(app, b.name, reload) },
        "Delete",
      ),
    ),
  );
}

async function deleteBucket(app: App, bucket: string, reload: () => Promise<void>): Promise<void> {
  if (!(await confirmDialog("Delete bucket", `Delete the bucket “${bucket}”? It must be empty.`, "Delete bucket"))) return;
  try {
    await app.s3.deleteBucket(bucket);
    toast(`Bucket ${bucket} deleted.`);
    await reload();
  } catch (err) {
    toast(messageOf(err), "error");
  }
}
