// `npm run bench:versions [-- --versions=N] [-- --json]`: what versioning costs, on shardgate as
// `npm start` serves it (plain workerd, six disk nodes, 4 + 2).
//
// 1. PUT and GET of 1 MiB objects, and PUT of 1 KiB ones (inline: metadata only), at 4 in flight
//    into an unversioned and a versioned bucket, in alternating rounds (so load from elsewhere hits
//    both alike): throughput and p50/p99, and the ratio versioned / unversioned. In the versioned
//    bucket every PUT adds a version of one of 16 keys and every GET reads a key with many
//    versions. Both buckets keep every byte written: the unversioned one gets new keys, since an
//    overwrite there frees the old data, which on this VM makes the next writes cheaper (freed
//    page-cache pages are reused, docs/benchmarks.md); the overwrite row shows that too.
// 2. Listing: N versions (default 100,000: 1,000 keys × 100 versions, 0-byte bodies, 16 in flight)
//    paged through with ListObjectVersions (max-keys 1,000), each page timed; plus pages that
//    start deep in the key space (key-marker + version-id-marker from the middle).
//
// Figures on stdout as a table (or JSON with --json); progress on stderr.
import { S3Client } from "./lib/s3-client.mjs";
import { startTarget, TARGETS } from "./lib/targets.mjs";
import { abRow, ok, pct, summary, window } from "./lib/windows.mjs";

const arg = (name, fallback) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback;
const json = process.argv.includes("--json");
const TOTAL_VERSIONS = Number(arg("versions", 100_000));
const KEYS = Math.max(1, Math.round(TOTAL_VERSIONS / 100));
const ROUNDS = 4;
const MiB = 1 << 20;
const log = (line) => console.error(line);

const tags = (xml, name) => [...xml.matchAll(new RegExp(`<${name}>([^<]*)</${name}>`, "g"))].map((m) => m[1]);

async function main() {
  const target = await startTarget(
    TARGETS.find((t) => t.id === "workerd"),
    log,
  );
  const client = new S3Client({ endpoint: target.endpoint, ...target.credentials });
  try {
    const body = Buffer.alloc(MiB, 7);
    await ok(client, "PUT", "/plain");
    await ok(client, "PUT", "/versioned");
    await ok(client, "PUT", "/versioned?versioning", {
      body: Buffer.from(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`),
    });
    for (const b of ["plain", "versioned"]) for (let i = 0; i < 16; i++) await ok(client, "PUT", `/${b}/obj-${i}`, { body });

    // 1. PUT and GET, alternating buckets round by round.
    const small = Buffer.alloc(1024, 3);
    const results = {
      put: { plain: [], versioned: [] },
      overwrite: { plain: [], versioned: [] },
      get: { plain: [], versioned: [] },
      putSmall: { plain: [], versioned: [] },
    };
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? ["versioned", "plain"] : ["plain", "versioned"];
      for (const b of order) {
        log(`bench:versions: round ${round + 1}/${ROUNDS}, ${b}`);
        const fresh = (i) => (b === "plain" ? `new-${round}-${i}` : `obj-${i % 16}`);
        results.put[b].push(await window((i) => ok(client, "PUT", `/${b}/${fresh(i)}`, { body }), 4));
        results.overwrite[b].push(await window((i) => ok(client, "PUT", `/${b}/obj-${i % 16}`, { body }), 4));
        results.get[b].push(await window((i) => ok(client, "GET", `/${b}/obj-${i % 16}`), 4));
        results.putSmall[b].push(await window((i) => ok(client, "PUT", `/${b}/small-${i % 16}`, { body: small }), 4));
      }
    }
    const data = Object.fromEntries(
      ["put", "overwrite", "get", "putSmall"].map((op) => [op, { plain: summary(results[op].plain), versioned: summary(results[op].versioned) }]),
    );

    // 2. Fill N versions, then page through them.
    log(`bench:versions: writing ${TOTAL_VERSIONS} versions of ${KEYS} keys`);
    await ok(client, "PUT", "/many");
    await ok(client, "PUT", "/many?versioning", {
      body: Buffer.from(`<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>`),
    });
    const fillStarted = performance.now();
    let n = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let i = n++; i < TOTAL_VERSIONS; i = n++) await ok(client, "PUT", `/many/key-${String(i % KEYS).padStart(6, "0")}`, { body: Buffer.alloc(0) });
      }),
    );
    const fillSeconds = (performance.now() - fillStarted) / 1000;
    log(`bench:versions: listing`);
    const pages = [];
    let listed = 0;
    let marker = "";
    const markers = [];
    for (;;) {
      const started = performance.now();
      const r = await ok(client, "GET", `/many?versions&max-keys=1000${marker}`, { keep: true });
      pages.push(performance.now() - started);
      const xml = r.body.toString();
      listed += tags(xml, "VersionId").length;
      if (tags(xml, "IsTruncated")[0] !== "true") break;
      marker = `&key-marker=${encodeURIComponent(tags(xml, "NextKeyMarker")[0])}&version-id-marker=${tags(xml, "NextVersionIdMarker")[0]}`;
      markers.push(marker);
    }
    // Deep pages: straight to markers in the middle of the key space, each twice (cold, warm).
    const deep = [];
    for (const m of markers.slice(Math.floor(markers.length / 2), Math.floor(markers.length / 2) + 10)) {
      for (let i = 0; i < 2; i++) {
        const started = performance.now();
        await ok(client, "GET", `/many?versions&max-keys=1000${m}`, { keep: true });
        deep.push(performance.now() - started);
      }
    }
    data.listing = {
      versions: TOTAL_VERSIONS,
      keys: KEYS,
      listed,
      fillPerSecond: TOTAL_VERSIONS / fillSeconds,
      pages: pages.length,
      pageP50: pct(pages, 0.5),
      pageP99: pct(pages, 0.99),
      pageMax: Math.max(...pages),
      deepP50: pct(deep, 0.5),
      deepMax: Math.max(...deep),
    };
    if (listed !== TOTAL_VERSIONS) throw new Error(`listed ${listed} versions of ${TOTAL_VERSIONS}`);
    if (json) {
      console.log(JSON.stringify(data, null, 2));
      return;
    }
    const row = (label, op, unit) => abRow(label, data[op].plain, data[op].versioned, unit);
    console.log("| 4 in flight | unversioned bucket | versioned bucket | versioned / unversioned |");
    console.log("|---|---|---|---|");
    console.log(row("PUT 1 MiB (every byte kept)", "put", "MiB/s"));
    console.log(row("PUT 1 MiB overwriting 16 keys", "overwrite", "MiB/s"));
    console.log(row("GET 1 MiB", "get", "MiB/s"));
    console.log(row("PUT 1 KiB (inline)", "putSmall", "req/s"));
    const l = data.listing;
    console.log("");
    console.log(`| ListObjectVersions over ${l.versions.toLocaleString("en")} versions (${l.keys.toLocaleString("en")} keys) | ms |`);
    console.log("|---|---|");
    console.log(`| page of 1,000, p50 (${l.pages} pages in order) | ${l.pageP50.toFixed(1)} |`);
    console.log(`| page of 1,000, p99 / max | ${l.pageP99.toFixed(1)} / ${l.pageMax.toFixed(1)} |`);
    console.log(`| page from a marker mid-way, p50 / max | ${l.deepP50.toFixed(1)} / ${l.deepMax.toFixed(1)} |`);
    console.log(`\n(filled at ${l.fillPerSecond.toFixed(0)} versions/s, 16 in flight)`);
  } finally {
    client.close();
    await target.stop();
  }
}

await main();
