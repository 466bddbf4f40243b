// One object: preview, download, share link, details (HEAD with checksums), user metadata (edited by
// copying the object onto itself) and its erasure layout (GET /_shardgate/admin/object).
import { browserCoding, directDownload } from "../direct";
import { messageOf } from "../errors";
import { markdownToHtml } from "../markdown";
import type { App } from "../app";
import { objectPath, type ObjectHead } from "../s3";
import { confirmDialog, h, humanDate, humanSize, icon, mount, openDialog, toast } from "../ui";
import { renderObjectLock } from "./protection";
import { renderVersions } from "./versions";

/** Share links are signed with the console's temporary credentials: they work until the session ends (an hour at most). */
const EXPIRIES: [string, number][] = [
  ["5 minutes", 300],
  ["15 minutes", 900],
  ["1 hour", 3600],
];

/** Types shown as text (their source, never rendered) besides text/*. */
const TEXT_TYPES = new Set([
  "application/xml",
  "application/javascript",
  "application/x-javascript",
  "application/ecmascript",
  "application/x-yaml",
  "application/yaml",
  "application/toml",
  "application/x-sh",
]);
const PREVIEW_TEXT_BYTES = 256 * 1024;

export interface LayoutShard {
  index?: number;
  kind?: string;
  node?: string;
  health?: string;
}

export interface LayoutPart {
  partNumber?: number;
  size?: number;
  type?: string;
  dataShards?: number;
  parityShards?: number;
  blockBytes?: number;
  chunkBytes?: number;
  blocks?: number;
  shardFileBytes?: number;
  storageId?: string;
  shards?: LayoutShard[];
}

export interface ObjectLayout {
  bucket?: string;
  key?: string;
  size?: number;
  etag?: string;
  parts?: LayoutPart[];
}

/**
 * How an object is previewed, from its Content-Type alone: what the gateway serves it as, never
 * what its name suggests (a `report.pdf` stored as text/html is HTML, shown as its source text).
 */
export function kindOf(contentType: string): "image" | "video" | "audio" | "pdf" | "markdown" | "json" | "text" | null {
  const t = (contentType.toLowerCase().split(";")[0] ?? "").trim();
  if (t.startsWith("image/")) return "image"; // SVG included: an <img> runs no script
  if (t.startsWith("video/")) return "video";
  if (t.startsWith("audio/")) return "audio";
  if (t === "application/pdf") return "pdf";
  if (t === "text/markdown" || t === "text/x-markdown") return "markdown";
  if (t === "application/json" || t.endsWith("+json")) return "json";
  if (t.startsWith("text/") || TEXT_TYPES.has(t) || t.endsWith("+xml")) return "text";
  return null;
}

/** The regions of an object's dialog that fill in as their requests answer. */
interface ObjectRegions {
  preview: HTMLElement;
  details: HTMLElement;
  meta: HTMLElement;
  layout: HTMLElement;
  versions: HTMLElement;
  objectLock: HTMLElement;
}

export function openObject(app: App, bucket: string, key: string, changed: () => void): void {
  const name = key.split("/").pop() || key;
  const regions: ObjectRegions = {
    preview: h("div", { class: "preview", "aria-label": "Preview" }, h("p", { class: "muted" }, "Loading…")),
    details: h("div", { class: "details" }),
    meta: h("div", { class: "metadata" }),
    layout: h("div", { class: "layout" }, h("p", { class: "muted" }, "Loading the layout…")),
    versions: h("div", { class: "versions-list" }, h("p", { class: "muted small" }, "Loading the versions…")),
    objectLock: h("div", { class: "object-lock" }),
  };
  const actions = objectActions(app, bucket, key, name, () => {
    dialog.close();
    changed();
  });
  const { dialog } = openDialog(name, objectBody(regions, actions), { wide: true });
  void renderFromHead(app, regions, bucket, key, changed);
  void renderLayout(app, regions.layout, bucket, key);
  void renderVersions(app, regions.versions, bucket, key, changed);
}

/** The dialog's layout: the preview, then the actions and a section per region, then the erasure layout. */
function objectBody(r: ObjectRegions, actions: HTMLElement): HTMLElement {
  return h(
    "div",
    { class: "object-view" },
    h("div", { class: "object-main" }, r.preview),
    h(
      "div",
      { class: "object-side" },
      actions,
      h("section", { "aria-labelledby": "details-title" }, h("h3", { id: "details-title" }, "Details"), r.details),
      h("section", { "aria-labelledby": "meta-title" }, h("h3", { id: "meta-title" }, "User metadata"), r.meta),
      h("section", { "aria-labelledby": "object-lock-title" }, h("h3", { id: "object-lock-title" }, "Object lock"), r.objectLock),
      h("section", { "aria-labelledby": "versions-title" }, h("h3", { id: "versions-title" }, "Versions"), r.versions),
    ),
    h("section", { class: "object-layout", "aria-labelledby": "layout-title" }, h("h3", { id: "layout-title" }, "Erasure layout"), r.layout),
  );
}

/** Download, Delete (then `deleted`) and Share. */
function objectActions(app: App, bucket: string, key: string, name: string, deleted: () => void): HTMLElement {
  return h(
    "section",
    { "aria-label": "Actions", class: "object-actions" },
    h("div", { class: "row" }, downloadLink(app, bucket, key, name), deleteObjectButton(app, bucket, key, name, deleted)),
    shareControls(app, bucket, key),
  );
}

/** A presigned download link, or with the direct path on: fetched shard by shard and decoded here (a Web Worker), then saved. */
function downloadLink(app: App, bucket: string, key: string, name: string): HTMLElement[] {
  const download = h("a", { class: "button", href: "#", download: name }, "Download");
  const downloadNote = h("p", { class: "small muted", id: "download-status", "aria-live": "polite" });
  void app.s3
    .presign(bucket, key, 3600, { "response-content-disposition": `attachment; filename="${name.replace(/["\\]/g, "_")}"` })
    .then((u) => (download.href = u));
  download.addEventListener("click", (e) => {
    if (!browserCoding() || download.getAttribute("aria-busy") === "true") return;
    e.preventDefault();
    void downloadHere(app, bucket, key, name, download, downloadNote);
  });
  return [download, downloadNote];
}

function deleteObjectButton(app: App, bucket: string, key: string, name: string, deleted: () => void): HTMLElement {
  const remove = async () => {
    const versioned = (await app.s3.getVersioning(bucket).catch(() => null)) === "Enabled";
    const text = versioned ? `Delete “${key}”? Its versions are kept: a delete marker becomes the current version.` : `Delete “${key}”? This cannot be undone.`;
    if (!(await confirmDialog("Delete object", text, "Delete"))) return;
    try {
      await app.s3.request("DELETE", objectPath(bucket, key));
      toast(`${name} deleted.`);
      deleted();
    } catch (err) {
      toast(messageOf(err), "error");
    }
  };
  return h("button", { type: "button", class: "danger", onclick: remove }, "Delete");
}

/** A share link for a chosen time (copied to the clipboard if the browser lets us). */
function shareControls(app: App, bucket: string, key: string): HTMLElement[] {
  const expiry = h(
    "select",
    { id: "share-expiry" },
    EXPIRIES.map(([label, s]) => h("option", { value: String(s), selected: s === 3600 }, label)),
  );
  const shareLink = h("input", { id: "share-link", readonly: true, class: "grow", hidden: true, "aria-label": "Share link" });
  const shareNote = h("p", { class: "small muted", role: "status" });
  const share = async () => {
    try {
      // Never past the session: the link's signature needs the session's token.
      const seconds = Math.min(Number(expiry.value), app.s3.secondsLeft() ?? Number(expiry.value));
      const url = await app.s3.presign(bucket, key, seconds);
      shareLink.value = url;
      shareLink.hidden = false;
      shareLink.select();
      const label = EXPIRIES.find(([, s]) => s === seconds)?.[0] ?? `${Math.floor(seconds / 60)} minutes (when this session ends)`;
      try {
        await navigator.clipboard.writeText(url);
        shareNote.textContent = `Link copied to the clipboard. Anyone with it can download this object for ${label}.`;
      } catch {
        shareNote.textContent = `Copy the link above. Anyone with it can download this object for ${label}.`;
      }
    } catch (err) {
      shareNote.textContent = messageOf(err);
    }
  };
  return [
    h(
      "div",
      { class: "row share" },
      h("label", { for: "share-expiry" }, "Link expires after"),
      expiry,
      h("button", { type: "button", class: "primary", onclick: share }, "Share"),
    ),
    shareLink,
    shareNote,
  ];
}

/** HEADs the object, then fills in its details, metadata, object lock and preview. */
async function renderFromHead(app: App, r: ObjectRegions, bucket: string, key: string, changed: () => void): Promise<void> {
  let head: ObjectHead;
  try {
    head = await app.s3.headObject(bucket, key);
  } catch (err) {
    mount(r.details, h("p", { class: "error", role: "alert" }, messageOf(err)));
    mount(r.preview, h("p", { class: "muted" }, "No preview."));
    return;
  }
  renderDetails(r.details, bucket, key, head);
  renderMetadata(app, r.meta, bucket, key, head, changed);
  void renderObjectLock(app, r.objectLock, bucket, key, head.headers);
  await renderPreview(app, r.preview, bucket, key, head);
}

/** How an object is encrypted at rest, from its HEAD. */
function encryptionText(headers: Headers): string {
  if (headers.get("x-amz-server-side-encryption") === "AES256") return "SSE-S3: AES-256, with a key sealed by the gateway";
  if (headers.get("x-amz-server-side-encryption-customer-algorithm")) return "SSE-C: AES-256, with the client's own key";
  return "none (stored as sent)";
}

/** The object's x-amz-replication-status (PENDING, COMPLETED, FAILED, REPLICA), when its HEAD answers one. */
function replicationRow(headers: Headers): HTMLElement[] {
  const status = headers.get("x-amz-replication-status");
  if (!status) return [];
  const words: Record<string, string> = {
    PENDING: "pending: waiting to be copied",
    COMPLETED: "completed: copied to every destination",
    FAILED: "failed: see the bucket's dead letters",
    REPLICA: "a replica, written by replication",
  };
  return [h("dt", null, "Replication"), h("dd", { id: "object-replication" }, words[status] ?? status)];
}

function renderDetails(el: HTMLElement, bucket: string, key: string, head: ObjectHead): void {
  const checksumRows = Object.entries(head.checksums).filter(([k]) => k !== "TYPE");
  mount(
    el,
    h(
      "dl",
      { class: "kv" },
      h("dt", null, "Name"),
      h("dd", { class: "mono" }, `${bucket}/${key}`),
      h("dt", null, "Size"),
      h("dd", null, `${humanSize(head.size)} (${head.size.toLocaleString()} bytes)`),
      h("dt", null, "ETag"),
      h("dd", { class: "mono" }, head.etag),
      h("dt", null, "Content type"),
      h("dd", null, head.contentType || "—"),
      h("dt", null, "Last modified"),
      h("dd", null, humanDate(head.lastModified)),
      h("dt", null, "Encryption"),
      h("dd", { id: "object-encryption" }, encryptionText(head.headers)),
      replicationRow(head.headers),
      h("dt", null, "Checksums"),
      h(
        "dd",
        null,
        checksumRows.length
          ? checksumRows.map(([alg, v]) =>
              h("div", { class: "mono" }, `${alg} ${v}${head.checksums.TYPE ? ` (${head.checksums.TYPE.toLowerCase().replace("_", " ")})` : ""}`),
            )
          : h("span", { class: "muted" }, "none stored"),
      ),
    ),
  );
}

function renderMetadata(app: App, el: HTMLElement, bucket: string, key: string, head: ObjectHead, changed: () => void): void {
  const rows = h("div", { class: "meta-rows" });
  const addRow = (k = "", v = "") => {
    const n = rows.children.length + 1;
    const row = h(
      "div",
      { class: "meta-row" },
      h("input", { class: "meta-key", value: k, "aria-label": `Metadata name ${n}`, placeholder: "name", spellcheck: false }),
      h("input", { class: "meta-value", value: v, "aria-label": `Metadata value ${n}`, placeholder: "value" }),
      h("button", { type: "button", class: "icon", "aria-label": `Remove metadata ${k || n}`, onclick: () => row.remove() }, "×"),
    );
    rows.appendChild(row);
  };
  for (const [k, v] of Object.entries(head.metadata)) addRow(k, v);
  const note = h("p", { class: "small", role: "status" }, rows.children.length ? "" : "No user metadata (x-amz-meta-*) yet.");
  mount(
    el,
    rows,
    h(
      "div",
      { class: "row" },
      h("button", { type: "button", onclick: () => addRow() }, "Add field"),
      h(
        "button",
        {
          type: "button",
          class: "primary",
          onclick: async () => {
            const metadata: Record<string, string> = {};
            for (const row of Array.from(rows.children)) {
              const k = (row.querySelector(".meta-key") as HTMLInputElement).value.trim().toLowerCase();
              const v = (row.querySelector(".meta-value") as HTMLInputElement).value;
              if (!k) continue;
              if (!/^[a-z0-9][a-z0-9_.-]*$/.test(k)) {
                note.textContent = `“${k}” cannot be a metadata name: use letters, digits, “-”, “_” and “.”.`;
                return;
              }
              metadata[k] = v;
            }
            note.textContent = "Saving…";
            try {
              await app.s3.replaceMetadata(bucket, key, head, metadata);
              note.textContent = "Metadata saved (the object was copied onto itself; no bytes moved).";
              changed();
            } catch (err) {
              note.textContent = messageOf(err);
            }
          },
        },
        "Save metadata",
      ),
    ),
    note,
  );
}

async function renderPreview(app: App, el: HTMLElement, bucket: string, key: string, head: ObjectHead): Promise<void> {
  const kind = kindOf(head.contentType);
  const name = key.split("/").pop() || key;
  try {
    if (kind === "image" || kind === "video" || kind === "audio" || kind === "pdf") {
      // A presigned URL as the source: the browser makes its own (ranged, seekable) requests.
      const src = await app.s3.presign(bucket, key, 3600);
      if (kind === "image") mount(el, h("img", { src, alt: `Preview of ${name}` }));
      else if (kind === "video") mount(el, h("video", { src, controls: true, preload: "metadata", "aria-label": `Video ${name}` }));
      else if (kind === "audio") mount(el, h("audio", { src, controls: true, preload: "metadata", "aria-label": `Audio ${name}` }));
      else {
        // Nothing the gateway serves is framed in the console, and Chromium shows no PDF in a
        // sandboxed frame: the PDF opens in a tab of its own, on the gateway's origin (which holds
        // no credential), with no way back to this page (noopener).
        mount(
          el,
          h(
            "div",
            { class: "no-preview" },
            icon("file", "big"),
            h("p", { class: "muted" }, "A PDF document."),
            h("a", { class: "button", href: src, target: "_blank", rel: "noopener noreferrer", "aria-label": `Open PDF ${name}` }, "Open in a new tab"),
          ),
        );
      }
      return;
    }
    if (kind === "text" || kind === "json" || kind === "markdown") {
      const { text, truncated } = await app.s3.getText(bucket, key, PREVIEW_TEXT_BYTES);
      const more = truncated ? h("p", { class: "small muted" }, `Showing the first ${humanSize(PREVIEW_TEXT_BYTES)}.`) : null;
      if (kind === "markdown") {
        const div = h("div", { class: "markdown" });
        div.innerHTML = markdownToHtml(text);
        mount(el, div, more);
      } else {
        let shown = text;
        if (kind === "json" && !truncated) {
          try {
            shown = JSON.stringify(JSON.parse(text), null, 2);
          } catch {
            // not valid JSON: show as is
          }
        }
        mount(el, h("pre", { class: "text", tabindex: "0", "aria-label": `Text of ${name}` }, shown), more);
      }
      return;
    }
    mount(
      el,
      h(
        "div",
        { class: "no-preview" },
        icon("file", "big"),
        h("p", { class: "muted" }, `No preview for ${head.contentType || "this type"}. Download it instead.`),
      ),
    );
  } catch (err) {
    mount(el, h("p", { class: "error" }, messageOf(err)));
  }
}

const HEALTH_TEXT: Record<string, string> = {
  ok: "OK",
  missing: "Missing",
  "wrong-size": "Wrong size",
  "node-unconfigured": "Node not configured",
  "node-unreachable": "Node unreachable",
};

export async function renderLayout(app: App, el: HTMLElement, bucket: string, key: string): Promise<void> {
  let layout: ObjectLayout | null;
  try {
    layout = await app.s3.admin<ObjectLayout>("GET", "object", { bucket, key });
  } catch (err) {
    mount(el, h("p", { class: "error" }, messageOf(err)));
    return;
  }
  if (!layout || !Array.isArray(layout.parts)) {
    mount(el, h("p", { class: "muted note" }, "Not available: this gateway does not report object layouts yet."));
    return;
  }
  const parts = layout.parts;
  const sharded = parts.filter((p) => p.type === "sharded");
  const summary =
    sharded.length === 0
      ? "Stored inline in its manifest (small objects have no shard files)."
      : `${parts.length} part${parts.length === 1 ? "" : "s"}; ${sharded[0]?.dataShards ?? "?"} data + ${sharded[0]?.parityShards ?? "?"} parity shards per block, so any ${sharded[0]?.parityShards ?? "?"} shard files can be lost.`;
  mount(
    el,
    h("p", null, summary),
    parts.map((p) =>
      h(
        "div",
        { class: "part" },
        h(
          "h4",
          null,
          `Part ${p.partNumber ?? "?"}`,
          h(
            "span",
            { class: "muted small" },
            ` · ${p.size !== undefined ? humanSize(p.size) : "?"} · ${p.type === "sharded" ? `${p.dataShards ?? "?"} + ${p.parityShards ?? "?"}, ${p.blocks ?? "?"} block${p.blocks === 1 ? "" : "s"} of ${p.blockBytes !== undefined ? humanSize(p.blockBytes) : "?"}, shard files of ${p.shardFileBytes !== undefined ? humanSize(p.shardFileBytes) : "?"}` : "inline"}`,
          ),
        ),
        p.type === "sharded" && Array.isArray(p.shards)
          ? h(
              "ul",
              { class: "shards", "aria-label": `Shard files of part ${p.partNumber ?? "?"}` },
              p.shards.map((s) =>
                h(
                  "li",
                  {
                    class: `shard ${s.kind === "parity" ? "parity" : "data"} health-${s.health ?? "unknown"}`,
                    title: `Shard ${s.index ?? "?"} (${s.kind ?? "?"}) on ${s.node ?? "?"}: ${HEALTH_TEXT[s.health ?? ""] ?? s.health ?? "unknown"}`,
                  },
                  h("span", { class: "shard-index" }, `${s.kind === "parity" ? "P" : "D"}${s.index ?? "?"}`),
                  h("span", { class: "shard-node" }, s.node ?? "?"),
                  h("span", { class: "shard-health" }, HEALTH_TEXT[s.health ?? ""] ?? s.health ?? "unknown"),
                ),
              ),
            )
          : null,
      ),
    ),
  );
}

/** Downloads through the direct path and saves the file; on failure, the classic link is there to click. */
async function downloadHere(app: App, bucket: string, key: string, name: string, link: HTMLAnchorElement, note: HTMLElement): Promise<void> {
  link.setAttribute("aria-busy", "true");
  const started = performance.now();
  const around = (n: number) => (n ? ` · ${n} shard file${n === 1 ? "" : "s"} read around` : "");
  try {
    const got = await directDownload(app.s3.origin, app.s3.credentials, bucket, key, (bytes, size, readAround) => {
      const speed = bytes / Math.max(0.001, (performance.now() - started) / 1000);
      note.textContent = `Decoding in this browser: ${Math.floor((bytes / Math.max(1, size)) * 100)}% · ${humanSize(bytes)} of ${humanSize(size)} · ${humanSize(speed)}/s${around(readAround.length)}`;
    });
    const seconds = (performance.now() - started) / 1000;
    note.textContent =
      got.mode === "direct"
        ? `Decoded in this browser: ${humanSize(got.blob.size)} in ${seconds.toFixed(1)} s (${humanSize(got.blob.size / Math.max(0.001, seconds))}/s)${around(got.readAround.length)}.`
        : `Downloaded through the gateway: ${humanSize(got.blob.size)}.`;
    const url = URL.createObjectURL(got.blob);
    const save = h("a", { href: url, download: name, hidden: true });
    document.body.append(save);
    save.click();
    save.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  } catch (err) {
    note.textContent = `${messageOf(err)} Turn off “Code in this browser” to download through the gateway.`;
  } finally {
    link.removeAttribute("aria-busy");
  }
}
