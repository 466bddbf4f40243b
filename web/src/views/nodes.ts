// Storage nodes (circuit-breaker state, latency, errors, what each stores, draining), the block
// cache (its hit ratio, what it holds), rebalancing
// (the scrub's walk moving shard files to where placement puts them now, on demand too), objects
// waiting for heal, scrub progress, and a heal of a bucket (POST /_shardgate/admin/heal, batch
// after batch until `next` is null).
import { messageOf } from "../errors";
import type { App } from "../app";
import { h, humanDate, humanSize, mount } from "../ui";

interface NodeInfo {
  id?: string;
  kind?: string;
  state?: string;
  latencyMs?: number | null;
  requests?: number;
  errors?: number;
  consecutiveFailures?: number;
  lastError?: string | null;
  lastErrorAt?: number | null;
  draining?: boolean;
}

/** The block cache (GET /_shardgate/admin/nodes `cache`). */
interface CacheInfo {
  on?: boolean;
  hits?: number;
  misses?: number;
  bytesServed?: number;
  store?: { bytes?: number; entries?: number; capacity?: number; evictions?: number } | null;
}

/** Shard files and bytes per node, as a pass of the scrub's walk counted them. */
type Usage = Record<string, { files?: number; bytes?: number }>;

interface PassCounters {
  objectsChecked?: number;
  shardsMisplaced?: number;
  shardsMoved?: number;
  bytesRebuilt?: number;
}

interface ScrubView {
  pass?: number;
  cursor?: unknown;
  current?: PassCounters;
  usage?: Usage;
  lastPass?: { pass?: number; finished?: string; counters?: PassCounters; usage?: Usage } | null;
}

interface HealStatus {
  queue?: { pending?: number; objects?: { bucket?: string; key?: string; reason?: string; since?: number | string }[] };
  scrub?: Record<string, unknown>;
}

interface HealReport {
  objectsChecked?: number;
  shardsRebuilt?: number;
  shardsFailed?: number;
  objectsFailed?: { key: string; error: string }[];
  next?: string | null;
}

const STATE_TEXT: Record<string, string> = { closed: "Healthy", open: "Failing (requests paused)", "half-open": "Recovering (being probed)" };

const notAvailable = (what: string) => h("p", { class: "muted note" }, `Not available: this gateway does not report ${what} yet.`);

export async function renderNodes(app: App): Promise<void> {
  document.title = "Nodes · shardgate";
  const nodes = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading nodes…"));
  const queue = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading the heal queue…"));
  const healCard = h("div", { class: "card" });
  mount(
    app.main,
    h("div", { class: "page-head" }, h("h1", null, "Nodes"), h("button", { type: "button", onclick: () => void renderNodes(app) }, "Refresh")),
    h("section", { "aria-labelledby": "nodes-title" }, h("h2", { id: "nodes-title" }, "Storage nodes"), nodes),
    h("section", { "aria-labelledby": "heal-title" }, h("h2", { id: "heal-title" }, "Healing"), queue, healCard),
  );
  renderHealForm(app, healCard);

  const [n, q] = await Promise.allSettled([app.s3.admin<{ nodes?: NodeInfo[]; cache?: CacheInfo }>("GET", "nodes"), app.s3.admin<HealStatus>("GET", "heal")]);
  if (n.status === "rejected") mount(nodes, h("p", { class: "error" }, messageOf(n.reason)));
  else if (!n.value || !Array.isArray(n.value.nodes)) mount(nodes, notAvailable("node health"));
  else {
    renderNodeTable(nodes, n.value.nodes, q.status === "fulfilled" ? usageOf(q.value?.scrub as ScrubView | undefined) : null);
    nodes.append(cacheLine(n.value.cache));
  }

  if (q.status === "rejected") mount(queue, h("p", { class: "error" }, messageOf(q.reason)));
  else if (!q.value) mount(queue, notAvailable("its heal queue"));
  else renderQueue(queue, q.value, app);
}

/** Usage as the last finished pass counted it, or as the pass in progress has so far. */
function usageOf(scrub: ScrubView | undefined): { usage: Usage; when: string } | null {
  if (scrub?.lastPass?.usage) return { usage: scrub.lastPass.usage, when: `as of pass ${scrub.lastPass.pass ?? "?"}` };
  if (scrub?.usage && Object.keys(scrub.usage).length > 0) return { usage: scrub.usage, when: "counted so far by the first pass" };
  return null;
}

function renderNodeTable(el: HTMLElement, nodes: NodeInfo[], stored: { usage: Usage; when: string } | null): void {
  const healthy = nodes.filter((n) => n.state === "closed").length;
  const most = Math.max(1, ...nodes.map((n) => stored?.usage[n.id ?? ""]?.bytes ?? 0));
  mount(
    el,
    h("p", null, `${healthy} of ${nodes.length} nodes healthy.${stored ? ` What each stores: ${stored.when} of the scrub's walk.` : ""}`),
    h(
      "div",
      { class: "node-grid" },
      nodes.map((n) =>
        h(
          "article",
          { class: `node state-${n.state ?? "unknown"}`, "aria-label": `Node ${n.id ?? "?"}` },
          h(
            "header",
            null,
            h("span", { class: "dot", "aria-hidden": "true" }),
            h("strong", null, n.id ?? "?"),
            h("span", { class: "tag" }, n.kind ?? "?"),
            n.draining ? h("span", { class: "tag warn" }, "draining") : null,
          ),
          h("p", { class: "node-state" }, STATE_TEXT[n.state ?? ""] ?? n.state ?? "Unknown"),
          stored
            ? h("progress", { max: most, value: stored.usage[n.id ?? ""]?.bytes ?? 0, "aria-label": `What ${n.id ?? "?"} stores, against the fullest node` })
            : null,
          h(
            "dl",
            { class: "kv compact" },
            h("dt", null, "Stores"),
            h("dd", null, stored ? storedText(stored.usage[n.id ?? ""]) : "—"),
            h("dt", null, "Latency"),
            h("dd", null, typeof n.latencyMs === "number" ? `${Math.round(n.latencyMs)} ms` : "—"),
            h("dt", null, "Requests"),
            h("dd", null, typeof n.requests === "number" ? n.requests.toLocaleString() : "—"),
            h("dt", null, "Errors"),
            h("dd", null, typeof n.errors === "number" ? n.errors.toLocaleString() : "—"),
            h("dt", null, "Failures in a row"),
            h("dd", null, typeof n.consecutiveFailures === "number" ? String(n.consecutiveFailures) : "—"),
          ),
          n.lastError ? h("p", { class: "small error-text" }, `Last error${n.lastErrorAt ? ` (${humanDate(n.lastErrorAt)})` : ""}: ${n.lastError}`) : null,
        ),
      ),
    ),
  );
}

/** One line on the block cache: off, or how many reads it served and what it holds. */
function cacheLine(c: CacheInfo | undefined): HTMLElement {
  if (!c?.on) return h("p", { class: "muted", id: "cache-status" }, "Block cache: off. Every read goes to the nodes.");
  const lookups = (c.hits ?? 0) + (c.misses ?? 0);
  const ratio = lookups
    ? `${Math.round((100 * (c.hits ?? 0)) / lookups)}% of reads served from it (${(c.hits ?? 0).toLocaleString()} of ${lookups.toLocaleString()}), ${humanSize(c.bytesServed ?? 0)} in all`
    : "no reads yet";
  const store = c.store ? `; it holds ${humanSize(c.store.bytes ?? 0)} of ${humanSize(c.store.capacity ?? 0)}` : "";
  return h("p", { id: "cache-status" }, `Block cache: ${ratio}${store}.`);
}

function storedText(u: { files?: number; bytes?: number } | undefined): string {
  if (!u?.files) return "nothing";
  return `${u.files.toLocaleString()} shard file${u.files === 1 ? "" : "s"} · ${humanSize(u.bytes ?? 0)}`;
}

/** Rebalancing: what the walk found misplaced and moved, and a button that runs shallow steps until a pass finds nothing to move. */
function renderRebalance(app: App, scrub: ScrubView | undefined): HTMLElement {
  const out = h("p", { role: "status", id: "rebalance-status" }, rebalanceText(scrub));
  const button = h("button", { type: "button" }, "Rebalance now");
  button.addEventListener("click", async () => {
    button.disabled = true;
    const s3 = app.s3.forOneAction();
    try {
      for (let step = 1; ; step++) {
        const r = await s3.admin<{ run?: { passCompleted?: boolean }; status?: ScrubView }>("POST", "scrub", { mode: "shallow", "max-objects": "2000" });
        out.textContent = `Step ${step}: ${rebalanceText(r?.status)}`;
        const last = r?.status?.lastPass?.counters;
        if (r?.run?.passCompleted && (last?.shardsMisplaced ?? 0) === 0) break;
      }
      await renderNodes(app);
    } catch (e) {
      out.textContent = messageOf(e);
    } finally {
      button.disabled = false;
    }
  });
  return h("div", null, out, button);
}

function rebalanceText(scrub: ScrubView | undefined): string {
  const c = scrub?.current;
  const last = scrub?.lastPass?.counters;
  const now =
    scrub?.cursor && c
      ? `This pass so far: ${c.objectsChecked ?? 0} objects checked, ${c.shardsMisplaced ?? 0} shard files misplaced, ${c.shardsMoved ?? 0} moved (${humanSize(c.bytesRebuilt ?? 0)} written). `
      : "";
  const before = last
    ? `Last pass: ${last.shardsMisplaced ?? 0} shard files misplaced, ${last.shardsMoved ?? 0} moved${(last.shardsMisplaced ?? 0) === 0 ? ": every shard file is where placement puts it." : "."}`
    : "No pass of the walk has finished yet.";
  return now + before;
}

function renderQueue(el: HTMLElement, status: HealStatus, app: App): void {
  const pending = status.queue?.pending;
  const objects = status.queue?.objects ?? [];
  const scrub = status.scrub;
  mount(
    el,
    h("h3", null, "Waiting for heal"),
    typeof pending === "number"
      ? h("p", null, pending === 0 ? "No objects are waiting for heal." : `${pending} object${pending === 1 ? "" : "s"} waiting for heal.`)
      : notAvailable("its heal queue"),
    objects.length
      ? h(
          "table",
          { class: "table" },
          h(
            "thead",
            null,
            h("tr", null, h("th", { scope: "col" }, "Object"), h("th", { scope: "col" }, "Reason"), h("th", { scope: "col", class: "hide-narrow" }, "Since")),
          ),
          h(
            "tbody",
            null,
            objects.map((o) =>
              h(
                "tr",
                null,
                h("td", { class: "mono" }, `${o.bucket ?? "?"}/${o.key ?? "?"}`),
                h("td", null, o.reason ?? "—"),
                h("td", { class: "hide-narrow" }, o.since !== undefined ? humanDate(new Date(o.since)) : "—"),
              ),
            ),
          ),
        )
      : null,
    h("h3", null, "Rebalancing"),
    renderRebalance(app, scrub as ScrubView | undefined),
    h("h3", null, "Scrub"),
    scrub && typeof scrub === "object" ? scrubSummary(scrub as ScrubStatus) : notAvailable("scrub progress"),
  );
}

/** What the scrub status says that a person reads (the CLI's `status` says the same). */
interface ScrubStatus extends ScrubView {
  running?: boolean;
  settings?: { mode?: string };
  cursor?: { bucket?: string; after?: string | null } | null;
  lastRun?: {
    finished?: string;
    trigger?: string;
    mode?: string;
    stoppedBy?: string;
    counters?: { objectsChecked?: number; badShards?: number; shardsRebuilt?: number };
  } | null;
  lastErrors?: unknown[];
}

/** The scrub in four lines, and every counter it keeps folded away under them. */
function scrubSummary(scrub: ScrubStatus): HTMLElement {
  const when = (iso: string | undefined) => (iso ? humanDate(new Date(iso)) : "—");
  const run = scrub.lastRun;
  const pass = scrub.lastPass;
  const errors = Array.isArray(scrub.lastErrors) ? scrub.lastErrors.length : 0;
  return h(
    "div",
    { id: "scrub-summary" },
    h(
      "dl",
      { class: "kv compact" },
      h("dt", null, "Pass"),
      h(
        "dd",
        null,
        `${scrub.pass ?? 0}${scrub.running ? " (running now)" : ""}, ${scrub.settings?.mode ?? "?"}${scrub.cursor ? `, at ${scrub.cursor.bucket ?? "?"}/${scrub.cursor.after ?? ""}` : ""}`,
      ),
      h("dt", null, "Last run"),
      h(
        "dd",
        null,
        run
          ? `${when(run.finished)}: ${run.counters?.objectsChecked ?? 0} objects checked, ${run.counters?.badShards ?? 0} bad shard files, ${run.counters?.shardsRebuilt ?? 0} rebuilt`
          : "none yet",
      ),
      h("dt", null, "Last full pass"),
      h("dd", null, pass ? `#${pass.pass ?? "?"} finished ${when(pass.finished)}: ${pass.counters?.objectsChecked ?? 0} objects` : "none finished yet"),
      h("dt", null, "Errors"),
      h("dd", null, errors === 0 ? "none recently" : `${errors} recent (in the counters below)`),
    ),
    h("details", null, h("summary", null, "Every counter"), generic(scrub)),
  );
}

const label = (k: string) =>
  k
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .replace(/\bMi B\b|\bMib\b/g, "MiB")
    .replace(/^./, (c) => c.toUpperCase());

/** Any JSON value as readable text: objects as nested name/value lists, time stamps as dates. */
function generic(v: unknown, key = ""): HTMLElement | string {
  if (v === null || v === undefined) return "—";
  if (Array.isArray(v))
    return v.length === 0
      ? "none"
      : h(
          "ul",
          { class: "plain" },
          v.slice(0, 20).map((x) => h("li", null, generic(x))),
        );
  if (typeof v === "object") {
    return h(
      "dl",
      { class: "kv compact" },
      Object.entries(v as Record<string, unknown>).flatMap(([k, x]) => [h("dt", null, label(k)), h("dd", null, generic(x, k))]),
    );
  }
  if (typeof v === "number" && /(At|Started|Finished|Time|since)$/i.test(key) && v > 1e12) return humanDate(v);
  if (typeof v === "number") return v.toLocaleString();
  return String(v);
}

function renderHealForm(app: App, el: HTMLElement): void {
  const bucket = h("select", { id: "heal-bucket" }, h("option", { value: "" }, "Loading buckets…"));
  const prefix = h("input", { id: "heal-prefix", placeholder: "optional", spellcheck: false });
  const out = h("div", { role: "status", class: "heal-out" });
  const button = h("button", { type: "submit", class: "primary" }, "Start heal");
  void app.s3.listBuckets().then(
    (bs) => mount(bucket, bs.length ? bs.map((b) => h("option", { value: b.name }, b.name)) : h("option", { value: "" }, "No buckets")),
    (err) => mount(out, h("p", { class: "error" }, messageOf(err))),
  );
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!bucket.value) return;
    button.disabled = true;
    try {
      await healBucket(app, bucket, prefix, out);
    } finally {
      button.disabled = false;
    }
  };
  mount(
    el,
    h("h3", null, "Heal a bucket"),
    h(
      "p",
      { class: "muted small" },
      "Checks that every shard file of every object is on its node at its full length, and rebuilds those that are not, parity included.",
    ),
    h(
      "form",
      { class: "inline-form", onsubmit: submit },
      h("div", { class: "field" }, h("label", { for: "heal-bucket" }, "Bucket"), bucket),
      h("div", { class: "field" }, h("label", { for: "heal-prefix" }, "Prefix"), prefix),
      button,
    ),
    out,
  );
}

interface HealTotals {
  objectsChecked: number;
  shardsRebuilt: number;
  shardsFailed: number;
  failed: { key: string; error: string }[];
}

/** Heals the chosen bucket (and prefix) a page of objects at a time, showing the running totals in `out`. */
async function healBucket(app: App, bucket: HTMLSelectElement, prefix: HTMLInputElement, out: HTMLElement): Promise<void> {
  const totals: HealTotals = { objectsChecked: 0, shardsRebuilt: 0, shardsFailed: 0, failed: [] };
  showHealTotals(out, totals, false);
  const s3 = app.s3.forOneAction();
  try {
    let startAfter: string | null = null;
    for (;;) {
      const report: HealReport | null = await s3.admin<HealReport>("POST", "heal", {
        bucket: bucket.value,
        prefix: prefix.value || undefined,
        "start-after": startAfter ?? undefined,
      });
      if (!report) {
        mount(out, notAvailable("healing"));
        break;
      }
      totals.objectsChecked += report.objectsChecked ?? 0;
      totals.shardsRebuilt += report.shardsRebuilt ?? 0;
      totals.shardsFailed += report.shardsFailed ?? 0;
      totals.failed.push(...(report.objectsFailed ?? []));
      startAfter = report.next ?? null;
      showHealTotals(out, totals, startAfter === null);
      if (startAfter === null) break;
    }
  } catch (err) {
    mount(out, h("p", { class: "error" }, messageOf(err)));
  }
}

function showHealTotals(out: HTMLElement, totals: HealTotals, done: boolean): void {
  mount(
    out,
    h(
      "p",
      null,
      `${done ? "Done" : "Healing…"} ${totals.objectsChecked} object${totals.objectsChecked === 1 ? "" : "s"} checked, ${totals.shardsRebuilt} shard file${totals.shardsRebuilt === 1 ? "" : "s"} rebuilt, ${totals.shardsFailed} failed.`,
    ),
    totals.failed.length
      ? h(
          "ul",
          { class: "small" },
          totals.failed.slice(0, 20).map((f) => h("li", null, `${f.key}: ${f.error}`)),
        )
      : null,
  );
}
