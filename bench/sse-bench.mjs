// `npm run bench:sse [-- --json]`: what server-side encryption costs, on shardgate as `npm start`
// serves it (plain workerd, six disk nodes, 4 + 2): the same requests into a plain bucket and
// into one whose default encryption is SSE-S3, in alternating rounds (so load from elsewhere hits
// both alike), 4 in flight: PUT 1 MiB, GET 1 MiB, GET of 64 whole segments (1,047,552 bytes: 64
// chunks stored, where an encrypted 1 MiB is 65 and its first shard one chunk longer than the
// plain object's, which is read in two pieces instead of one), and 4 KiB ranges of a 16 MiB
// object, with the bytes the gateway read from its nodes per range (its
// shardgate_node_bytes_read_total). Each row
// gives the SSE-S3 / plain ratio of throughput over all rounds and its range over the rounds (the
// machine's noise), and the CPU time the gateway's processes spent per request (/proc, as
// `npm run bench` counts it) with its ratio: the steadier measure of what encryption costs.
//
// Figures on stdout as a table (or JSON with --json); progress on stderr. `--rounds N` (default 6).
import { S3Client } from "./lib/s3-client.mjs";
import { cpuMs, startTarget, TARGETS } from "./lib/targets.mjs";
import { abRow, ok, summary, window, metricSum } from "./lib/windows.mjs";

const json = process.argv.includes("--json");
const roundsArg = process.argv.indexOf("--rounds");
const ROUNDS = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 6;
const MiB = 1 << 20;
const SEGMENTS_64 = 64 * (16384 - 16); // 64 segments at the default chunk size (wrangler.toml)
const log = (line) => console.error(line);

const nodeBytesRead = (client) => metricSum(client, ["shardgate_node_bytes_read_total"]);

async function main() {
  const target = await startTarget(
    TARGETS.find((t) => t.id === "workerd"),
    log,
  );
  const client = new S3Client({ endpoint: target.endpoint, ...target.credentials });
  try {
    const body = Buffer.alloc(MiB, 7);
    const big = Buffer.alloc(16 * MiB);
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
    await ok(client, "PUT", "/plain");
    await ok(client, "PUT", "/sse");
    const config =
      '<ServerSideEncryptionConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>';
    await ok(client, "PUT", "/sse?encryption", { body: Buffer.from(config) });
    for (const b of ["plain", "sse"]) {
      for (let i = 0; i < 16; i++) await ok(client, "PUT", `/${b}/obj-${i}`, { body });
      for (let i = 0; i < 16; i++) await ok(client, "PUT", `/${b}/seg64-${i}`, { body: body.subarray(0, SEGMENTS_64) });
      await ok(client, "PUT", `/${b}/big`, { body: big });
    }
    const head = await client.request("HEAD", "/sse/big");
    if (head.status !== 200) throw new Error("HEAD /sse/big failed");

    const results = { put: { plain: [], sse: [] }, get: { plain: [], sse: [] }, get64: { plain: [], sse: [] }, range: { plain: [], sse: [] } };
    // A window with the gateway's CPU time over it (ms).
    const timed = async (op) => {
      const before = cpuMs(target.processes());
      const w = await window(op, 4);
      return { ...w, cpuMs: cpuMs(target.processes()) - before };
    };
    const rangeBytes = { plain: { node: 0, served: 0 }, sse: { node: 0, served: 0 } };
    let x = 12345;
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 ? ["sse", "plain"] : ["plain", "sse"];
      for (const b of order) {
        log(`bench:sse: round ${round + 1}/${ROUNDS}, ${b}`);
        results.put[b].push(await timed((i) => ok(client, "PUT", `/${b}/new-${round}-${i}`, { body })));
        results.get[b].push(await timed((i) => ok(client, "GET", `/${b}/obj-${i % 16}`)));
        results.get64[b].push(await timed((i) => ok(client, "GET", `/${b}/seg64-${i % 16}`)));
        // The same offsets in both buckets, round by round.
        x = 12345 + round;
        const before = await nodeBytesRead(client);
        const w = await timed(async () => {
          x = (x * 1103515245 + 12345) % 2 ** 31;
          const start = x % (big.length - 4096);
          const r = await ok(client, "GET", `/${b}/big`, { headers: { range: `bytes=${start}-${start + 4095}` }, keep: true });
          if (r.bytes !== 4096 || !r.body.equals(big.subarray(start, start + 4096))) throw new Error(`range of /${b}/big at ${start}: wrong bytes`);
          return r;
        });
        results.range[b].push(w);
        rangeBytes[b].node += (await nodeBytesRead(client)) - before;
        rangeBytes[b].served += w.ms.length * 4096;
      }
    }
    const cpuPerRequest = (ws) => ws.reduce((n, w) => n + w.cpuMs, 0) / ws.reduce((n, w) => n + w.ms.length, 0);
    const rate = (w) => w.ms.length / w.seconds;
    const data = Object.fromEntries(
      ["put", "get", "get64", "range"].map((op) => {
        const { plain, sse } = results[op];
        const perRound = plain.map((p, i) => rate(sse[i]) / rate(p)).sort((a, b) => a - b);
        return [
          op,
          {
            plain: { ...summary(plain), cpuMs: cpuPerRequest(plain) },
            sse: { ...summary(sse), cpuMs: cpuPerRequest(sse) },
            roundRatios: { min: perRound[0], max: perRound[perRound.length - 1] },
          },
        ];
      }),
    );
    data.rangeNodeBytesPerRange = {
      plain: rangeBytes.plain.node / (rangeBytes.plain.served / 4096),
      sse: rangeBytes.sse.node / (rangeBytes.sse.served / 4096),
    };
    if (json) {
      console.log(JSON.stringify(data, null, 2));
      return;
    }
    const row = (label, op, unit) => {
      const d = data[op];
      const rounds = `${d.roundRatios.min.toFixed(2)}–${d.roundRatios.max.toFixed(2)}×`;
      const cpu = `${d.plain.cpuMs.toFixed(2)} / ${d.sse.cpuMs.toFixed(2)} ms | ${(d.plain.cpuMs / d.sse.cpuMs).toFixed(2)}×`;
      return `${abRow(label, d.plain, d.sse, unit)} ${rounds} | ${cpu} |`;
    };
    console.log(
      `${ROUNDS} alternating rounds; SSE-S3 / plain: throughput over all rounds, and its range round by round; gateway CPU per request (plain / SSE-S3) and plain's over SSE-S3's`,
    );
    console.log("");
    console.log("| 4 in flight | plain bucket | SSE-S3 by default | SSE-S3 / plain | per round | CPU per request | CPU plain / SSE-S3 |");
    console.log("|---|---|---|---|---|---|---|");
    console.log(row("PUT 1 MiB", "put", "MiB/s"));
    console.log(row("GET 1 MiB", "get", "MiB/s"));
    console.log(row("GET 64 segments (1,047,552 B)", "get64", "req/s"));
    console.log(row("GET 4 KiB ranges of 16 MiB", "range", "req/s"));
    const nb = data.rangeNodeBytesPerRange;
    console.log(`| node bytes read per 4 KiB range | ${nb.plain.toFixed(0)} | ${nb.sse.toFixed(0)} | ${(nb.sse / nb.plain).toFixed(2)}× | | | |`);
  } finally {
    client.close();
    await target.stop();
  }
}

await main();
