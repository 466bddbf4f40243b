// A bucket's objects under a prefix: folders via the "/" delimiter, one page of ListObjectsV2 at a
// time (continuation tokens; a stack of them for "Previous page"), so folders with tens of
// thousands of objects load no faster or slower than small ones.
import { loadCore, checksumOf } from "../core";
import { messageOf } from "../errors";
import { hashOf, routeOf, type App } from "../app";
import type { ListPage, ObjectEntry } from "../s3";
import { confirmDialog, h, humanDate, humanSize, icon, mount, toast } from "../ui";
import { browserCoding, setBrowserCoding } from "../direct";
import { filesFromDrop } from "../upload";
import { sealedHeaderOf } from "../sealing";
import type { Encryption } from "../../../client/src/index";
import { openObject } from "./object";
import { permissionsPanel } from "./permissions";
import { protectionPanel } from "./protection";
import { notificationsPanel } from "./notifications";
import { quotaPanel } from "./quota";
import { replicationPanel } from "./replication";
import { websitePanel } from "./website";
import { versioningSwitch } from "./versions";

type SortKey = "name" | "size" | "date";

interface ListingState {
  bucket: string;
  prefix: string;
  filter: string;
  pageSize: number;
  /** tokens[i] is the continuation token of page i (null for the first). */
  tokens: (string | null)[];
  page: number;
  sort: SortKey;
  ascending: boolean;
  selected: Set<string>;
  data: ListPage | null;
}

/** A listing on screen: its state, the regions a reload redraws, and its delete button. */
interface ListingView {
  app: App;
  st: ListingState;
  /** The table of folders and objects (or the message that replaces it). */
  list: HTMLElement;
  status: HTMLElement;
  pager: HTMLElement;
  deleteButton: HTMLButtonElement;
  /** "Encrypt with a passphrase": the switch, its two fields and what it says of them. */
  sealing: SealingFields;
  /** The "sealed" marks of the objects on screen, by key: shown once a HEAD says so. */
  marks: Map<string, HTMLElement>;
}

interface SealingFields {
  on: HTMLInputElement;
  passphrase: HTMLInputElement;
  confirm: HTMLInputElement;
  problem: HTMLElement;
}

/** Whether an object (bucket, key and ETag) is sealed, as its HEAD said: a listing HEADs each object once. */
const sealedCache = new Map<string, boolean>();
/** HEADs of a listing at once, to mark sealed objects (ListObjectsV2 carries no user metadata). */
const PROBES_AT_ONCE = 4;

let state: ListingState | null = null;
let reload: (() => Promise<void>) | null = null;
let reloadTimer: ReturnType<typeof setTimeout> | undefined;

/** Reloads the listing shortly if `bucket` is on screen (after uploads finish). */
export function refreshListingSoon(bucket: string): void {
  if (state?.bucket !== bucket) return;
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(() => void reload?.(), 400);
}

function baseName(key: string, prefix: string): string {
  return key.slice(prefix.length);
}

export async function renderBrowser(app: App, bucket: string, prefix: string): Promise<void> {
  const st = listingStateFor(bucket, prefix);
  document.title = `${bucket}/${prefix} · shardgate`;
  const view: ListingView = {
    app,
    st,
    list: h("div", { class: "listing", "aria-live": "polite", "aria-busy": "true" }, h("p", { class: "muted" }, "Loading…")),
    status: h("p", { class: "muted small", id: "list-status" }),
    pager: h("div", { class: "pager" }),
    deleteButton: h("button", { type: "button", class: "danger", disabled: true, onclick: () => void deleteSelected(view) }, "Delete selected"),
    sealing: sealingFields(),
    marks: new Map(),
  };
  // The listing first (what the page is for), the bucket's settings after it.
  mount(
    app.main,
    breadcrumbs(bucket, prefix),
    objectsCard(view),
    h(
      "section",
      { class: "bucket-settings", "aria-labelledby": "bucket-settings-title" },
      h("h2", { id: "bucket-settings-title" }, "Bucket settings"),
      versioningSwitch(app, bucket),
      protectionPanel(app, bucket),
      permissionsPanel(app, bucket),
      websitePanel(app, bucket),
      quotaPanel(app, bucket),
      notificationsPanel(app, bucket),
      replicationPanel(app, bucket),
    ),
  );
  reload = () => load(view);
  await load(view);
}

/** The listing's state: kept while the same folder is shown again, a fresh one for another folder. */
function listingStateFor(bucket: string, prefix: string): ListingState {
  if (!state || state.bucket !== bucket || state.prefix !== prefix) {
    state = {
      bucket,
      prefix,
      filter: "",
      pageSize: state?.pageSize ?? 200,
      tokens: [null],
      page: 0,
      sort: "name",
      ascending: true,
      selected: new Set(),
      data: null,
    };
  }
  return state;
}

/** Buckets / bucket / folder / folder */
function breadcrumbs(bucket: string, prefix: string): HTMLElement {
  const crumbs: HTMLElement[] = [h("li", null, h("a", { href: "#/" }, "Buckets"))];
  crumbs.push(
    h("li", null, prefix ? h("a", { href: hashOf({ view: "browser", bucket, prefix: "" }) }, bucket) : h("span", { "aria-current": "page" }, bucket)),
  );
  const segs = prefix.split("/").filter(Boolean);
  segs.forEach((seg, i) => {
    const p = `${segs.slice(0, i + 1).join("/")}/`;
    crumbs.push(
      h("li", null, i === segs.length - 1 ? h("span", { "aria-current": "page" }, seg) : h("a", { href: hashOf({ view: "browser", bucket, prefix: p }) }, seg)),
    );
  });
  return h("nav", { "aria-label": "Breadcrumb", class: "crumbs" }, h("ol", null, crumbs));
}

/** The objects card: toolbar, the listing, and its foot (status, pager, page size); files dropped on it are uploaded here. */
function objectsCard(view: ListingView): HTMLElement {
  const { st } = view;
  const hint = h("span", null, uploadHint());
  const card = h(
    "section",
    { class: "card dropzone", "aria-label": `Objects in ${st.bucket}/${st.prefix}` },
    toolbar(view, hint),
    h("p", { class: "muted small drop-hint" }, "Drop files or folders here to upload them into ", h("strong", null, `${st.bucket}/${st.prefix}`), ". ", hint),
    view.list,
    h(
      "div",
      { class: "list-foot" },
      view.status,
      view.pager,
      h("div", { class: "field inline" }, h("label", { for: "page-size" }, "Per page"), pageSizeSelect(view)),
    ),
  );
  acceptDrops(card, (files) => upload(view, files));
  return card;
}

/** Queues `files` for upload here, sealed with the passphrase when "Encrypt with a passphrase" is on (and both fields agree). */
function upload(view: ListingView, files: { file: File; path: string }[]): void {
  const encryption = encryptionChosen(view.sealing);
  if (encryption === "invalid") return;
  view.app.uploads.add(view.st.bucket, view.st.prefix, files, encryption);
}

/** The passphrase to seal uploads with, null when encryption is off, "invalid" (said beside the fields) when the fields do not agree. */
function encryptionChosen(f: SealingFields): Encryption | null | "invalid" {
  f.problem.textContent = "";
  if (!f.on.checked) return null;
  const problem = !f.passphrase.value
    ? "Type a passphrase to encrypt with, or turn encryption off."
    : f.passphrase.value !== f.confirm.value
      ? "The two passphrases differ: type the same one twice."
      : "";
  if (problem) {
    f.problem.textContent = `Nothing was uploaded. ${problem}`;
    (f.passphrase.value ? f.confirm : f.passphrase).focus();
    return "invalid";
  }
  return { passphrase: f.passphrase.value };
}

/** "Encrypt with a passphrase": a switch that shows a passphrase field and its confirmation. */
function sealingFields(): SealingFields {
  const on = h("input", { type: "checkbox", id: "encrypt-uploads" });
  const passphrase = h("input", { type: "password", id: "upload-passphrase", autocomplete: "new-password", spellcheck: false });
  const confirm = h("input", { type: "password", id: "upload-passphrase-confirm", autocomplete: "new-password", spellcheck: false });
  const problem = h("p", { class: "error small", role: "alert" });
  return { on, passphrase, confirm, problem };
}

/** The switch and, while it is on, the fields and what zero-knowledge means here. */
function sealingPanel(f: SealingFields): HTMLElement {
  const fields = h(
    "div",
    { class: "sealing-fields", hidden: !f.on.checked },
    h("div", { class: "field" }, h("label", { for: "upload-passphrase", class: "small" }, "Passphrase"), f.passphrase),
    h("div", { class: "field" }, h("label", { for: "upload-passphrase-confirm", class: "small" }, "Confirm passphrase"), f.confirm),
    h(
      "p",
      { class: "muted small" },
      "Files are encrypted in this browser before they leave it; the gateway and the storage nodes get only ciphertext. " +
        "The passphrase is never sent, and cannot be recovered: without it the files cannot be read. " +
        "Names, sizes and times stay visible to the gateway.",
    ),
    f.problem,
  );
  f.on.addEventListener("change", () => {
    fields.hidden = !f.on.checked;
    f.problem.textContent = "";
    if (f.on.checked) f.passphrase.focus();
  });
  return h("div", { class: "sealing" }, h("label", { class: "check", for: "encrypt-uploads" }, f.on, "Encrypt with a passphrase"), fields);
}

/** Filter, upload buttons, the direct-path switch (which rewrites `hint`), delete and refresh. */
function toolbar(view: ListingView, hint: HTMLElement): HTMLElement {
  return h(
    "div",
    { class: "toolbar" },
    h("div", { class: "field grow" }, h("label", { for: "filter" }, "Filter by name prefix"), filterInput(view)),
    h(
      "div",
      { class: "buttons" },
      uploadPickers(view),
      browserCodingSwitch(hint),
      view.deleteButton,
      h("button", { type: "button", onclick: () => void load(view), "aria-label": "Refresh" }, icon("refresh")),
    ),
    sealingPanel(view.sealing),
  );
}

/** The name-prefix filter: the listing restarts from its first page 300 ms after typing stops. */
function filterInput(view: ListingView): HTMLInputElement {
  const filter = h("input", {
    id: "filter",
    type: "search",
    placeholder: "Name starts with…",
    value: view.st.filter,
    spellcheck: false,
    autocapitalize: "off",
  });
  let filterTimer: ReturnType<typeof setTimeout> | undefined;
  filter.addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      view.st.filter = filter.value;
      firstPage(view);
    }, 300);
  });
  return filter;
}

/** "Upload files" and "Upload folder": labels styled as buttons, each for its hidden file input. */
function uploadPickers(view: ListingView): HTMLElement[] {
  const pick = h("input", { id: "upload-files", type: "file", multiple: true, class: "file-input", "aria-label": "Upload files" });
  const pickFolder = h("input", {
    id: "upload-folder",
    type: "file",
    multiple: true,
    webkitdirectory: true,
    class: "file-input",
    "aria-label": "Upload folder",
  });
  const onPicked = (input: HTMLInputElement) => {
    const files = Array.from(input.files ?? []).map((file) => ({ file, path: file.webkitRelativePath || file.name }));
    input.value = "";
    if (files.length) upload(view, files);
  };
  pick.addEventListener("change", () => onPicked(pick));
  pickFolder.addEventListener("change", () => onPicked(pickFolder));
  return [
    h("label", { class: "button primary", for: "upload-files" }, icon("upload"), "Upload files"),
    pick,
    h("label", { class: "button", for: "upload-folder" }, "Upload folder"),
    pickFolder,
  ];
}

/** The direct path (docs/direct-path.md): a visible setting, remembered in this browser. */
function browserCodingSwitch(hint: HTMLElement): HTMLElement {
  const coding = h("input", { type: "checkbox", id: "browser-coding", checked: browserCoding() });
  coding.addEventListener("change", () => {
    setBrowserCoding(coding.checked);
    hint.textContent = uploadHint();
  });
  return h(
    "label",
    { class: "check", for: "browser-coding", title: "Erasure-code uploads and decode downloads here, moving shard files straight to the nodes" },
    coding,
    "Code in this browser",
  );
}

function pageSizeSelect(view: ListingView): HTMLSelectElement {
  const pageSize = h(
    "select",
    { id: "page-size" },
    [50, 100, 200, 500, 1000].map((n) => h("option", { value: String(n), selected: n === view.st.pageSize }, String(n))),
  );
  pageSize.addEventListener("change", () => {
    view.st.pageSize = Number(pageSize.value);
    firstPage(view);
  });
  return pageSize;
}

/** Files and folders dropped on `card` go to `upload`. */
function acceptDrops(card: HTMLElement, upload: (files: { file: File; path: string }[]) => void): void {
  card.addEventListener("dragover", (e) => {
    e.preventDefault();
    card.classList.add("dragging");
  });
  card.addEventListener("dragleave", (e) => {
    if (e.target === card) card.classList.remove("dragging");
  });
  card.addEventListener("drop", async (e) => {
    e.preventDefault();
    card.classList.remove("dragging");
    if (!e.dataTransfer) return;
    const files = await filesFromDrop(e.dataTransfer);
    if (files.length) upload(files);
  });
}

/** Whether `st` is still the listing on screen (a slow listing must not draw over another folder). */
function isCurrent(st: ListingState): boolean {
  const r = routeOf(location.hash);
  return r.view === "browser" && r.bucket === st.bucket && r.prefix === st.prefix && state === st;
}

function updateDeleteButton({ st, deleteButton }: ListingView): void {
  deleteButton.disabled = st.selected.size === 0;
  deleteButton.textContent = st.selected.size ? `Delete selected (${st.selected.size})` : "Delete selected";
}

async function deleteSelected(view: ListingView): Promise<void> {
  const { app, st } = view;
  const keys = [...st.selected];
  if (!keys.length) return;
  if (!(await confirmDialog("Delete objects", `Delete ${keys.length} object${keys.length === 1 ? "" : "s"}? This cannot be undone.`, "Delete"))) return;
  try {
    const core = await loadCore();
    const failed = await app.s3.deleteObjects(st.bucket, keys, (body) => checksumOf(core, "CRC32", body));
    st.selected.clear();
    toast(
      failed.length
        ? `${keys.length - failed.length} deleted; ${failed.length} could not be: ${failed[0]?.message ?? ""}`
        : `${keys.length} object${keys.length === 1 ? "" : "s"} deleted.`,
      failed.length ? "error" : "info",
    );
  } catch (err) {
    toast(messageOf(err), "error");
  }
  await load(view);
}

function sorted(objects: ObjectEntry[], st: ListingState): ObjectEntry[] {
  const dir = st.ascending ? 1 : -1;
  return [...objects].sort((a, b) => {
    if (st.sort === "size") return (a.size - b.size) * dir;
    if (st.sort === "date") return ((a.lastModified?.getTime() ?? 0) - (b.lastModified?.getTime() ?? 0)) * dir;
    return (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) * dir;
  });
}

/** Draws the page in `st.data`: the table (sorted on this page), the status line, the pager. */
function draw(view: ListingView): void {
  const { st } = view;
  const data = st.data;
  if (!data) return;
  const folders = [...data.folders].sort((a, b) => (a < b ? -1 : 1) * (st.sort === "name" && !st.ascending ? -1 : 1));
  const objects = sorted(data.objects, st);
  if (folders.length === 0 && objects.length === 0) {
    mount(
      view.list,
      h(
        "p",
        { class: "empty" },
        st.filter ? `Nothing here starts with “${st.filter}”.` : "This folder is empty. Upload files with the buttons above or drop them here.",
      ),
    );
  } else {
    view.marks.clear();
    mount(view.list, objectTable(view, folders, objects));
    void markSealed(view, objects);
  }
  const n = folders.length + objects.length;
  view.status.textContent = `Page ${st.page + 1}: ${folders.length} folder${folders.length === 1 ? "" : "s"}, ${objects.length} object${objects.length === 1 ? "" : "s"}${n ? " (sorting applies to this page)" : ""}`;
  mount(
    view.pager,
    h("button", { type: "button", disabled: st.page === 0, onclick: () => goToPage(view, st.page - 1) }, "Previous page"),
    h("span", { class: "muted" }, `Page ${st.page + 1}`),
    h("button", { type: "button", disabled: !data.nextToken, onclick: () => goToPage(view, st.page + 1) }, "Next page"),
  );
  updateDeleteButton(view);
}

function objectTable(view: ListingView, folders: string[], objects: ObjectEntry[]): HTMLElement {
  const { st } = view;
  return h(
    "table",
    { class: "table objects" },
    h("caption", { class: "sr-only" }, `Folders and objects in ${st.bucket}/${st.prefix}`),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        h("th", { scope: "col", class: "check" }, selectAllBox(view, objects)),
        sortHeader(view, "name", "Name"),
        sortHeader(view, "size", "Size", "num"),
        sortHeader(view, "date", "Last modified", "hide-narrow"),
      ),
    ),
    h(
      "tbody",
      null,
      folders.map((f) => folderRow(st, f)),
      objects.map((o) => objectRow(view, o)),
    ),
  );
}

/** Selects (or clears) every object on this page. */
function selectAllBox(view: ListingView, objects: ObjectEntry[]): HTMLInputElement {
  const { st } = view;
  const pageKeys = objects.map((o) => o.key);
  return h("input", {
    type: "checkbox",
    "aria-label": "Select all on this page",
    checked: pageKeys.length > 0 && pageKeys.every((k) => st.selected.has(k)),
    onchange: (e: Event) => {
      const on = (e.target as HTMLInputElement).checked;
      for (const k of pageKeys) on ? st.selected.add(k) : st.selected.delete(k);
      draw(view);
    },
  });
}

/** A column header that sorts this page by `key` (again: the other way round). */
function sortHeader(view: ListingView, key: SortKey, label: string, cls = ""): HTMLElement {
  const { st } = view;
  const active = st.sort === key;
  return h(
    "th",
    { scope: "col", class: cls, "aria-sort": active ? (st.ascending ? "ascending" : "descending") : "none" },
    h(
      "button",
      {
        type: "button",
        class: "sort",
        onclick: () => {
          if (st.sort === key) st.ascending = !st.ascending;
          else {
            st.sort = key;
            st.ascending = true;
          }
          draw(view);
        },
      },
      label,
      h("span", { "aria-hidden": "true" }, active ? (st.ascending ? " ▲" : " ▼") : ""),
    ),
  );
}

function folderRow(st: ListingState, folder: string): HTMLElement {
  return h(
    "tr",
    { class: "folder" },
    h("td", { class: "check" }),
    h("td", null, h("a", { href: hashOf({ view: "browser", bucket: st.bucket, prefix: folder }), class: "name" }, icon("folder"), baseName(folder, st.prefix))),
    h("td", { class: "num muted" }, "—"),
    h("td", { class: "hide-narrow muted" }, "Folder"),
  );
}

/** An object's row: its selection box, its name (opens the object's dialog), size and date. */
function objectRow(view: ListingView, o: ObjectEntry): HTMLElement {
  const { app, st } = view;
  const select = h("input", {
    type: "checkbox",
    "aria-label": `Select ${baseName(o.key, st.prefix)}`,
    checked: st.selected.has(o.key),
    onchange: (e: Event) => {
      (e.target as HTMLInputElement).checked ? st.selected.add(o.key) : st.selected.delete(o.key);
      (e.target as HTMLElement).closest("tr")?.classList.toggle("selected", st.selected.has(o.key));
      updateDeleteButton(view);
    },
  });
  const open = h(
    "button",
    { type: "button", class: "link name", onclick: () => openObject(app, st.bucket, o.key, () => void load(view)) },
    icon(iconFor(o.key)),
    baseName(o.key, st.prefix) || "(empty name)",
  );
  const mark = h(
    "span",
    {
      class: "badge sealed",
      title: "Encrypted in a browser with a passphrase: the gateway holds only ciphertext",
      hidden: !sealedCache.get(sealedId(st.bucket, o)),
    },
    "Encrypted",
  );
  view.marks.set(o.key, mark);
  return h(
    "tr",
    { class: st.selected.has(o.key) ? "selected" : "" },
    h("td", { class: "check" }, select),
    h("td", null, open, " ", mark),
    h("td", { class: "num", title: `${o.size} bytes` }, humanSize(o.size)),
    h("td", { class: "hide-narrow" }, humanDate(o.lastModified)),
  );
}

function sealedId(bucket: string, o: ObjectEntry): string {
  return JSON.stringify([bucket, o.key, o.etag]);
}

/**
 * Marks the sealed objects of a page (x-amz-meta-shardgate-sealed): each object not seen before is
 * HEADed, PROBES_AT_ONCE at a time, and remembered by its ETag; a listing left meanwhile stops.
 */
async function markSealed(view: ListingView, objects: ObjectEntry[]): Promise<void> {
  const { app, st } = view;
  const queue = objects.filter((o) => !sealedCache.has(sealedId(st.bucket, o)));
  const probe = async () => {
    for (let o = queue.shift(); o && isCurrent(st); o = queue.shift()) {
      const sealed = await app.s3.headObject(st.bucket, o.key).then(
        (head) => sealedHeaderOf(head.metadata) !== null,
        () => null,
      );
      if (sealed === null) continue;
      sealedCache.set(sealedId(st.bucket, o), sealed);
      const mark = view.marks.get(o.key);
      if (mark) mark.hidden = !sealed;
    }
  };
  await Promise.all(Array.from({ length: PROBES_AT_ONCE }, probe));
}

/** Back to the first page (the filter or the page size changed). */
function firstPage(view: ListingView): void {
  view.st.tokens = [null];
  view.st.page = 0;
  void load(view);
}

function goToPage(view: ListingView, page: number): void {
  view.st.page = page;
  void load(view);
}

/** Lists page `st.page` and draws it, unless the user has gone elsewhere meanwhile. */
async function load(view: ListingView): Promise<void> {
  const { app, st, list } = view;
  list.setAttribute("aria-busy", "true");
  try {
    const data = await app.s3.listPage(st.bucket, st.prefix + st.filter, st.pageSize, st.tokens[st.page] ?? null);
    if (!isCurrent(st)) return;
    st.data = data;
    st.tokens[st.page + 1] = data.nextToken;
    st.tokens.length = st.page + 2;
    // Keep only selections that still exist on this page.
    const present = new Set(data.objects.map((o) => o.key));
    for (const k of st.selected) if (!present.has(k)) st.selected.delete(k);
    draw(view);
  } catch (err) {
    if (!isCurrent(st)) return;
    mount(list, h("p", { class: "error", role: "alert" }, messageOf(err)));
  } finally {
    list.setAttribute("aria-busy", "false");
  }
}

function iconFor(key: string): string {
  const ext = key.split(".").pop()?.toLowerCase() ?? "";
  if (["png", "jpg", "jpeg", "gif", "webp", "svg", "avif"].includes(ext)) return "image";
  if (["mp4", "webm", "mov", "mkv"].includes(ext)) return "video";
  if (["mp3", "wav", "ogg", "flac", "m4a"].includes(ext)) return "audio";
  if (["txt", "md", "json", "csv", "log", "yaml", "yml", "xml", "html", "pdf"].includes(ext)) return "text";
  return "file";
}

function uploadHint(): string {
  return browserCoding()
    ? "Files are erasure-coded in this browser and their shard files sent straight to the storage nodes (small files, and buckets that encrypt, go up the classic way)."
    : "Files over 8 MiB go up in parts, 4 at a time, each with a CRC32 checksum.";
}
