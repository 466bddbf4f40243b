// Values the root vitest.config.ts provides to every test project (`inject(...)` from "vitest").
import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** `version` of core/Cargo.toml's [package], read by the config (not from the wasm). */
    coreCrateVersion: string;
  }
}
