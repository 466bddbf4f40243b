// `npm run bench:ceiling [-- --json]`: the writes per second one bucket takes before its latency
// climbs, on shardgate as `npm start` serves it. Each bucket's index is one Durable Object (one
// SQLite database, one thread): PUTs of 1 KiB objects (stored in their manifests, so a write is
// almost only its metadata commit) at 1, 4, 16 and 64 in flight into one bucket, against the same
// spread over 8 buckets (8 Durable Objects), in alternating rounds.
//
// Figures on stdout as a table (or JSON with --json); progress on stderr.
import { S3Client } from "./lib/s3-client.mjs";
import { startTarget, TARGETS } from "./lib/targets.mjs";
import { cell, ok, summary, window } from "./lib/windows.mjs";

const json = process.argv.includes("--json");
const LEVELS = [1, 4, 16, 64];
const BUCKETS = 8;
const ROUNDS = 2;
const log = (line) => console.error(line);

async function main() {
  const target = await startTarget(
    TARGETS.find((t) => t.id === "workerd"),
    log,
  );
  const client = new S3Client({ endpoint: target.endpoint, ...target.credentials });
  try {
    const body = Buffer.alloc(1024, 9);
    for (let b = 0; b < BUCKETS; b++) await ok(client, "PUT", `/ceiling-${b}`);
    const results = Object.fromEntries(LEVELS.map((n) => [n, { one: [], spread: [] }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const n of LEVELS) {
        for (const layout of round % 2 ? ["spread", "one"] : ["one", "spread"]) {
          log(`bench:ceiling: round ${round + 1}/${ROUNDS}, ${n} in flight, ${layout}`);
          const bucket = (i) => (layout === "one" ? "ceiling-0" : `ceiling-${i % BUCKETS}`);
          results[n][layout].push(await window((i) => ok(client, "PUT", `/${bucket(i)}/r${round}-${n}-${layout}-${i}`, { body }), n, 3000));
        }
      }
    }
    const data = LEVELS.map((n) => ({ inFlight: n, one: summary(results[n].one), spread: summary(results[n].spread) }));
    if (json) {
      console.log(JSON.stringify(data, null, 2));
      return;
    }
    console.log(`| PUT 1 KiB, in flight | one bucket (one Durable Object) | spread over ${BUCKETS} buckets |`);
    console.log("|---|---|---|");
    for (const r of data) console.log(`| ${r.inFlight} | ${cell(r.one, "req/s")} | ${cell(r.spread, "req/s")} |`);
  } finally {
    client.close();
    await target.stop();
  }
}

await main();
