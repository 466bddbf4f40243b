// The bench's figures as a picture: an SVG of grouped horizontal bars, one group per operation and
// one bar per server, for throughput and for the server's CPU time per operation, at one number of
// requests in flight. bench/gateway-bench.mjs writes it to docs/bench-chart.svg after a full run;
// `node bench/lib/chart.mjs --from results.json [--out FILE] [--in-flight N]` draws it from the
// figures `npm run bench -- --json` printed (stdout when --out is not given).
//
// Throughput is counted in different units per operation (MiB/s, requests/s, objects/s) and CPU
// per operation spans three orders of magnitude (0.1 ms for a HEAD, 100 ms for a 64 MiB GET), so
// each group's bars are drawn to the scale of that group's largest value, and every bar carries
// its value with its unit. No dependencies: the SVG is written as text.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

/** The servers drawn, in this order, when the figures hold them: shardgate, MinIO, the runtime's floor. */
export const CHART_TARGETS = ["workerd", "minio", "passthrough"];

/** A colour per server (Okabe-Ito, told apart with colour-blindness too); others take the rest in turn. */
const COLORS = { workerd: "#D55E00", minio: "#0072B2", passthrough: "#8C8C8C" };
const SPARE_COLORS = ["#009E73", "#CC79A7", "#E69F00", "#56B4E9"];

const FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Helvetica, Arial, sans-serif";
const INK = "#1F2328";
const MUTED = "#57606A";
const RULE = "#D0D7DE";

// Geometry, in SVG user units (pixels at 100%).
const WIDTH = 1000;
const MARGIN = 24;
const LABEL_WIDTH = 190; // the operations' names, left of the bars
const PANEL_GAP = 36;
const VALUE_ROOM = 92; // right of the longest bar, for its value
const BAR = 15;
const BAR_GAP = 3;
const GROUP_GAP = 14;

/**
 * The chart as SVG text.
 * @param {object} figures
 * @param {{ id: string, label: string, unit: string }[]} figures.cases the operations, in order
 * @param {{ id: string, label: string }[]} figures.targets the servers, in order (those without figures are left out)
 * @param {Record<string, Record<string, Record<string, { throughput: number | null, cpuMsPerOp: number | null }>>>} figures.results case id → in flight → target id → figures
 * @param {number} figures.inFlight which requests-in-flight column to draw
 * @param {string} figures.title
 * @param {string[]} [figures.notes] lines under the title (what ran, where, when)
 * @returns {string}
 */
export function benchChart({ cases, targets, results, inFlight, title, notes = [] }) {
  const rows = cases.filter((c) => results[c.id]?.[inFlight]);
  const shown = targets.filter((t) => rows.some((c) => results[c.id][inFlight][t.id]));
  if (rows.length === 0 || shown.length === 0) throw new Error(`chart: no figures at ${inFlight} in flight`);
  const color = new Map(shown.map((t, i) => [t.id, COLORS[t.id] ?? SPARE_COLORS[i % SPARE_COLORS.length]]));

  const panelWidth = (WIDTH - 2 * MARGIN - LABEL_WIDTH - PANEL_GAP) / 2;
  const barRoom = panelWidth - VALUE_ROOM;
  const panels = [
    { x: MARGIN + LABEL_WIDTH, title: "Throughput", hint: "higher is better", key: "throughput", text: (v, c) => `${number(v)} ${c.unit}` },
    {
      x: MARGIN + LABEL_WIDTH + panelWidth + PANEL_GAP,
      title: "Server CPU per operation",
      hint: "lower is better",
      key: "cpuMsPerOp",
      text: (v) => `${cpu(v)} ms`,
    },
  ];

  const out = [];
  let y = MARGIN + 20;
  out.push(text(MARGIN, y, title, { size: 20, weight: 600 }));
  for (const line of notes) {
    y += 20;
    out.push(text(MARGIN, y, line, { size: 13, fill: MUTED }));
  }

  // The legend: a swatch and a name per server.
  y += 28;
  let x = MARGIN;
  for (const t of shown) {
    out.push(`<rect x="${x}" y="${y - 11}" width="14" height="14" rx="2" fill="${color.get(t.id)}"/>`);
    out.push(text(x + 20, y, t.label, { size: 13 }));
    x += 20 + textWidth(t.label, 13) + 28;
  }

  // The panels' headings.
  y += 34;
  for (const p of panels)
    out.push(
      `<text x="${round(p.x)}" y="${y}" font-size="15" font-weight="600" fill="${INK}">${esc(p.title)}<tspan dx="8" font-size="13" font-weight="400" fill="${MUTED}">(${esc(p.hint)})</tspan></text>`,
    );
  y += 12;

  // One group per operation: its name on the left, a bar per server in each panel.
  const groupHeight = shown.length * (BAR + BAR_GAP) - BAR_GAP;
  const top = y;
  for (const [g, c] of rows.entries()) {
    const gy = top + GROUP_GAP + g * (groupHeight + GROUP_GAP);
    if (g > 0)
      out.push(`<line x1="${MARGIN}" y1="${gy - GROUP_GAP / 2}" x2="${WIDTH - MARGIN}" y2="${gy - GROUP_GAP / 2}" stroke="${RULE}" stroke-width="1"/>`);
    const row = results[c.id][inFlight];
    out.push(`<g class="case" data-case="${attr(c.id)}">`);
    out.push(text(MARGIN, gy + groupHeight / 2 + 5, c.label, { size: 13, weight: 600 }));
    for (const p of panels) {
      const largest = Math.max(0, ...shown.map((t) => figureOf(row[t.id], p.key) ?? 0));
      for (const [i, t] of shown.entries()) {
        const v = figureOf(row[t.id], p.key);
        const by = gy + i * (BAR + BAR_GAP);
        const length = v === null || largest === 0 ? 0 : Math.max(1, (v / largest) * barRoom);
        const label = v === null ? "–" : p.text(v, c);
        out.push(
          `<rect class="bar" data-target="${attr(t.id)}" data-metric="${p.key}" data-value="${v ?? ""}" x="${p.x}" y="${by}" width="${round(length)}" height="${BAR}" fill="${color.get(t.id)}"><title>${esc(`${t.label}, ${c.label}: ${label}`)}</title></rect>`,
        );
        out.push(text(p.x + length + 6, by + BAR - 3, label, { size: 12, fill: INK }));
      }
    }
    out.push("</g>");
  }
  const bottom = top + GROUP_GAP + rows.length * (groupHeight + GROUP_GAP) - GROUP_GAP / 2;

  // The axes: a baseline per panel, its scale and what it measures.
  for (const p of panels) {
    out.push(`<line x1="${p.x}" y1="${top}" x2="${p.x}" y2="${bottom}" stroke="${MUTED}" stroke-width="1"/>`);
    out.push(`<line x1="${p.x}" y1="${bottom}" x2="${p.x + barRoom}" y2="${bottom}" stroke="${MUTED}" stroke-width="1"/>`);
    for (const [f, anchor] of [
      [0, "start"],
      [0.5, "middle"],
      [1, "end"],
    ]) {
      const tx = p.x + f * barRoom;
      out.push(`<line x1="${round(tx)}" y1="${bottom}" x2="${round(tx)}" y2="${bottom + 4}" stroke="${MUTED}" stroke-width="1"/>`);
      out.push(text(tx, bottom + 17, `${f * 100}%`, { size: 11, fill: MUTED, anchor }));
    }
    out.push(text(p.x + barRoom / 2, bottom + 35, `${p.title}, as a share of each operation's largest`, { size: 12, fill: MUTED, anchor: "middle" }));
  }
  const height = bottom + 35 + MARGIN;

  const summary = `${title}. ${rows.length} operations, ${shown.map((t) => t.label).join(", ")}: throughput and server CPU per operation at ${inFlight} in flight.`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${round(height)}" viewBox="0 0 ${WIDTH} ${round(height)}" role="img" aria-label="${attr(summary)}" font-family="${attr(FONT)}">`,
    `<title>${esc(title)}</title>`,
    `<desc>${esc(summary)}</desc>`,
    // A background of its own: the chart reads the same in a light and a dark page.
    `<rect width="100%" height="100%" fill="#FFFFFF"/>`,
    ...out,
    "</svg>",
    "",
  ].join("\n");
}

/**
 * The chart of what `npm run bench -- --json` prints (bench/gateway-bench.mjs `figures`): the
 * shardgate, MinIO and pass-through columns at `inFlight` (4 by default, else the first measured),
 * with the commit, the mode and the date under the title.
 */
export function chartFromBench(figures, inFlight) {
  const measured = Object.keys(Object.values(figures.results)[0] ?? {}).map(Number);
  const at = inFlight ?? (measured.includes(4) ? 4 : measured[0]);
  const targets = CHART_TARGETS.map((id) => figures.targets.find((t) => t.id === id)).filter(Boolean);
  const mode = figures.mode?.pinned
    ? figures.mode.serverCpus === "0"
      ? "one core each (--pin: every server on CPU 0, the client on CPU 1)"
      : `servers on CPUs ${figures.mode.serverCpus}, the client on CPU ${figures.mode.clientCpus}`
    : `unpinned (servers and client share ${figures.machine?.cpus ?? "the"} CPUs)`;
  const when = [figures.date, figures.code && `commit ${figures.code.commit}${figures.code.changed ? " (with uncommitted changes)" : ""}`]
    .filter(Boolean)
    .join(", ");
  return benchChart({
    cases: figures.cases,
    targets,
    results: figures.results,
    inFlight: at,
    title: "shardgate, MinIO and a bare Worker (npm run bench)",
    notes: [
      `${when}; ${mode}; ${at} ${at === 1 ? "request" : "requests"} in flight.`,
      "Bars in each group are drawn to the scale of its largest value; the values carry their units.",
    ],
  });
}

function figureOf(summary, key) {
  const v = summary?.[key];
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : null;
}

/** Throughput as the bench's tables print it: whole from 10 on (thousands separated), one decimal below. */
function number(n) {
  return n >= 10 ? Math.round(n).toLocaleString("en-US") : n.toFixed(1);
}

/** CPU milliseconds to three figures, as the bench's tables print them. */
function cpu(ms) {
  return ms >= 100 ? Math.round(ms).toLocaleString("en-US") : ms.toFixed(ms >= 10 ? 1 : 2);
}

function round(n) {
  return Math.round(n * 10) / 10;
}

/** Roughly how wide `s` is in the chart's sans-serif font (for placing what follows it). */
function textWidth(s, size) {
  return s.length * size * 0.55;
}

function text(x, y, s, { size, weight = 400, fill = INK, anchor = "start" }) {
  const w = weight === 400 ? "" : ` font-weight="${weight}"`;
  const a = anchor === "start" ? "" : ` text-anchor="${anchor}"`;
  return `<text x="${round(x)}" y="${round(y)}" font-size="${size}"${w}${a} fill="${fill}">${esc(s)}</text>`;
}

function esc(s) {
  return String(s).replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function attr(s) {
  return esc(s).replaceAll('"', "&quot;");
}

// `node bench/lib/chart.mjs --from results.json [--out FILE] [--in-flight N]`
if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const arg = (name) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const from = arg("from");
  if (!from) {
    console.error("usage: node bench/lib/chart.mjs --from results.json [--out FILE] [--in-flight N]");
    process.exit(2);
  }
  const inFlight = arg("in-flight");
  const svg = chartFromBench(JSON.parse(readFileSync(from, "utf8")), inFlight === undefined ? undefined : Number(inFlight));
  const out = arg("out");
  if (out) writeFileSync(out, svg);
  else process.stdout.write(svg);
}
