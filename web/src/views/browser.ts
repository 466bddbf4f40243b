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
import { openObject } from "./object";
import { permissionsPanel } from "./permissions";
import { protectionPanel } from "./protection";
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
  const st = state;
  document.title = `${bucket}/${prefix} · shardgate`;

  // Breadcrumbs: Buckets / bucket / folder / folder
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

  const filter = h("input", { id: "filter", type: "search", placeholder: "Name starts with…", value: st.filter, spellcheck: false, autocapitalize: "off" });
  let filterTimer: ReturnType<typeof setTimeout> | undefined;
  filter.addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(() => {
      st.filter = filter.value;
      st.tokens = [null];
      st.page = 0;
      void load();
    }, 300);
  });

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
    if (files.length) app.uploads.add(bucket, prefix, files);
  };
  pick.addEventListener("change", () => onPicked(pick));
  pickFolder.addEventListener("change", () => onPicked(pickFolder));

  // The browser path (docs/browser-path.md): a visible setting, remembered in this browser.
  const hint = h("span", null, uploadHint());
  const coding = h("input", { type: "checkbox", id: "browser-coding", checked: browserCoding() });
  coding.addEventListener("change", () => {
    setBrowserCoding(coding.checked);
    hint.textContent = uploadHint();
  });

  const deleteButton = h("button", { type: "button", class: "danger", disabled: true, onclick: () => void deleteSelected() }, "Delete selected");
  const listing = h("div", { class: "listing", "aria-live": "polite", "aria-busy": "true" }, h("p", { class: "muted" }, "Loading…"));
  const status = h("p", { class: "muted small", id: "list-status" });
  const pager = h("div", { class: "pager" });
  const pageSize = h(
    "select",
    { id: "page-size" },
    [50, 100, 200, 500, 1000].map((n) => h("option", { value: String(n), selected: n === st.pageSize }, String(n))),
  );
  pageSize.addEventListener("change", () => {
    st.pageSize = Number(pageSize.value);
    st.tokens = [null];
    st.page = 0;
    void load();
  });

  const card = h(
    "section",
    { class: "card dropzone", "aria-label": `Objects in ${bucket}/${prefix}` },
    h(
      "div",
      { class: "toolbar" },
      h("div", { class: "field grow" }, h("label", { for: "filter" }, "Filter by name prefix"), filter),
      h(
        "div",
        { class: "buttons" },
        h("label", { class: "button primary", for: "upload-files" }, icon("upload"), "Upload files"),
        pick,
        h("label", { class: "button", for: "upload-folder" }, "Upload folder"),
        pickFolder,
        h(
          "label",
          { class: "check", for: "browser-coding", title: "Erasure-code uploads and decode downloads here, moving shard files straight to the nodes" },
          coding,
          "Code in this browser",
        ),
        deleteButton,
        h("button", { type: "button", onclick: () => void load(), "aria-label": "Refresh" }, icon("refresh")),
      ),
    ),
    h("p", { class: "muted small drop-hint" }, "Drop files or folders here to upload them into ", h("strong", null, `${bucket}/${prefix}`), ". ", hint),
    listing,
    h("div", { class: "list-foot" }, status, pager, h("div", { class: "field inline" }, h("label", { for: "page-size" }, "Per page"), pageSize)),
  );
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
    if (files.length) app.uploads.add(bucket, prefix, files);
  });

  mount(
    app.main,
    h("nav", { "aria-label": "Breadcrumb", class: "crumbs" }, h("ol", null, crumbs)),
    versioningSwitch(app, bucket),
    protectionPanel(app, bucket),
    permissionsPanel(app, bucket),
    card,
  );

  function isCurrent(): boolean {
    const r = routeOf(location.hash);
    return r.view === "browser" && r.bucket === bucket && r.prefix === prefix && state === st;
  }

  function updateDeleteButton(): void {
    deleteButton.disabled = st.selected.size === 0;
    deleteButton.textContent = st.selected.size ? `Delete selected (${st.selected.size})` : "Delete selected";
  }

  async function deleteSelected(): Promise<void> {
    const keys = [...st.selected];
    if (!keys.length) return;
    if (!(await confirmDialog("Delete objects", `Delete ${keys.length} object${keys.length === 1 ? "" : "s"}? This cannot be undone.`, "Delete"))) return;
    try {
      const core = await loadCore();
      const failed = await app.s3.deleteObjects(bucket, keys, (body) => checksumOf(core, "CRC32", body));
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
    await load();
  }

  function sorted(objects: ObjectEntry[]): ObjectEntry[] {
    const dir = st.ascending ? 1 : -1;
    return [...objects].sort((a, b) => {
      if (st.sort === "size") return (a.size - b.size) * dir;
      if (st.sort === "date") return ((a.lastModified?.getTime() ?? 0) - (b.lastModified?.getTime() ?? 0)) * dir;
      return (a.key < b.key ? -1 : a.key > b.key ? 1 : 0) * dir;
    });
  }

  function sortHeader(key: SortKey, label: string, cls = ""): HTMLElement {
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
            draw();
          },
        },
        label,
        h("span", { "aria-hidden": "true" }, active ? (st.ascending ? " ▲" : " ▼") : ""),
      ),
    );
  }

  function draw(): void {
    const data = st.data;
    if (!data) return;
    const folders = [...data.folders].sort((a, b) => (a < b ? -1 : 1) * (st.sort === "name" && !st.ascending ? -1 : 1));
    const objects = sorted(data.objects);
    if (folders.length === 0 && objects.length === 0) {
      mount(
        listing,
        h(
          "p",
          { class: "empty" },
          st.filter ? `Nothing here starts with “${st.filter}”.` : "This folder is empty. Upload files with the buttons above or drop them here.",
        ),
      );
    } else {
      const pageKeys = objects.map((o) => o.key);
      const selectAll = h("input", {
        type: "checkbox",
        "aria-label": "Select all on this page",
        checked: pageKeys.length > 0 && pageKeys.every((k) => st.selected.has(k)),
        onchange: (e: Event) => {
          const on = (e.target as HTMLInputElement).checked;
          for (const k of pageKeys) on ? st.selected.add(k) : st.selected.delete(k);
          draw();
        },
      });
      mount(
        listing,
        h(
          "table",
          { class: "table objects" },
          h("caption", { class: "sr-only" }, `Folders and objects in ${bucket}/${prefix}`),
          h(
            "thead",
            null,
            h(
              "tr",
              null,
              h("th", { scope: "col", class: "check" }, selectAll),
              sortHeader("name", "Name"),
              sortHeader("size", "Size", "num"),
              sortHeader("date", "Last modified", "hide-narrow"),
            ),
          ),
          h(
            "tbody",
            null,
            folders.map((f) =>
              h(
                "tr",
                { class: "folder" },
                h("td", { class: "check" }),
                h("td", null, h("a", { href: hashOf({ view: "browser", bucket, prefix: f }), class: "name" }, icon("folder"), baseName(f, prefix))),
                h("td", { class: "num muted" }, "—"),
                h("td", { class: "hide-narrow muted" }, "Folder"),
              ),
            ),
            objects.map((o) =>
              h(
                "tr",
                { class: st.selected.has(o.key) ? "selected" : "" },
                h(
                  "td",
                  { class: "check" },
                  h("input", {
                    type: "checkbox",
                    "aria-label": `Select ${baseName(o.key, prefix)}`,
                    checked: st.selected.has(o.key),
                    onchange: (e: Event) => {
                      (e.target as HTMLInputElement).checked ? st.selected.add(o.key) : st.selected.delete(o.key);
                      (e.target as HTMLElement).closest("tr")?.classList.toggle("selected", st.selected.has(o.key));
                      updateDeleteButton();
                    },
                  }),
                ),
                h(
                  "td",
                  null,
                  h(
                    "button",
                    { type: "button", class: "link name", onclick: () => openObject(app, bucket, o.key, () => void load()) },
                    icon(iconFor(o.key)),
                    baseName(o.key, prefix) || "(empty name)",
                  ),
                ),
                h("td", { class: "num", title: `${o.size} bytes` }, humanSize(o.size)),
                h("td", { class: "hide-narrow" }, humanDate(o.lastModified)),
              ),
            ),
          ),
        ),
      );
    }
    const n = folders.length + objects.length;
    status.textContent = `Page ${st.page + 1}: ${folders.length} folder${folders.length === 1 ? "" : "s"}, ${objects.length} object${objects.length === 1 ? "" : "s"}${n ? " (sorting applies to this page)" : ""}`;
    mount(
      pager,
      h("button", { type: "button", disabled: st.page === 0, onclick: () => go(st.page - 1) }, "Previous page"),
      h("span", { class: "muted" }, `Page ${st.page + 1}`),
      h("button", { type: "button", disabled: !data.nextToken, onclick: () => go(st.page + 1) }, "Next page"),
    );
    updateDeleteButton();
  }

  function go(page: number): void {
    st.page = page;
    void load();
  }

  async function load(): Promise<void> {
    listing.setAttribute("aria-busy", "true");
    try {
      const data = await app.s3.listPage(bucket, prefix + st.filter, st.pageSize, st.tokens[st.page] ?? null);
      if (!isCurrent()) return;
      st.data = data;
      st.tokens[st.page + 1] = data.nextToken;
      st.tokens.length = st.page + 2;
      // Keep only selections that still exist on this page.
      const present = new Set(data.objects.map((o) => o.key));
      for (const k of st.selected) if (!present.has(k)) st.selected.delete(k);
      draw();
    } catch (err) {
      if (!isCurrent()) return;
      mount(listing, h("p", { class: "error", role: "alert" }, messageOf(err)));
    } finally {
      listing.setAttribute("aria-busy", "false");
    }
  }
  reload = load;
  await load();
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
