// A bucket's Website panel: serve the bucket as a static site (docs/self-hosting.md#website-endpoints). The index and
// error documents, or a redirect of every request to another host; the site's URLs. Visitors get
// only what the bucket policy lets everyone read (the Permissions panel's "Public access").
import type { App } from "../app";
import { messageOf } from "../errors";
import { h, labelledField, mount, toast } from "../ui";
import { deleteWebsite, getWebsite, saveWebsite, type WebsiteSettings, websiteUrls } from "../website";

interface WebsiteView {
  app: App;
  bucket: string;
  summary: HTMLElement;
  index: HTMLInputElement;
  error: HTMLInputElement;
  redirectHost: HTMLInputElement;
  redirectProtocol: HTMLSelectElement;
  status: HTMLElement;
  problem: HTMLElement;
  /** The configuration as last loaded (null: none); its routing rules are kept on save. */
  current: WebsiteSettings | null;
}

export function websitePanel(app: App, bucket: string): HTMLElement {
  const view: WebsiteView = {
    app,
    bucket,
    summary: h("summary", null, "Website"),
    index: h("input", { id: "website-index", placeholder: "index.html", spellcheck: false }),
    error: h("input", { id: "website-error", placeholder: "404.html", spellcheck: false }),
    redirectHost: h("input", { id: "website-redirect", placeholder: "www.example.com", spellcheck: false }),
    redirectProtocol: h(
      "select",
      { id: "website-redirect-protocol" },
      h("option", { value: "" }, "same"),
      h("option", { value: "https" }, "https"),
      h("option", { value: "http" }, "http"),
    ),
    status: h("div", { class: "website-status small", id: "website-status" }, "Loading…"),
    problem: h("p", { class: "error", role: "alert", id: "website-error-message" }),
    current: null,
  };
  const form = h(
    "form",
    {
      class: "website-form",
      "aria-label": "Website configuration",
      onsubmit: (e: Event) => {
        e.preventDefault();
        void save(view);
      },
    },
    labelledField("website-index", "Index document", view.index, "Served for / and for every folder (docs/ → docs/index.html)."),
    labelledField("website-error", "Error document", view.error, "Its content answers a missing page (404), optional."),
    labelledField("website-redirect", "Or redirect every request to host", view.redirectHost, "Instead of serving this bucket, optional."),
    labelledField("website-redirect-protocol", "Redirect protocol", view.redirectProtocol, ""),
    h(
      "div",
      { class: "actions" },
      h("button", { type: "submit" }, "Save website"),
      h("button", { type: "button", class: "danger", onclick: () => void remove(view) }, "Stop serving"),
    ),
    view.problem,
  );
  const panel = h("details", { class: "website card" }, view.summary, view.status, form);
  void load(view);
  return panel;
}

async function load(view: WebsiteView): Promise<void> {
  try {
    view.current = await getWebsite(view.app.s3, view.bucket);
  } catch (err) {
    mount(view.status, h("p", { class: "error" }, messageOf(err)));
    return;
  }
  const c = view.current;
  view.index.value = c?.index ?? "";
  view.error.value = c?.error ?? "";
  view.redirectHost.value = c?.redirectHost ?? "";
  view.redirectProtocol.value = c?.redirectProtocol ?? "";
  renderStatus(view);
}

function renderStatus(view: WebsiteView): void {
  const c = view.current;
  if (c === null) {
    view.summary.textContent = "Website: off";
    mount(view.status, h("p", { class: "muted small" }, "Not served as a website. Set an index document to serve it."));
    return;
  }
  const urls = websiteUrls(view.app.s3.origin, view.bucket);
  view.summary.textContent = c.redirectHost ? `Website: redirects to ${c.redirectHost}` : `Website: on (${c.index})`;
  mount(
    view.status,
    h("p", null, "Site: ", h("a", { href: urls.host, target: "_blank", rel: "noopener noreferrer", id: "website-url" }, urls.host)),
    h(
      "p",
      { class: "muted small" },
      "Also, sandboxed, for a quick look: ",
      h("a", { href: urls.path, target: "_blank", rel: "noopener noreferrer" }, urls.path),
    ),
    c.rules.length > 0 ? h("p", { class: "muted small" }, `${c.rules.length} routing rule(s), set with the S3 API, are kept.`) : null,
    h("p", { class: "muted small" }, "Visitors see only what the bucket policy lets everyone read (Permissions → Public access)."),
  );
}

async function save(view: WebsiteView): Promise<void> {
  view.problem.textContent = "";
  const redirectHost = view.redirectHost.value.trim();
  const index = view.index.value.trim();
  if (redirectHost === "" && index === "") {
    view.problem.textContent = "Set an index document (e.g. index.html), or a host to redirect to.";
    return;
  }
  const protocol = view.redirectProtocol.value;
  const settings: WebsiteSettings = {
    index,
    error: view.error.value.trim(),
    redirectHost,
    redirectProtocol: protocol === "http" || protocol === "https" ? protocol : "",
    rules: redirectHost === "" ? (view.current?.rules ?? []) : [],
  };
  try {
    await saveWebsite(view.app.s3, view.bucket, settings);
    toast(redirectHost ? `Every request now goes to ${redirectHost}.` : "The website is saved.");
  } catch (err) {
    view.problem.textContent = messageOf(err);
    return;
  }
  await load(view);
}

async function remove(view: WebsiteView): Promise<void> {
  view.problem.textContent = "";
  try {
    await deleteWebsite(view.app.s3, view.bucket);
    toast("The bucket is no longer served as a website.");
  } catch (err) {
    view.problem.textContent = messageOf(err);
    return;
  }
  await load(view);
}
