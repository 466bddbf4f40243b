// The core's wasm, instantiated inside workerd by the Worker's own loader (worker/src/core.ts).
import { describe, expect, inject, it } from "vitest";
import { core, coreVersion } from "../../worker/src/core";
import { defineCoreSuite } from "../shared/core-suite";

describe("core wasm in workerd", () => {
  it("version() is the crate version", () => {
    expect(coreVersion()).toBe(inject("coreCrateVersion"));
  });
});

defineCoreSuite("workerd", () => core);
