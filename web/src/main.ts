// The shardgate console: a single page served by the Worker at /_console/, talking S3 (SigV4-signed
// in the browser) to the same gateway. Routes live in the URL hash:
//   #/                  buckets
//   #/b/BUCKET/PREFIX   a bucket's objects under PREFIX (folders via the "/" delimiter)
//   #/nodes             storage nodes and healing
//   #/keys              access keys (root key only)
import "./style.css";
import { S3Client, session, type Credentials } from "./s3";
import { h, mount, perFrame } from "./ui";
import { type App, routeOf } from "./app";
import { Uploads } from "./upload";
import { renderBuckets } from "./views/buckets";
import { renderBrowser, refreshListingSoon } from "./views/browser";
import { renderKeys } from "./views/keys";
import { renderNodes } from "./views/nodes";
import { renderSignIn } from "./views/signin";
import { renderUploadPanel } from "./views/uploads";

const root = document.getElementById("app") as HTMLElement;
let app: App | null = null;

function signOut(): void {
  session.clear();
  app = null;
  location.hash = "#/";
  start();
}

function signedIn(creds: Credentials): void {
  session.save(creds);
  const s3 = new S3Client(creds);
  const main = h("main", { id: "main", tabindex: "-1" });
  const uploadHost = h("section", { class: "upload-panel", "aria-label": "Uploads" });
  const current: App = {
    s3,
    accessKeyId: creds.accessKeyId,
    main,
    uploads: null as unknown as Uploads,
    navigate: (hash) => {
      if (location.hash === hash) void render();
      else location.hash = hash;
    },
  };
  const renderUploads = perFrame(() => renderUploadPanel(current, uploadHost));
  current.uploads = new Uploads(s3, renderUploads, (item) => refreshListingSoon(item.bucket));
  app = current;

  const nav = h(
    "nav",
    { "aria-label": "Main" },
    h("a", { href: "#/", id: "nav-buckets" }, "Buckets"),
    h("a", { href: "#/keys", id: "nav-keys" }, "Keys"),
    h("a", { href: "#/nodes", id: "nav-nodes" }, "Nodes"),
  );
  mount(
    root,
    h("a", { class: "skip", href: "#main", onclick: (e: Event) => (e.preventDefault(), main.focus()) }, "Skip to content"),
    h(
      "header",
      { class: "topbar" },
      h("a", { class: "brand", href: "#/" }, h("span", { class: "logo", "aria-hidden": "true" }, "◆"), " shardgate"),
      nav,
      h(
        "div",
        { class: "who" },
        h("span", { class: "muted", title: "Access key" }, creds.accessKeyId),
        h("button", { type: "button", onclick: signOut }, "Sign out"),
      ),
    ),
    main,
    uploadHost,
  );
  renderUploads();
  void render();
}

async function render(): Promise<void> {
  if (!app) return;
  const route = routeOf(location.hash);
  const here = route.view === "nodes" ? "#/nodes" : route.view === "keys" ? "#/keys" : "#/";
  for (const a of Array.from(root.querySelectorAll("nav a"))) {
    const active = a.getAttribute("href") === here;
    if (active) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (route.view === "browser") await renderBrowser(app, route.bucket, route.prefix);
  else if (route.view === "nodes") await renderNodes(app);
  else if (route.view === "keys") await renderKeys(app);
  else await renderBuckets(app);
}

function start(): void {
  const creds = session.load();
  if (creds) signedIn(creds);
  else renderSignIn(root, signedIn);
}

window.addEventListener("hashchange", () => void render());
start();
