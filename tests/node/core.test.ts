// The core's wasm-bindgen output (core/pkg, --target web) loaded in Node from the file, through
// the same typed wrapper the Worker uses.
import { readFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, inject, it } from "vitest";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";
import { defineCoreSuite } from "../shared/core-suite";

const memory = bindings.initSync({
  module: readFileSync(new URL("../../core/pkg/shardgate_core_bg.wasm", import.meta.url)),
}).memory;
const core = new Core(bindings, memory);

describe("core wasm in node", () => {
  it("version() is the crate version", () => {
    expect(core.version()).toBe(inject("coreCrateVersion"));
  });

  // A row's manifest as JavaScript objects can take ~16 times the row's bytes (a pair of one-byte
  // strings is 4 bytes in the row, an array of two strings in memory). decodeManifest keeps the
  // manifests of recent rows: what they hold must stay small whatever rows a writer can make.
  it("keeps a few MiB of decoded manifests at most, whatever the rows", () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    // Rows of just under 16 KiB, each holding thousands of user metadata pairs (x-amz-meta-N: "").
    const userMetadata: [string, string][] = Array.from({ length: 3500 }, (_, i) => [i.toString(36), ""]);
    const part = { size: 1, etag: "b".repeat(32), layout: { type: "inline" as const, data: "AA==" } };
    const base = { size: 1, etag: "a".repeat(32), headers: [], userMetadata, checksums: [], tags: [], parts: [part] };
    const rows = Array.from({ length: 256 }, (_, i) => core.encodeManifest({ ...base, lastModifiedMs: 1_700_000_000_000 + i }));
    expect(rows[0].length).toBeGreaterThan(15 * 1024);
    expect(rows[0].length).toBeLessThanOrEqual(16 * 1024);
    gc();
    const before = process.memoryUsage().heapUsed;
    for (const row of rows) expect(core.decodeManifest(row).userMetadata).toHaveLength(3500);
    gc();
    const kept = process.memoryUsage().heapUsed - before;
    expect(kept).toBeLessThan(8 * 1024 * 1024);
  });
});

defineCoreSuite("node", () => core);
