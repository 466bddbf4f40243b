// The Rust core (core/, compiled to wasm32 and bound with wasm-bindgen --target web into core/pkg),
// instantiated once, synchronously, when this module is first imported. The Worker uses it only
// through the typed wrapper in shared/core-api.ts.
import wasmModule from "../../core/pkg/shardgate_core_bg.wasm";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "./shared/core-api";

export const core = new Core(bindings, bindings.initSync({ module: wasmModule }).memory);

/** The core crate's version (Cargo package version of shardgate-core). */
export function coreVersion(): string {
  return core.version();
}
