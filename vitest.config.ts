// Vitest projects (run them all with `npm test`, or one with `npx vitest run --project node`):
//   - "workers": tests/worker/**/*.test.ts run inside workerd (the Worker from wrangler.toml,
//     via @cloudflare/vitest-plugin's `cloudflareTest`).
//   - "node":    tests/node/**/*.test.ts run in Node (core/pkg loaded from disk with initSync),
//                end to end against the production runtime (plain workerd, what `npm start` serves).
//   - "node-dev": the end-to-end suites that matter for development once more, against
//                `wrangler dev` (what `npm run dev` serves): both runtimes must pass them.
// Both get `inject("coreCrateVersion")`: the version in core/Cargo.toml, read here independently
// of the wasm so tests can compare it with what the core reports.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { CREDENTIALS, MASTER_KEY, METRICS_TOKEN } from "./tests/shared/credentials";

const root = fileURLToPath(new URL(".", import.meta.url));

function crateVersion(cargoToml: string): string {
  const pkg = readFileSync(new URL(cargoToml, import.meta.url), "utf8")
    .split(/^\[/m)
    .find((s) => s.startsWith("package]"));
  const m = pkg?.match(/^version\s*=\s*"([^"]+)"/m);
  if (!m?.[1]) throw new Error(`no [package] version in ${cargoToml}`);
  return m[1];
}

// The end-to-end suites run under `wrangler dev` too: an SDK's whole S3 surface, multipart, and
// the misbehaving clients that used to crash the dev server.
const DEV_SUITES = ["tests/node/s3-sdk.test.ts", "tests/node/sdk-multipart.test.ts", "tests/node/bad-clients.test.ts", "tests/node/dev-server.test.ts"];

const provide = { coreCrateVersion: crateVersion("./core/Cargo.toml") };

export default defineConfig({
  test: {
    projects: [
      {
        plugins: [
          cloudflareTest({
            wrangler: { configPath: `${root}wrangler.toml` },
            // Secrets in production, passed by scripts/serve.mjs locally: here, test bindings.
            miniflare: {
              bindings: {
                SHARDGATE_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
                SHARDGATE_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
                SHARDGATE_METRICS_TOKEN: METRICS_TOKEN,
                SHARDGATE_MASTER_KEY: MASTER_KEY,
                // Every GET says whether the block cache served it (block-cache.test.ts).
                SHARDGATE_CACHE_HEADER: "on",
                // Direct-path uploads in parts of 2 MiB: a few MiB make several parts.
                SHARDGATE_DIRECT_PART_BYTES: String(2 * 1024 * 1024),
                // Event notification targets (notifications.test.ts): nothing listens there, so
                // deliveries fail and wait for their retry; the rows stay to be looked at.
                SHARDGATE_WEBHOOKS: JSON.stringify({
                  hook: { url: "http://127.0.0.1:9/hook", secret: "test-secret" },
                  other: { url: "http://127.0.0.1:9/other", secret: "other-secret" },
                }),
                SHARDGATE_NOTIFY_RETRY_MS: "600000",
                // Queue targets (notifications.test.ts): EVENTS is a real Queue, consumed by
                // queue-sink below; MISSING is listed but bound to nothing; QUEUE_SINK is a
                // service binding, listed by mistake: never a target.
                SHARDGATE_QUEUES: "EVENTS, MISSING, QUEUE_SINK",
                // A remote replication target (replication.test.ts) where nothing listens.
                SHARDGATE_REPLICATION_TARGETS: JSON.stringify({
                  offsite: { endpoint: "http://127.0.0.1:9", region: "us-east-1", accessKeyId: "remote-key", secretAccessKey: "remote-secret" },
                  // The gateway itself (tests/worker/signed.ts GATEWAY): refused as a destination.
                  self: { endpoint: "http://gateway.test", region: "us-east-1", accessKeyId: "remote-key", secretAccessKey: "remote-secret" },
                }),
              },
              // A node the tests add to the six of wrangler.toml (rebalance.test.ts).
              r2Buckets: ["NODE_6"],
              queueProducers: { EVENTS: { queueName: "shardgate-events" } },
              serviceBindings: { QUEUE_SINK: "queue-sink" },
              // The consumer of the EVENTS queue: it keeps the bodies of the messages it gets, and
              // answers them to a GET (QUEUE_SINK, notifications.test.ts).
              workers: [
                {
                  name: "queue-sink",
                  modules: true,
                  compatibilityDate: "2026-11-01",
                  script: `const bodies = [];
                    export default {
                      async queue(batch) { for (const m of batch.messages) { bodies.push(m.body); m.ack(); } },
                      async fetch() { return Response.json(bodies); },
                    };`,
                  queueConsumers: { "shardgate-events": { maxBatchTimeout: 0 } },
                },
              ],
            },
          }),
        ],
        test: {
          name: "workers",
          root,
          include: ["tests/worker/**/*.test.ts"],
          // A safety net, not a measure (speed is the benchmarks'): several files run at once on
          // two shared cores, and a test that writes and heals megabytes took 5-7 s under load.
          testTimeout: 30_000,
          provide,
        },
      },
      {
        test: {
          name: "node",
          root,
          environment: "node",
          // End-to-end tests drive a real gateway over HTTP with real clients: seconds, not ms.
          // One file at a time: each starts its own gateway, and two cores shared by several
          // gateways and clients saturate the single isolate each runs in.
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
          include: ["tests/node/**/*.test.ts"],
          provide,
        },
      },
      {
        test: {
          name: "node-dev",
          root,
          environment: "node",
          env: { SHARDGATE_E2E_RUNTIME: "dev" }, // tests/node/gateway.ts: wrangler dev by default
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 120_000,
          include: DEV_SUITES,
          provide,
        },
      },
    ],
  },
});
