// What the benches (bench:versions, bench:sse, bench:ceiling, bench:direct, bench:nodes) share: a
// checked request, a timed window of requests in flight, its summary, a table row comparing two
// summaries, and the gateway's own counters.

/** The q-quantile of `xs` (null when empty). */
export const pct = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(s.length * q))] : null;
};

/** A request that must answer 2xx. */
export async function ok(client, method, path, opts) {
  const r = await client.request(method, path, opts);
  if (r.status < 200 || r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.body?.toString() ?? ""}`);
  return r;
}

/** `inFlight` loops of `op(i)` for `ms` milliseconds: the seconds taken and each request's latency. */
export async function window(op, inFlight, ms = 1500) {
  const latencies = [];
  let next = 0;
  const started = performance.now();
  const deadline = started + ms;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < deadline) latencies.push((await op(next++)).ms);
    }),
  );
  return { seconds: (performance.now() - started) / 1000, ms: latencies };
}

/** Requests per second and p50/p99 latency over several windows. */
export function summary(windows) {
  const ms = windows.flatMap((w) => w.ms);
  return { perS: ms.length / windows.reduce((s, w) => s + w.seconds, 0), p50: pct(ms, 0.5), p99: pct(ms, 0.99) };
}

/** A summary as a table cell: throughput in `unit` and p50/p99 latency. */
export function cell(s, unit) {
  return `${s.perS.toFixed(0)} ${unit} · ${s.p50.toFixed(1)}/${s.p99.toFixed(1)} ms`;
}

/** A table row: `label`, the cells of `a` and `b`, and b's throughput over a's. */
export function abRow(label, a, b, unit) {
  return `| ${label} | ${cell(a, unit)} | ${cell(b, unit)} | ${(b.perS / a.perS).toFixed(2)}× |`;
}

/** The sum of the gateway's counters `names` over all their series (signed GET /_shardgate/metrics). */
export async function metricSum(client, names) {
  const text = (await ok(client, "GET", "/_shardgate/metrics", { keep: true })).body.toString();
  let sum = 0;
  for (const line of text.split("\n")) {
    const name = line.slice(0, line.search(/[{ ]/));
    if (names.includes(name)) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}
