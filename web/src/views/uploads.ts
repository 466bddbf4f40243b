// The upload panel: overall and per-file progress with speed and time left, cancel and retry.
// Rows are created once per file and updated in place (at most once per animation frame), so
// buttons keep focus and the page stays smooth while parts stream.
import type { App } from "../app";
import { h, humanDuration, humanSize, mount } from "../ui";
import type { UploadItem } from "../upload";

interface Row {
  el: HTMLElement;
  bar: HTMLProgressElement;
  text: HTMLElement;
  /** Direct-path uploads: the shard files' progress by node. */
  nodes: HTMLElement;
  state: HTMLElement;
  cancel: HTMLButtonElement;
  retry: HTMLButtonElement;
}

const rows = new WeakMap<UploadItem, Row>();
/** The panel's head (title, overall progress, Hide/Show, Clear finished) and its list, made once per host. */
interface Shell {
  host: HTMLElement;
  list: HTMLElement;
  bar: HTMLProgressElement;
  text: HTMLElement;
  title: HTMLElement;
  toggle: HTMLButtonElement;
}

let shell: Shell | null = null;

const STATE_TEXT: Record<UploadItem["state"], string> = {
  queued: "Waiting",
  uploading: "Uploading",
  completing: "Completing",
  done: "Done",
  failed: "Failed",
  cancelled: "Cancelled",
};

function pct(loaded: number, size: number): number {
  return size === 0 ? 100 : Math.floor((Math.min(loaded, size) / size) * 100);
}

function rowFor(app: App, item: UploadItem): Row {
  let row = rows.get(item);
  if (row) return row;
  const bar = h("progress", { max: 100, value: 0, "aria-label": `Progress of ${item.key}` });
  const text = h("span", { class: "small muted" });
  const nodes = h("span", { class: "small muted upload-nodes", "aria-label": `Shard files of ${item.key} by node` });
  const state = h("span", { class: "badge" });
  const cancel = h(
    "button",
    { type: "button", class: "subtle", "aria-label": `Cancel upload of ${item.key}`, onclick: () => app.uploads.cancel(item) },
    "Cancel",
  );
  const retry = h("button", { type: "button", class: "subtle", "aria-label": `Retry upload of ${item.key}`, onclick: () => app.uploads.retry(item) }, "Retry");
  const el = h(
    "li",
    { class: "upload" },
    h("div", { class: "upload-head" }, h("span", { class: "upload-name", title: `${item.bucket}/${item.key}` }, item.key), state, retry, cancel),
    bar,
    text,
    nodes,
  );
  row = { el, bar, text, nodes, state, cancel, retry };
  rows.set(item, row);
  return row;
}

export function renderUploadPanel(app: App, host: HTMLElement): void {
  const items = app.uploads.items;
  const panel = shellFor(app, host);
  host.hidden = items.length === 0;
  if (items.length === 0) return;
  updateSummary(app, panel);
  const wanted = items.map((i) => rowFor(app, i).el);
  if (panel.list.children.length !== wanted.length || wanted.some((el, i) => panel.list.children[i] !== el)) panel.list.replaceChildren(...wanted);
  for (const item of items) updateRow(rowFor(app, item), item);
}

function shellFor(app: App, host: HTMLElement): Shell {
  if (shell && shell.host === host) return shell;
  const bar = h("progress", { id: "overall-progress", max: 100, value: 0, "aria-label": "Overall upload progress" });
  const text = h("span", { id: "overall-text", class: "small" });
  const title = h("h2", { id: "uploads-title" }, "Uploads");
  const list = h("ul", { class: "upload-list", "aria-labelledby": "uploads-title" });
  const toggle: HTMLButtonElement = h(
    "button",
    {
      type: "button",
      class: "subtle",
      "aria-expanded": "true",
      onclick: () => {
        const open = toggle.getAttribute("aria-expanded") !== "true";
        toggle.setAttribute("aria-expanded", String(open));
        toggle.textContent = open ? "Hide" : "Show";
        list.hidden = !open;
      },
    },
    "Hide",
  );
  mount(
    host,
    h(
      "div",
      { class: "upload-summary" },
      title,
      bar,
      text,
      toggle,
      h("button", { type: "button", class: "subtle", onclick: () => app.uploads.clearFinished() }, "Clear finished"),
    ),
    list,
  );
  shell = { host, list, bar, text, title, toggle };
  return shell;
}

/** The head: overall progress, speed and time left (or how many are done), and how many are uploading. */
function updateSummary(app: App, panel: Shell): void {
  const t = app.uploads.totals();
  const overall = pct(t.loaded, t.size);
  panel.bar.value = overall;
  const speed = app.uploads.overallSpeedValue;
  const left = speed > 0 && t.active ? humanDuration((t.size - t.loaded) / speed) : "";
  panel.text.textContent =
    t.active > 0
      ? `${overall}% · ${humanSize(t.loaded)} of ${humanSize(t.size)}${speed > 0 ? ` · ${humanSize(speed)}/s` : ""}${left ? ` · ${left} left` : ""}`
      : `${overall}% · ${t.done} of ${t.count} file${t.count === 1 ? "" : "s"} uploaded${t.failed ? ` · ${t.failed} failed` : ""}`;
  panel.title.textContent = t.active ? `Uploading ${t.active} file${t.active === 1 ? "" : "s"}` : "Uploads";
}

/** A file's row, in place: progress, state, what it says, its nodes (direct path), Cancel and Retry. */
function updateRow(row: Row, item: UploadItem): void {
  const p = pct(item.loaded, item.size);
  row.bar.value = p;
  row.state.textContent = STATE_TEXT[item.state];
  row.state.className = `badge ${item.state}`;
  row.el.className = `upload ${item.state}`;
  const parts = partsText(item);
  if (item.state === "uploading") {
    const left = item.speed > 0 ? humanDuration((item.size - item.loaded) / item.speed) : "";
    row.text.textContent = `${p}% · ${humanSize(Math.min(item.loaded, item.size))} of ${humanSize(item.size)}${item.speed > 0 ? ` · ${humanSize(item.speed)}/s` : ""}${left ? ` · ${left} left` : ""}${parts}`;
  } else if (item.state === "failed") {
    row.text.textContent = item.error ?? "Failed.";
  } else if (item.state === "done") {
    row.text.textContent = `100% · ${humanSize(item.size)}${doneText(item)}`;
  } else {
    row.text.textContent = `${p}% · ${humanSize(item.size)}${parts}`;
  }
  row.nodes.hidden = !item.direct;
  if (item.direct) {
    row.nodes.textContent = Object.entries(item.direct.nodes)
      .map(([node, n]) => `${node} ${Math.floor((n.sent / Math.max(1, n.total)) * 100)}%`)
      .join(" · ");
  }
  row.cancel.hidden = item.state === "done" || item.state === "cancelled";
  row.retry.hidden = item.state !== "failed";
}

/** What a row says of an upload's pieces in flight: shard files (coded here) or parts; and whether it is encrypted here. */
function partsText(item: UploadItem): string {
  return `${item.encrypted ? " · encrypted in this browser" : ""}${piecesText(item)}`;
}

function piecesText(item: UploadItem): string {
  const d = item.direct;
  if (d) {
    const extra = [d.shardsResumed ? `${d.shardsResumed} resumed` : "", d.shardsFailed ? `${d.shardsFailed} failed` : ""].filter(Boolean).join(", ");
    return ` · coded in this browser · ${d.shardsSent} of ${d.shardsTotal} shard files${extra ? ` (${extra})` : ""}`;
  }
  return item.multipart ? ` · part ${item.partsDone} of ${item.partsTotal}${item.partsResumed ? ` (${item.partsResumed} resumed)` : ""}` : "";
}

/** What a finished upload's row says after its size. */
function doneText(item: UploadItem): string {
  return `${storedText(item)}${item.encrypted ? " · encrypted in this browser" : ""}`;
}

function storedText(item: UploadItem): string {
  const d = item.direct;
  if (d)
    return ` coded in this browser into ${d.shardsTotal} shard files on ${Object.keys(d.nodes).length} nodes${d.shardsResumed ? ` (${d.shardsResumed} resumed)` : ""}`;
  return item.multipart ? ` in ${item.partsTotal} parts${item.partsResumed ? ` (${item.partsResumed} resumed)` : ""}` : "";
}
