// The bench's chart (bench/lib/chart.mjs): sample figures in, an SVG out that is well-formed XML
// (the gateway's own strict parser reads it), with a bar per server, operation and measure whose
// length follows its value, and every value, name and unit written out.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseXml, type XmlElement } from "../../worker/src/api/format/xml-parse";
// @ts-expect-error: plain JavaScript without declarations (its shape is declared below)
import * as chartModule from "../../bench/lib/chart.mjs";

type Summary = { throughput: number | null; cpuMsPerOp: number | null };
type Figures = {
  cases: { id: string; label: string; unit: string }[];
  targets: { id: string; label: string }[];
  results: Record<string, Record<string, Record<string, Summary>>>;
  code?: { commit: string; changed: boolean };
  mode?: { pinned: boolean; serverCpus?: string; clientCpus?: string };
  date?: string;
  machine?: { cpus: number };
};
const { benchChart, chartFromBench } = chartModule as {
  benchChart(f: Omit<Figures, "code" | "mode" | "date" | "machine"> & { inFlight: number; title: string; notes?: string[] }): string;
  chartFromBench(f: Figures, inFlight?: number): string;
};

const CASES = [
  { id: "get-1m", label: "GET 1 MiB", unit: "MiB/s" },
  { id: "head", label: "HEAD", unit: "req/s" },
  { id: "list", label: "LIST <pages> & more", unit: "obj/s" },
];
const TARGETS = [
  { id: "workerd", label: "shardgate (npm start)" },
  { id: "dev", label: "shardgate (wrangler dev)" },
  { id: "passthrough", label: "pass-through (workerd)" },
  { id: "minio", label: 'MinIO "4+2"' },
];
// At 1 in flight other figures than at 4, so the chart is seen to draw the column it is asked for.
const at4: Record<string, Record<string, Summary>> = {
  "get-1m": {
    workerd: { throughput: 260, cpuMsPerOp: 3.06 },
    dev: { throughput: 52, cpuMsPerOp: 17 },
    passthrough: { throughput: 659, cpuMsPerOp: 0.97 },
    minio: { throughput: 518, cpuMsPerOp: 1.51 },
  },
  head: {
    workerd: { throughput: 1266, cpuMsPerOp: 0.56 },
    dev: { throughput: 119, cpuMsPerOp: 6 },
    passthrough: { throughput: 4057, cpuMsPerOp: 0.15 },
    minio: { throughput: 2080, cpuMsPerOp: null },
  },
  list: {
    workerd: { throughput: 211691, cpuMsPerOp: 3.92 },
    dev: { throughput: 79857, cpuMsPerOp: 20 },
    passthrough: { throughput: 908829, cpuMsPerOp: 0.78 },
    minio: { throughput: 16661, cpuMsPerOp: 122.4 },
  },
};
const at1 = Object.fromEntries(
  Object.entries(at4).map(([c, row]) => [c, Object.fromEntries(Object.keys(row).map((t) => [t, { throughput: 7, cpuMsPerOp: 9 }]))]),
);
const FIGURES: Figures = {
  date: "2026-11-25",
  machine: { cpus: 2 },
  code: { commit: "2dbf8d8", changed: false },
  mode: { pinned: true, serverCpus: "0", clientCpus: "1" },
  targets: TARGETS,
  cases: CASES,
  results: Object.fromEntries(CASES.map((c) => [c.id, { 1: at1[c.id], 4: at4[c.id], 16: at1[c.id] }])),
};

/** Every text in the document, an element's own text joined with its children's. */
function texts(el: XmlElement): string[] {
  const own = el.name === "text" ? [[el.text, ...el.children.map((c) => c.text)].join("")] : [];
  return [...own, ...el.children.flatMap(texts)];
}

/** The bars: their attributes, read from the source (the parser checks their syntax but keeps none). */
function bars(svg: string): { target: string; metric: string; value: number | null; width: number }[] {
  return [...svg.matchAll(/<rect class="bar" ([^>]*)>/g)].map(([, attrs]) => {
    const get = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(attrs)?.[1] ?? "";
    return {
      target: get("data-target"),
      metric: get("data-metric"),
      value: get("data-value") === "" ? null : Number(get("data-value")),
      width: Number(get("width")),
    };
  });
}

/** The bars of one operation's group. */
function group(svg: string, caseId: string) {
  const start = svg.indexOf(`<g class="case" data-case="${caseId}">`);
  expect(start).toBeGreaterThan(0);
  return bars(svg.slice(start, svg.indexOf("</g>", start)));
}

describe("the bench chart", () => {
  const scratch = mkdtempSync(join(tmpdir(), "shardgate-chart-"));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));
  const svg = chartFromBench(FIGURES);
  const root = parseXml(svg);
  const all = texts(root);

  it("is a well-formed SVG document on a background of its own", () => {
    expect(root.name).toBe("svg");
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg).toMatch(/<rect width="100%" height="100%" fill="#FFFFFF"\/>/);
    expect(root.children.map((c) => c.name)).toEqual(expect.arrayContaining(["title", "desc", "rect", "text", "g", "line"]));
  });

  it("draws shardgate, MinIO and the pass-through, a bar each per operation and measure", () => {
    const drawn = bars(svg);
    expect(drawn).toHaveLength(CASES.length * 3 * 2);
    for (const c of CASES) {
      const g = group(svg, c.id);
      expect(g.map((b) => b.target)).toEqual(["workerd", "minio", "passthrough", "workerd", "minio", "passthrough"]);
      expect(g.map((b) => b.metric)).toEqual(["throughput", "throughput", "throughput", "cpuMsPerOp", "cpuMsPerOp", "cpuMsPerOp"]);
    }
    // wrangler dev is not a production server: not in the chart.
    expect(all.join("\n")).not.toContain("wrangler dev");
    expect(drawn.some((b) => b.target === "dev")).toBe(false);
  });

  it("draws the figures at 4 in flight, each bar to the scale of its group's largest", () => {
    for (const c of CASES) {
      for (const metric of ["throughput", "cpuMsPerOp"] as const) {
        const g = group(svg, c.id).filter((b) => b.metric === metric);
        expect(g.map((b) => b.value)).toEqual(g.map((b) => at4[c.id][b.target][metric]));
        const known = g.filter((b) => b.value !== null) as { value: number; width: number }[];
        const largest = known.reduce((a, b) => (b.value > a.value ? b : a));
        for (const b of known) expect(b.width).toBeCloseTo((b.value / largest.value) * largest.width, 0);
        expect(largest.width).toBeGreaterThan(200);
      }
    }
    // The same longest bar in every group: one scale per group, not one across groups.
    const longest = CASES.map((c) => Math.max(...group(svg, c.id).map((b) => b.width)));
    expect(new Set(longest).size).toBe(1);
  });

  it("writes every value with its unit, the operations, the servers and the axes' meaning", () => {
    for (const label of ["260 MiB/s", "518 MiB/s", "659 MiB/s", "1,266 req/s", "4,057 req/s", "211,691 obj/s", "908,829 obj/s"]) expect(all).toContain(label);
    for (const label of ["3.06 ms", "0.97 ms", "0.56 ms", "0.15 ms", "3.92 ms", "122 ms"]) expect(all).toContain(label);
    // A missing figure: a dash and no bar.
    expect(all).toContain("–");
    expect(group(svg, "head").find((b) => b.target === "minio" && b.metric === "cpuMsPerOp")).toMatchObject({ value: null, width: 0 });
    // Names with markup characters come back as they were (escaped in the source).
    for (const name of ["GET 1 MiB", "HEAD", "LIST <pages> & more", "shardgate (npm start)", 'MinIO "4+2"', "pass-through (workerd)"])
      expect(all).toContain(name);
    expect(svg).toContain("LIST &lt;pages&gt; &amp; more");
    expect(all).toContain("Throughput(higher is better)");
    expect(all).toContain("Server CPU per operation(lower is better)");
    expect(all.filter((t) => t.endsWith("as a share of each operation's largest"))).toHaveLength(2);
    expect(all.filter((t) => t === "0%" || t === "50%" || t === "100%")).toHaveLength(6);
  });

  it("says which run it shows", () => {
    const notes = all.find((t) => t.includes("commit"));
    expect(notes).toContain("2026-11-25");
    expect(notes).toContain("commit 2dbf8d8");
    expect(notes).toContain("one core each");
    expect(notes).toContain("4 requests in flight");
    const unpinned = texts(parseXml(chartFromBench({ ...FIGURES, mode: { pinned: false }, code: { commit: "abc1234", changed: true } })));
    expect(unpinned.find((t) => t.includes("commit"))).toMatch(/commit abc1234 \(with uncommitted changes\); unpinned \(servers and client share 2 CPUs\)/);
  });

  it("draws another column when asked, and refuses one that was not measured", () => {
    const one = chartFromBench(FIGURES, 1);
    expect(bars(one).every((b) => b.value === 7 || b.value === 9)).toBe(true);
    expect(texts(parseXml(one)).find((t) => t.includes("commit"))).toContain("1 request in flight");
    expect(() => chartFromBench(FIGURES, 64)).toThrow(/no figures at 64 in flight/);
    expect(() => benchChart({ cases: CASES, targets: [], results: FIGURES.results, inFlight: 4, title: "t" })).toThrow(/no figures/);
  });

  it("draws from a file of the bench's --json figures", () => {
    const from = join(scratch, "results.json");
    writeFileSync(from, JSON.stringify(FIGURES));
    const out = join(scratch, "chart.svg");
    execFileSync(process.execPath, ["bench/lib/chart.mjs", "--from", from, "--out", out]);
    const printed = execFileSync(process.execPath, ["bench/lib/chart.mjs", "--from", from], { encoding: "utf8" });
    expect(printed).toBe(svg);
    expect(readFileSync(out, "utf8")).toBe(svg);
  });
});
