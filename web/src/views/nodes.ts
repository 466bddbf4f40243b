// Storage nodes (circuit-breaker state, latency, errors), objects waiting for heal, scrub progress,
// and a heal of a bucket (POST /_shardgate/admin/heal, batch after batch until `next` is null).
import { messageOf } from "../errors";
import type { App } from "../app";
import { h, humanDate, mount } from "../ui";

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

  const [n, q] = await Promise.allSettled([app.s3.admin<{ nodes?: NodeInfo[] }>("GET", "nodes"), app.s3.admin<HealStatus>("GET", "heal")]);
  if (n.status === "rejected") mount(nodes, h("p", { class: "error" }, messageOf(n.reason)));
  else if (!n.value || !Array.isArray(n.value.nodes)) mount(nodes, notAvailable("node health"));
  else renderNodeTable(nodes, n.value.nodes);

  if (q.status === "rejected") mount(queue, h("p", { class: "error" }, messageOf(q.reason)));
  else if (!q.value) mount(queue, notAvailable("its heal queue"));
  else renderQueue(queue, q.value);
}

function renderNodeTable(el: HTMLElement, nodes: NodeInfo[]): void {
  const healthy = nodes.filter((n) => n.state === "closed").length;
  mount(
    el,
    h("p", null, `${healthy} of ${nodes.length} nodes healthy.`),
    h(
      "div",
      { class: "node-grid" },
      nodes.map((n) =>
        h(
          "article",
          { class: `node state-${n.state ?? "unknown"}`, "aria-label": `Node ${n.id ?? "?"}` },
          h("header", null, h("span", { class: "dot", "aria-hidden": "true" }), h("strong", null, n.id ?? "?"), h("span", { class: "tag" }, n.kind ?? "?")),
          h("p", { class: "node-state" }, STATE_TEXT[n.state ?? ""] ?? n.state ?? "Unknown"),
          h(
            "dl",
            { class: "kv compact" },
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

function renderQueue(el: HTMLElement, status: HealStatus): void {
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
    h("h3", null, "Scrub"),
    scrub && typeof scrub === "object" ? generic(scrub) : notAvailable("scrub progress"),
  );
}

const label = (k: string) => k.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/^./, (c) => c.toUpperCase());

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
      {
        class: "inline-form",
        onsubmit: async (e: Event) => {
          e.preventDefault();
          if (!bucket.value) return;
          button.disabled = true;
          const totals = { objectsChecked: 0, shardsRebuilt: 0, shardsFailed: 0, failed: [] as { key: string; error: string }[] };
          const show = (done: boolean) =>
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
          show(false);
          try {
            let startAfter: string | null = null;
            for (;;) {
              const report: HealReport | null = await app.s3.admin<HealReport>("POST", "heal", {
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
              show(startAfter === null);
              if (startAfter === null) break;
            }
          } catch (err) {
            mount(out, h("p", { class: "error" }, messageOf(err)));
          } finally {
            button.disabled = false;
          }
        },
      },
      h("div", { class: "field" }, h("label", { for: "heal-bucket" }, "Bucket"), bucket),
      h("div", { class: "field" }, h("label", { for: "heal-prefix" }, "Prefix"), prefix),
      button,
    ),
    out,
  );
}
