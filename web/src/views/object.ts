// One object: preview, download, share link, details (HEAD with checksums), user metadata (edited by
// copying the object onto itself) and its erasure layout (GET /_shardgate/admin/object).
import { browserCoding, directDownload, unlockSealed } from "../direct";
import { messageOf } from "../errors";
import { markdownToHtml } from "../markdown";
import type { App } from "../app";
import { objectPath, type ObjectHead } from "../s3";
import { confirmDialog, h, humanDate, humanSize, icon, mount, openDialog, saveBlob, toast } from "../ui";
import { openSealedUrl, plainSizeOf, SEALED_METADATA, sealedHeaderOf, shareLink as sealedShareLink } from "../sealing";
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

/**
 * A sealed object's dialog (client-side encryption): its header once the HEAD says it is sealed,
 * and its data key once the passphrase opened it. The key stays in this page's memory while the
 * dialog is open (zeroed when it closes) and leaves the page only in a share link the user makes.
 */
interface SealedState {
  header: string | null;
  dataKey: Uint8Array | null;
  contentType: string;
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
  const sealed: SealedState = { header: null, dataKey: null, contentType: "" };
  const actions = objectActions(app, bucket, key, name, sealed, () => {
    dialog.close();
    changed();
  });
  const { dialog, closed } = openDialog(name, objectBody(regions, actions), { wide: true });
  void closed.then(() => {
    sealed.dataKey?.fill(0);
    sealed.dataKey = null;
  });
  void renderFromHead(app, regions, bucket, key, sealed, changed);
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
function objectActions(app: App, bucket: string, key: string, name: string, sealed: SealedState, deleted: () => void): HTMLElement {
  return h(
    "section",
    { "aria-label": "Actions", class: "object-actions" },
    h("div", { class: "row" }, downloadLink(app, bucket, key, name, sealed), deleteObjectButton(app, bucket, key, name, deleted)),
    shareControls(app, bucket, key, name, sealed),
  );
}

/**
 * A presigned download link, or with the direct path on: fetched shard by shard and decoded here (a
 * Web Worker), then saved. A sealed object is always decrypted here, once its passphrase is given.
 */
function downloadLink(app: App, bucket: string, key: string, name: string, sealed: SealedState): HTMLElement[] {
  const download = h("a", { class: "button", href: "#", download: name }, "Download");
  const downloadNote = h("p", { class: "small muted", id: "download-status", "aria-live": "polite" });
  void app.s3
    .presign(bucket, key, 3600, { "response-content-disposition": `attachment; filename="${name.replace(/["\\]/g, "_")}"` })
    .then((u) => (download.href = u));
  download.addEventListener("click", (e) => {
    if (download.getAttribute("aria-busy") === "true") return;
    if (sealed.header !== null) {
      e.preventDefault();
      if (!sealed.dataKey) {
        downloadNote.textContent = "This object is encrypted: type its passphrase (beside the preview) first.";
        document.getElementById("sealed-passphrase")?.focus();
        return;
      }
      void downloadHere(app, bucket, key, name, download, downloadNote, sealed);
      return;
    }
    if (!browserCoding()) return;
    e.preventDefault();
    void downloadHere(app, bucket, key, name, download, downloadNote, null);
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

/**
 * A share link for a chosen time (copied to the clipboard if the browser lets us). For a sealed
 * object, a link to this console whose fragment holds the presigned URL and the object's data key:
 * the console it opens in downloads and decrypts the object itself.
 */
function shareControls(app: App, bucket: string, key: string, name: string, sealed: SealedState): HTMLElement[] {
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
      if (sealed.header !== null && !sealed.dataKey) {
        shareNote.textContent = "This object is encrypted: type its passphrase (beside the preview) first; the link then carries its key.";
        document.getElementById("sealed-passphrase")?.focus();
        return;
      }
      const presigned = await app.s3.presign(bucket, key, seconds);
      const url = sealed.dataKey ? sealedShareLink({ url: presigned, dataKey: sealed.dataKey, name }) : presigned;
      shareLink.value = url;
      shareLink.hidden = false;
      shareLink.select();
      const label = EXPIRIES.find(([, s]) => s === seconds)?.[0] ?? `${Math.floor(seconds / 60)} minutes (when this session ends)`;
      const who = sealed.dataKey
        ? `Anyone with it can download and decrypt this object in the console for ${label}: the link carries its key (after the “#”, which browsers never send), never your passphrase.`
        : `Anyone with it can download this object for ${label}.`;
      try {
        await navigator.clipboard.writeText(url);
        shareNote.textContent = `Link copied to the clipboard. ${who}`;
      } catch {
        shareNote.textContent = `Copy the link above. ${who}`;
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

/** HEADs the object, then fills in its details, metadata, object lock and preview (a sealed one's once it is unlocked). */
async function renderFromHead(app: App, r: ObjectRegions, bucket: string, key: string, sealed: SealedState, changed: () => void): Promise<void> {
  let head: ObjectHead;
  try {
    head = await app.s3.headObject(bucket, key);
  } catch (err) {
    mount(r.details, h("p", { class: "error", role: "alert" }, messageOf(err)));
    mount(r.preview, h("p", { class: "muted" }, "No preview."));
    return;
  }
  sealed.header = sealedHeaderOf(head.metadata);
  sealed.contentType = head.contentType;
  renderDetails(r.details, bucket, key, head, sealed.header);
  renderMetadata(app, r.meta, bucket, key, head, changed);
  void renderObjectLock(app, r.objectLock, bucket, key, head.headers);
  if (sealed.header !== null) renderUnlock(app, r.preview, bucket, key, head, sealed);
  else await renderPreview(app, r.preview, bucket, key, head);
}

/** A sealed object's preview region: its passphrase asked for (opened in a worker), then its preview decrypted here. */
function renderUnlock(app: App, el: HTMLElement, bucket: string, key: string, head: ObjectHead, sealed: SealedState): void {
  const passphrase = h("input", { type: "password", id: "sealed-passphrase", autocomplete: "off", spellcheck: false });
  const status = h("p", { class: "small", role: "status", id: "sealed-status" });
  const unlock = h("button", { type: "submit", class: "primary" }, "Unlock");
  const form = h(
    "form",
    { class: "sealed-unlock" },
    icon("file", "big"),
    h("p", null, "This object is encrypted: the gateway holds only ciphertext. Its passphrase opens it here, in this browser."),
    h("div", { class: "field" }, h("label", { for: "sealed-passphrase" }, "Passphrase"), passphrase),
    unlock,
    status,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    if (!sealed.header || !passphrase.value) return;
    unlock.disabled = true;
    status.textContent = "Opening the key (Argon2id, in a worker)…";
    try {
      sealed.dataKey = await unlockSealed(sealed.header, passphrase.value);
      passphrase.value = "";
      status.textContent = "";
      // What Download said while the object was locked no longer holds.
      const note = document.getElementById("download-status");
      if (note) note.textContent = "Unlocked: Download decrypts it in this browser.";
      await renderSealedPreview(app, el, bucket, key, head, sealed);
    } catch (err) {
      status.textContent = messageOf(err);
      status.className = "small error";
      passphrase.select();
    } finally {
      unlock.disabled = false;
    }
  });
  mount(el, form);
}

/** Images up to this size are decrypted whole for their preview. */
const PREVIEW_IMAGE_BYTES = 32 * 1024 * 1024;

/** A sealed object's preview, decrypted here: text from a ranged read of its start, an image whole. */
async function renderSealedPreview(app: App, el: HTMLElement, bucket: string, key: string, head: ObjectHead, sealed: SealedState): Promise<void> {
  const kind = kindOf(head.contentType);
  const name = key.split("/").pop() || key;
  const size = plainSizeOf(sealed.header ?? "");
  const note = h("p", { class: "small muted", id: "sealed-note" }, "Decrypted in this browser.");
  try {
    if (kind === "text" || kind === "json" || kind === "markdown") {
      const blob = await readSealed(app, bucket, key, sealed, { start: 0, end: Math.min(size, PREVIEW_TEXT_BYTES) });
      const text = new TextDecoder().decode(await blob.arrayBuffer());
      const more = size > PREVIEW_TEXT_BYTES ? h("p", { class: "small muted" }, `Showing the first ${humanSize(PREVIEW_TEXT_BYTES)}.`) : null;
      if (kind === "markdown") {
        const div = h("div", { class: "markdown" });
        div.innerHTML = markdownToHtml(text);
        mount(el, div, more, note);
      } else mount(el, h("pre", { class: "text", tabindex: "0", "aria-label": `Text of ${name}` }, text), more, note);
      return;
    }
    if (kind === "image" && size <= PREVIEW_IMAGE_BYTES) {
      const url = URL.createObjectURL(await readSealed(app, bucket, key, sealed));
      mount(el, h("img", { src: url, alt: `Preview of ${name}` }), note);
      return;
    }
    mount(el, h("div", { class: "no-preview" }, icon("file", "big"), h("p", { class: "muted" }, "Unlocked: Download decrypts it in this browser.")));
  } catch (err) {
    mount(el, h("p", { class: "error", role: "alert" }, messageOf(err)));
  }
}

/**
 * A sealed object's plaintext (a range of it), decrypted here with its data key: by the direct path
 * in a worker where this browser codes, else through a presigned URL (the classic path).
 */
async function readSealed(
  app: App,
  bucket: string,
  key: string,
  sealed: SealedState,
  range?: { start: number; end: number },
  onProgress?: (bytes: number, size: number, around: number) => void,
): Promise<Blob> {
  if (!sealed.dataKey) throw new Error("The object is locked: type its passphrase first.");
  if (!browserCoding()) return openSealedUrl(await app.s3.presign(bucket, key, 3600), sealed.dataKey, sealed.contentType, range);
  const got = await directDownload(app.s3.origin, app.s3.credentials, bucket, key, (bytes, size, around) => onProgress?.(bytes, size, around.length), {
    opening: { dataKey: sealed.dataKey },
    ...(range ? { range } : {}),
  });
  return got.blob;
}

const SEALED_TEXT =
  "Client-side (zero-knowledge): encrypted in a browser or by @shardgate/client with AES-256-GCM under a key only its passphrase opens; the gateway and the nodes hold ciphertext";

/** An object's size; a sealed object's in plaintext, with what it stores. */
function sizeText(head: ObjectHead, sealedHeader: string | null): string {
  const stored = `${humanSize(head.size)} (${head.size.toLocaleString()} bytes)`;
  if (sealedHeader === null) return stored;
  try {
    const size = plainSizeOf(sealedHeader);
    return `${humanSize(size)} (${size.toLocaleString()} bytes), stored as ${head.size.toLocaleString()} bytes of ciphertext`;
  } catch {
    return `${stored} of ciphertext (its encryption header is invalid)`;
  }
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

function renderDetails(el: HTMLElement, bucket: string, key: string, head: ObjectHead, sealedHeader: string | null): void {
  const checksumRows = Object.entries(head.checksums).filter(([k]) => k !== "TYPE");
  mount(
    el,
    h(
      "dl",
      { class: "kv" },
      h("dt", null, "Name"),
      h("dd", { class: "mono" }, `${bucket}/${key}`),
      h("dt", null, "Size"),
      h("dd", null, sizeText(head, sealedHeader)),
      h("dt", null, "ETag"),
      h("dd", { class: "mono" }, head.etag),
      h("dt", null, "Content type"),
      h("dd", null, head.contentType || "—"),
      h("dt", null, "Last modified"),
      h("dd", null, humanDate(head.lastModified)),
      h("dt", null, "Encryption"),
      h("dd", { id: "object-encryption" }, sealedHeader !== null ? SEALED_TEXT : encryptionText(head.headers)),
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
  // A sealed object's header is shown in its details, not here: removing it would lose the object.
  const kept = Object.fromEntries(Object.entries(head.metadata).filter(([k]) => k === SEALED_METADATA));
  for (const [k, v] of Object.entries(head.metadata)) if (!(k in kept)) addRow(k, v);
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
              await app.s3.replaceMetadata(bucket, key, head, { ...metadata, ...kept });
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

/**
 * Downloads through the direct path and saves the file; on failure, the classic link is there to
 * click. A sealed object is decrypted here (by the direct path or through a presigned URL).
 */
async function downloadHere(
  app: App,
  bucket: string,
  key: string,
  name: string,
  link: HTMLAnchorElement,
  note: HTMLElement,
  sealed: SealedState | null,
): Promise<void> {
  link.setAttribute("aria-busy", "true");
  const started = performance.now();
  const around = (n: number) => (n ? ` · ${n} shard file${n === 1 ? "" : "s"} read around` : "");
  if (sealed) {
    try {
      note.textContent = "Downloading and decrypting in this browser…";
      const blob = await readSealed(app, bucket, key, sealed, undefined, (bytes, size, n) => {
        note.textContent = `Decrypting in this browser: ${Math.floor((bytes / Math.max(1, size)) * 100)}% · ${humanSize(bytes)} of ${humanSize(size)}${around(n)}`;
      });
      const seconds = (performance.now() - started) / 1000;
      note.textContent = `Decrypted in this browser: ${humanSize(blob.size)} in ${seconds.toFixed(1)} s.`;
      saveBlob(blob, name);
    } catch (err) {
      note.textContent = messageOf(err);
    } finally {
      link.removeAttribute("aria-busy");
    }
    return;
  }
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
    saveBlob(got.blob, name);
  } catch (err) {
    note.textContent = `${messageOf(err)} Turn off “Code in this browser” to download through the gateway.`;
  } finally {
    link.removeAttribute("aria-busy");
  }
}
