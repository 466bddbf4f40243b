// The shardgate console: a single page served on an origin of its own (docs/console.md), talking S3
// (SigV4-signed in the browser with temporary credentials held in memory only) to the gateway named
// by /config.json. Routes live in the URL hash:
//   #/                  buckets
//   #/b/BUCKET/PREFIX   a bucket's objects under PREFIX (folders via the "/" delimiter)
//   #/nodes             storage nodes and healing
//   #/keys              access keys (root key only)
import "./style.css";
import { gatewayEndpoint } from "./config";
import { messageOf } from "./errors";
import { S3Client, type Session } from "./s3";
import { h, humanSize, mount, perFrame, saveBlob, toast } from "./ui";
import { openSealedUrl, type SharedObject, takeSharedObject } from "./sealing";
import { type App, routeOf } from "./app";
import { Uploads } from "./upload";
import { renderBuckets } from "./views/buckets";
import { renderBrowser, refreshListingSoon } from "./views/browser";
import { renderKeys } from "./views/keys";
import { renderNodes } from "./views/nodes";
import { askForKey, renderSignIn, renewSession } from "./views/signin";
import { renderUploadPanel } from "./views/uploads";

const root = document.getElementById("app") as HTMLElement;
let app: App | null = null;
let endpoint = "";
/** The timers of the current session (renewal prompt, end). */
let timers: number[] = [];

/** Ask for the secret this long before the session ends (ms). */
const RENEW_BEFORE_MS = 5 * 60_000;

function signOut(note = ""): void {
  for (const t of timers) clearTimeout(t);
  timers = [];
  app = null;
  location.hash = "#/";
  renderSignIn(root, endpoint, signedIn, note);
}

/** Asks for the secret again before the session ends, and signs out when it has ended. */
function watch(s3: S3Client, session: Session): void {
  for (const t of timers) clearTimeout(t);
  const left = session.expiration.getTime() - Date.now();
  const ended = () => signOut("The session ended after an hour. Sign in again.");
  timers = [
    window.setTimeout(
      async () => {
        const renewed = await renewSession(endpoint, session.parentKeyId, Math.max(0, Math.round((session.expiration.getTime() - Date.now()) / 60_000)));
        if (!renewed || app?.s3 !== s3) return;
        s3.setCredentials(renewed);
        watch(s3, renewed);
        toast("Session renewed for another hour.");
      },
      Math.max(0, left - RENEW_BEFORE_MS),
    ),
    window.setTimeout(ended, Math.max(0, left)),
  ];
}

function signedIn(session: Session): void {
  const s3 = new S3Client(session, endpoint);
  s3.askForKey = (why) => askForKey(endpoint, session.parentKeyId, why);
  const main = h("main", { id: "main", tabindex: "-1" });
  const uploadHost = h("section", { class: "upload-panel", "aria-label": "Uploads" });
  const current: App = {
    s3,
    accessKeyId: session.parentKeyId,
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
        h("span", { class: "muted", title: "Access key" }, session.parentKeyId),
        h("button", { type: "button", onclick: () => signOut() }, "Sign out"),
      ),
    ),
    main,
    uploadHost,
  );
  renderUploads();
  watch(s3, session);
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
  // Leaving the buckets for another page, a tray of uploads that all ended goes with them.
  if (route.view === "nodes" || route.view === "keys") {
    const { active, failed } = app.uploads.totals();
    if (active === 0 && failed === 0) app.uploads.clearFinished();
  }
  if (route.view === "browser") await renderBrowser(app, route.bucket, route.prefix);
  else if (route.view === "nodes") await renderNodes(app);
  else if (route.view === "keys") await renderKeys(app);
  else await renderBuckets(app);
}

/**
 * A share link of a sealed object (sealing.ts): downloaded through its presigned URL and decrypted
 * in this page with the key from the link's fragment, then saved; no sign-in needed. The key is
 * zeroed once used, and the address no longer holds it (takeSharedObject replaced it).
 */
function renderShared(shared: SharedObject | { error: string }): void {
  // Opened over a signed-in console: that session ends here (its views would draw into nothing).
  for (const t of timers) clearTimeout(t);
  timers = [];
  app = null;
  const status = h("p", { id: "shared-status", role: "status" });
  const save = h("div", { class: "row" });
  const back = h("button", { type: "button", onclick: () => renderSignIn(root, endpoint, signedIn) }, "Sign in to the console");
  mount(
    root,
    h(
      "main",
      { class: "signin-page shared", id: "main" },
      h("h1", null, "A shared encrypted file"),
      h("p", { class: "mono" }, "name" in shared ? shared.name : ""),
      status,
      save,
      h("p", { class: "muted small" }, "It is decrypted in this browser with the key the link carries: the gateway never receives that key."),
      back,
    ),
  );
  if ("error" in shared) {
    status.textContent = shared.error;
    status.className = "error";
    return;
  }
  status.textContent = "Downloading and decrypting in this browser…";
  openSealedUrl(shared.url, shared.dataKey, "")
    .then((blob) => {
      status.textContent = `Decrypted in this browser: ${humanSize(blob.size)} (${blob.size.toLocaleString()} bytes).`;
      const url = URL.createObjectURL(blob);
      mount(save, h("a", { class: "button primary", href: url, download: shared.name, id: "shared-save" }, `Save ${shared.name}`));
      saveBlob(blob, shared.name);
    })
    .catch((err: unknown) => {
      status.textContent = messageOf(err);
      status.className = "error";
    })
    .finally(() => shared.dataKey.fill(0));
}

async function start(): Promise<void> {
  try {
    endpoint = await gatewayEndpoint();
  } catch (err) {
    mount(root, h("main", { class: "signin-page" }, h("p", { class: "error", role: "alert" }, messageOf(err))));
    return;
  }
  const shared = takeSharedObject(endpoint);
  if (shared) renderShared(shared);
  else renderSignIn(root, endpoint, signedIn);
}

window.addEventListener("hashchange", () => {
  // A share link pasted into a console already open: it is opened the same way (and taken out of the address).
  const shared = endpoint ? takeSharedObject(endpoint) : null;
  if (shared) renderShared(shared);
  else void render();
});
void start();
