// The core's wasm-bindgen output (core/pkg, --target web) loaded in Node from the file, through
// the same typed wrapper the Worker uses.
import { readFileSync } from "node:fs";
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
});

defineCoreSuite("node", () => core);
