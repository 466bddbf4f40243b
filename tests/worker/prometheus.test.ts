// GET /_shardgate/metrics read as Prometheus reads it: a strict parser of the text format (0.0.4)
// checks a real scrape line by line (HELP and TYPE before samples, names and labels, escapes,
// values, histograms' buckets in order and cumulative with +Inf equal to _count); the request
// duration histogram counts a request; histograms counted by two isolates add up; the gauges;
// and every metric docs/grafana-dashboard.json queries is in the scrape.
import { exports } from "cloudflare:workers";
import { describe, expect, inject, it, vi } from "vitest";
import dashboard from "../../docs/grafana-dashboard.json";
import workerPkg from "../../worker/package.json";
import { DURATION_BUCKETS, Metrics, type MetricsSink, renderPrometheus } from "../../worker/src/observability/metrics";
import { METRICS_TOKEN } from "../shared/credentials";
import { GATEWAY, s3ok } from "./signed";

vi.setConfig({ testTimeout: 30_000 }); // the first request of an isolate starts its scheduler; 2 shared cores

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  type: string;
  help: string;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

/** A label set's text `{a="x",b="y"}` read strictly: escapes \\, \" and \n only, no trailing garbage. */
function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  let i = 0;
  while (i < text.length) {
    const eq = text.indexOf("=", i);
    if (eq < 0) throw new Error(`label without value: ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL.test(name) || name.startsWith("__")) throw new Error(`bad label name ${name}: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value: ${line}`);
    let value = "";
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === "\n") throw new Error(`raw newline in label value: ${line}`);
      if (text[j] !== "\\") {
        value += text[j];
        continue;
      }
      const next = text[++j];
      if (next === "\\") value += "\\";
      else if (next === '"') value += '"';
      else if (next === "n") value += "\n";
      else throw new Error(`bad escape \\${next}: ${line}`);
    }
    if (j >= text.length) throw new Error(`unterminated label value: ${line}`);
    labels[name] = value;
    i = j + 1;
    if (i < text.length) {
      if (text[i] !== ",") throw new Error(`expected , between labels: ${line}`);
      i++;
    }
  }
  return labels;
}

function parseValue(text: string, line: string): number {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value ${text}: ${line}`);
  return Number(text);
}

/** The family a sample's name belongs to (a histogram's _bucket, _sum and _count are its own). */
function familyOf(families: Map<string, Family>, name: string): Family | undefined {
  if (families.has(name)) return families.get(name);
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  const f = m ? families.get(m[1]) : undefined;
  return f && (f.type === "histogram" || f.type === "summary") ? f : undefined;
}

/** The Prometheus text format, strictly: throws on anything a scraper could misread. */
export function parsePrometheus(text: string): Map<string, Family> {
  if (!text.endsWith("\n")) throw new Error("the text must end with a newline");
  const families = new Map<string, Family>();
  const seen = new Set<string>();
  let current: Family | null = null;
  const done = new Set<string>(); // families whose samples ended (no family may come back)
  for (const line of text.slice(0, -1).split("\n")) {
    if (line === "") throw new Error("empty line");
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      if (!m) {
        if (/^# (HELP|TYPE)\b/.test(line)) throw new Error(`malformed ${line}`);
        continue; // a comment
      }
      const [, kind, name, rest] = m;
      if (!NAME.test(name)) throw new Error(`bad metric name ${name}`);
      if (done.has(name)) throw new Error(`${name} comes back after other families`);
      let f = families.get(name);
      if (!f) {
        if (current) done.add(current.name);
        f = { name, type: "untyped", help: "", samples: [] };
        families.set(name, f);
        current = f;
      }
      if (f.samples.length > 0) throw new Error(`${kind} for ${name} after its samples`);
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new Error(`bad type ${rest}`);
        f.type = rest;
      } else f.help = rest;
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)( -?\d+)?$/.exec(line);
    if (!m) throw new Error(`malformed sample: ${line}`);
    const [, name, , labelText = "", valueText] = m;
    const f = familyOf(families, name);
    if (!f) throw new Error(`sample ${name} without its family's TYPE: ${line}`);
    if (f !== current) throw new Error(`sample ${name} outside its family's block: ${line}`);
    const labels = parseLabels(labelText, line);
    const key = `${name}${JSON.stringify(Object.entries(labels).sort())}`;
    if (seen.has(key)) throw new Error(`duplicate series: ${line}`);
    seen.add(key);
    const value = parseValue(valueText, line);
    if (f.type === "counter" && !(value >= 0)) throw new Error(`negative counter: ${line}`);
    f.samples.push({ name, labels, value });
  }
  for (const f of families.values()) if (f.type === "histogram") checkHistogram(f);
  return families;
}

/** Per label set: le ascending, counts cumulative, +Inf last and equal to _count; a _sum. */
function checkHistogram(f: Family): void {
  const sets = new Map<string, { les: number[]; counts: number[]; sum?: number; count?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const id = JSON.stringify(Object.entries(rest).sort());
    const set = sets.get(id) ?? { les: [], counts: [] };
    sets.set(id, set);
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`${f.name}_bucket without le`);
      set.les.push(parseValue(le, le));
      set.counts.push(s.value);
    } else if (s.name === `${f.name}_sum`) set.sum = s.value;
    else if (s.name === `${f.name}_count`) set.count = s.value;
    else throw new Error(`${s.name} in histogram ${f.name}`);
  }
  for (const [id, set] of sets) {
    if (set.les.at(-1) !== Number.POSITIVE_INFINITY) throw new Error(`${f.name}${id}: no +Inf bucket last`);
    for (let i = 1; i < set.les.length; i++) {
      if (!(set.les[i] > set.les[i - 1])) throw new Error(`${f.name}${id}: le not ascending`);
      if (set.counts[i] < set.counts[i - 1]) throw new Error(`${f.name}${id}: buckets not cumulative`);
    }
    if (set.sum === undefined || set.count === undefined) throw new Error(`${f.name}${id}: _sum or _count missing`);
    if (set.count !== set.counts.at(-1)) throw new Error(`${f.name}${id}: _count ${set.count} is not the +Inf bucket ${set.counts.at(-1)}`);
  }
}

async function scrape(): Promise<{ text: string; families: Map<string, Family> }> {
  const res = await exports.default.fetch(`${GATEWAY}/_shardgate/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
  const text = await res.text();
  return { text, families: parsePrometheus(text) };
}

const sample = (families: Map<string, Family>, name: string, labels: Record<string, string> = {}) =>
  [...families.values()]
    .flatMap((f) => f.samples)
    .find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === Object.keys(labels).length);

describe("the strict parser", () => {
  it("refuses what a scraper could misread", () => {
    const ok = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 2\n';
    expect(parsePrometheus(ok).get("a_total")?.samples).toEqual([{ name: "a_total", labels: { x: "1" }, value: 2 }]);
    for (const bad of [
      "a_total 1\n", // no TYPE
      "# TYPE a_total counter\na_total 1", // no final newline
      "# TYPE a_total counter\na_total{x=1} 1\n", // unquoted
      '# TYPE a_total counter\na_total{x="\\t"} 1\n', // bad escape
      "# TYPE a_total counter\na_total 1\na_total 2\n", // duplicate
      "# TYPE a_total counter\na_total one\n",
      "# TYPE a_total counter\na_total -1\n",
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', // not cumulative
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', // no +Inf
      '# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', // +Inf is not _count
      "# TYPE a gauge\n# TYPE b gauge\na 1\n", // outside its block
    ]) {
      expect(() => parsePrometheus(bad), JSON.stringify(bad)).toThrow();
    }
  });
});

describe("GET /_shardgate/metrics", () => {
  it("parses strictly, with HELP and TYPE for every metric, and the histogram counts a request", async () => {
    const before = await scrape();
    const labels = { op: "ListBuckets" };
    const count0 = sample(before.families, "shardgate_request_duration_seconds_count", labels)?.value ?? 0;
    const inf0 = sample(before.families, "shardgate_request_duration_seconds_bucket", { ...labels, le: "+Inf" })?.value ?? 0;
    await s3ok("/");
    const after = await scrape();
    for (const f of after.families.values()) {
      expect(f.help, f.name).not.toBe("");
      expect(f.type, f.name).not.toBe("untyped");
    }
    expect(after.families.get("shardgate_request_duration_seconds")?.type).toBe("histogram");
    expect(sample(after.families, "shardgate_request_duration_seconds_count", labels)?.value).toBe(count0 + 1);
    expect(sample(after.families, "shardgate_request_duration_seconds_bucket", { ...labels, le: "+Inf" })?.value).toBe(inf0 + 1);
    const les = after.families
      .get("shardgate_request_duration_seconds")
      ?.samples.filter((s) => s.name.endsWith("_bucket") && s.labels.op === "ListBuckets")
      .map((s) => s.labels.le);
    expect(les).toEqual([...DURATION_BUCKETS.map(String), "+Inf"]);
    expect(sample(after.families, "shardgate_request_duration_seconds_sum", labels)?.value).toBeGreaterThanOrEqual(0);
  });

  it("labels what no route takes NotImplemented: no request, whatever its method and query, adds a series", async () => {
    for (const [method, path] of [
      ["PROPFIND", "/prom-b?acl"],
      ["MKCOL", "/prom-b/k?website"],
      ["GET", "/prom-b?inventory&x-made-up=1"],
    ])
      await (await exports.default.fetch(new Request(`${GATEWAY}${path}`, { method }))).arrayBuffer();
    const { text } = await scrape();
    for (const made of ["PROPFIND", "MKCOL", "BucketInventory", "ObjectWebsite"]) expect(text).not.toContain(made);
    const ops = new Set([...text.matchAll(/\bop="([^"]*)"/g)].map((m) => m[1]));
    expect(ops.has("NotImplemented")).toBe(true);
  });

  it("has the gauges: build info, readiness, every node up with its breaker, the heal queue", async () => {
    const { families } = await scrape();
    expect(sample(families, "shardgate_build_info", { version: workerPkg.version, core: inject("coreCrateVersion") })?.value).toBe(1);
    expect(sample(families, "shardgate_ready")?.value).toBe(1);
    for (const node of ["NODE_0", "NODE_1", "NODE_2", "NODE_3", "NODE_4", "NODE_5"]) {
      expect(sample(families, "shardgate_node_up", { node })?.value, node).toBe(1);
      expect(sample(families, "shardgate_node_breaker_open", { node })?.value, node).toBe(0);
      expect(sample(families, "shardgate_node_latency_seconds", { node })?.value, node).toBeGreaterThanOrEqual(0);
    }
    expect(sample(families, "shardgate_heal_queue_objects")?.value).toBeGreaterThanOrEqual(0);
    for (const f of families.values()) if (f.type === "gauge") expect(f.name, "gauges get no _total").not.toMatch(/_total$/);
  });

  it("has the bytes and files per node that the last complete scrub pass counted", async () => {
    await s3ok("/prom-usage", { method: "PUT" });
    await s3ok("/prom-usage/one.bin", { method: "PUT", body: new Uint8Array(300_000).fill(7) });
    let completed = false;
    for (let i = 0; i < 10 && !completed; i++) {
      const answer = (await (await s3ok("/_shardgate/admin/scrub?mode=shallow&max-objects=10000", { method: "POST" })).json()) as {
        run: { passCompleted: boolean };
      };
      completed = answer.run.passCompleted;
    }
    expect(completed).toBe(true);
    const { families } = await scrape();
    const stored = families.get("shardgate_node_stored_bytes")?.samples ?? [];
    expect(stored.length).toBeGreaterThanOrEqual(6); // 4 + 2: every part on six nodes
    expect(stored.reduce((sum, s) => sum + s.value, 0)).toBeGreaterThanOrEqual(300_000);
    expect(families.get("shardgate_node_stored_files")?.samples.every((s) => s.value >= 1)).toBe(true);
    expect(sample(families, "shardgate_scrub_last_pass_finished_timestamp_seconds")?.value).toBeGreaterThan(Date.now() / 1000 - 3600);
  });

  it("histograms counted by two isolates add up in the store like counters", async () => {
    const totals: Record<string, number> = {};
    const rows: number[] = [];
    const sink: MetricsSink = {
      add: async (deltas) => {
        rows.push(Object.keys(deltas).length);
        for (const [k, v] of Object.entries(deltas)) totals[k] = (totals[k] ?? 0) + v;
      },
      snapshot: async () => totals,
    };
    const a = new Metrics();
    const b = new Metrics();
    a.observeDuration("GetObject", 3); // ≤ 0.005
    a.observeDuration("GetObject", 700); // ≤ 1
    b.observeDuration("GetObject", 120_000); // +Inf only
    b.observeDuration("PutObject", 50);
    await a.flush(sink);
    await b.flush(sink);
    a.observeDuration("GetObject", 3);
    await a.flush(sink);
    // A flush writes the buckets that got observations, with their sum and count: not one row per bound.
    expect(rows).toEqual([4, 3 + 3, 3]);
    const families = parsePrometheus(renderPrometheus(totals));
    const get = (le: string) => sample(families, "shardgate_request_duration_seconds_bucket", { op: "GetObject", le })?.value;
    expect([get("0.005"), get("0.5"), get("1"), get("60"), get("+Inf")]).toEqual([2, 2, 3, 3, 4]);
    expect(sample(families, "shardgate_request_duration_seconds_count", { op: "GetObject" })?.value).toBe(4);
    expect(sample(families, "shardgate_request_duration_seconds_sum", { op: "GetObject" })?.value).toBeCloseTo(120.706, 6);
    expect(sample(families, "shardgate_request_duration_seconds_bucket", { op: "PutObject", le: "0.025" })?.value).toBe(0);
    expect(sample(families, "shardgate_request_duration_seconds_bucket", { op: "PutObject", le: "0.05" })?.value).toBe(1);
  });

  it("has every metric docs/grafana-dashboard.json queries", async () => {
    await s3ok("/"); // a request, so that the histogram has series
    const { text } = await scrape();
    const exprs = (dashboard.panels as { targets?: { expr: string }[] }[]).flatMap((p) => p.targets ?? []).map((t) => t.expr);
    const variables = dashboard.templating.list.flatMap((v) => ("query" in v && typeof v.query === "string" ? [v.query] : []));
    const used = new Set([...exprs, ...variables].flatMap((e) => e.match(/\bshardgate_[a-z0-9_]+/g) ?? []));
    expect(used.size).toBeGreaterThan(10);
    const sampled = new Set(text.split("\n").flatMap((l) => (l && !l.startsWith("#") ? [l.replace(/[{ ].*$/, "")] : [])));
    const declared = new Set(text.split("\n").flatMap((l) => (l.startsWith("# TYPE ") ? [l.split(" ")[2]] : [])));
    for (const name of used) expect(sampled.has(name) || declared.has(name), `${name} is not in a scrape`).toBe(true);
    // The ones without labels that are always there, and the histogram's, have samples too.
    for (const name of used) if (/duration_seconds_|_ready$|build_info|node_up|heal_queue_objects/.test(name)) expect(sampled.has(name), name).toBe(true);
  });
});
