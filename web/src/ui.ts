// A few DOM helpers instead of a framework: the console's views are plain functions that build
// elements with h() and replace a region when its data changes. Progress bars are updated in place
// (once per animation frame), which is what keeps the page smooth during big uploads.
import { refusalOf } from "./errors";

type Child = Node | string | number | null | undefined | false | Child[];
type Props = Record<string, unknown> & { class?: string; style?: string };

/** Creates an element: h("button", { onclick, "aria-label": "Close" }, "×"). */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Props | null = null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) {
    for (const [name, value] of Object.entries(props)) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith("on") && typeof value === "function") {
        el.addEventListener(name.slice(2), value as EventListener);
      } else if (name === "class") {
        el.className = String(value);
      } else if (name in el && !name.includes("-") && name !== "list" && name !== "form") {
        (el as unknown as Record<string, unknown>)[name] = value;
      } else {
        el.setAttribute(name, value === true ? "" : String(value));
      }
    }
  }
  append(el, children);
  return el;
}

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

/** Replaces everything inside `el`. */
export function mount(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

/** A labelled form field of a bucket panel: the label for `input` (by its `id`), the input, and a hint under it. */
export function labelledField(id: string, label: string, input: HTMLElement, hint: string): HTMLDivElement {
  return h("div", { class: "field" }, h("label", { for: id, class: "small" }, label), input, h("span", { class: "muted small" }, hint));
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1536 → "1.5 KiB". */
export function humanSize(bytes: number): string {
  if (!Number.isFinite(bytes)) return "—";
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${UNITS[u]}`;
}

/** Seconds → "1 h 5 min", "3 min 20 s", "12 s". */
export function humanDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return "—";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function humanDate(d: Date | number | null | undefined): string {
  if (d === null || d === undefined) return "—";
  const date = typeof d === "number" ? new Date(d) : d;
  if (Number.isNaN(date.getTime())) return "—";
  return date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** A short message at the bottom of the screen, read out by screen readers. */
export function toast(message: string, kind: "info" | "error" = "info"): void {
  const host = document.getElementById("toasts");
  if (!host) return;
  const t = h("div", { class: `toast ${kind}` }, message);
  host.appendChild(t);
  setTimeout(() => t.remove(), kind === "error" ? 8000 : 4000);
}

/**
 * Writes what a panel's form asks (`save`): a refusal is shown in `problem` in the gateway's words,
 * the form kept as typed to be corrected; else `done` is toasted. Whether it was written.
 */
export async function savedOrShown(problem: HTMLElement, save: () => Promise<unknown>, done: string): Promise<boolean> {
  problem.textContent = "";
  try {
    await save();
  } catch (err) {
    problem.textContent = refusalOf(err);
    return false;
  }
  toast(done);
  return true;
}

/** Runs `fn` at most once per animation frame. */
export function perFrame(fn: () => void): () => void {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      fn();
    });
  };
}

/** A modal dialog (<dialog>, so focus and Escape are handled by the browser). Resolves on close. */
export function openDialog(title: string, body: Child, opts: { wide?: boolean } = {}): { dialog: HTMLDialogElement; closed: Promise<void> } {
  const titleId = `dlg-${Math.random().toString(36).slice(2)}`;
  const dialog = h(
    "dialog",
    { class: opts.wide ? "wide" : "", "aria-labelledby": titleId },
    h(
      "header",
      null,
      h("h2", { id: titleId }, title),
      h("button", { type: "button", class: "icon", "aria-label": "Close", onclick: () => dialog.close() }, "×"),
    ),
    h("div", { class: "dialog-body" }, body),
  );
  document.body.appendChild(dialog);
  const closed = new Promise<void>((resolve) =>
    dialog.addEventListener("close", () => {
      dialog.remove();
      resolve();
    }),
  );
  dialog.showModal();
  return { dialog, closed };
}

/** Asks a yes/no question in a dialog. */
export async function confirmDialog(title: string, message: string, action: string): Promise<boolean> {
  let ok = false;
  const { dialog, closed } = openDialog(
    title,
    h(
      "div",
      null,
      h("p", null, message),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", onclick: () => dialog.close() }, "Cancel"),
        h("button", { type: "button", class: "danger", onclick: () => ((ok = true), dialog.close()) }, action),
      ),
    ),
  );
  await closed;
  return ok;
}

const ICON_PATHS: Record<string, string> = {
  folder: "M3 6.5A1.5 1.5 0 0 1 4.5 5h4.2l1.8 2h9a1.5 1.5 0 0 1 1.5 1.5v9A1.5 1.5 0 0 1 19.5 19h-15A1.5 1.5 0 0 1 3 17.5z",
  file: "M6 3h8l5 5v12a1 1 0 0 1-1 1H6a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1zm8 0v5h5",
  image: "M4 5h16v14H4zM4 16l5-5 4 4 3-3 4 4M15.5 9.5a1.5 1.5 0 1 0 0-.01",
  video: "M4 6h11v12H4zM15 10l5-3v10l-5-3",
  audio: "M9 18V6l10-2v12M9 18a3 3 0 1 1-3-3 3 3 0 0 1 3 3zm10-2a3 3 0 1 1-3-3 3 3 0 0 1 3 3z",
  text: "M6 3h8l5 5v12a1 1 0 0 1-1 1H6a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1zm8 0v5h5M8 12h8M8 16h8",
  bucket: "M4 7c0-1.7 3.6-3 8-3s8 1.3 8 3-3.6 3-8 3-8-1.3-8-3zm0 0l1.6 11.2C5.9 19.8 8.7 21 12 21s6.1-1.2 6.4-2.8L20 7",
  upload: "M12 16V4m0 0l-5 5m5-5l5 5M4 20h16",
  refresh: "M20 11a8 8 0 1 0-2.3 5.7M20 5v6h-6",
};

/** A small stroke icon (decorative: hidden from assistive technology). */
export function icon(name: keyof typeof ICON_PATHS | string, cls = "icon"): SVGSVGElement {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", `${cls} icon-${name}`);
  const path = document.createElementNS(ns, "path");
  path.setAttribute("d", ICON_PATHS[name] ?? ICON_PATHS.file ?? "");
  svg.appendChild(path);
  return svg;
}

/** Saves `blob` as a file named `name` (a download the browser asks about or stores). */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const save = h("a", { href: url, download: name, hidden: true });
  document.body.append(save);
  save.click();
  save.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
