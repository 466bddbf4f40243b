// The shardgate core (Rust → WASM, core/pkg built with wasm-bindgen --target web), loaded in the
// browser through the same typed wrapper the Worker uses (worker/src/shared/core-api.ts).
import init, * as bindings from "../../core/pkg/shardgate_core.js";
import wasmUrl from "../../core/pkg/shardgate_core_bg.wasm?url";
import { Core } from "../../worker/src/shared/core-api";

let loading: Promise<Core> | null = null;

/** The core, instantiated once per page or Web Worker. */
export function loadCore(): Promise<Core> {
  loading ??= init({ module_or_path: wasmUrl }).then((out) => new Core(bindings, out.memory));
  return loading;
}

export function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** The base64 S3 checksum of bytes already in memory (small bodies such as DeleteObjects'). */
export function checksumOf(core: Core, algorithm: string, bytes: Uint8Array): string {
  const c = core.checksum(algorithm);
  c.update(bytes);
  return base64(c.digest());
}
