// The core (core/pkg: the Rust crate built by wasm-bindgen --target web), loaded by the package
// itself: once per page, Web Worker or Node process, the first time a client needs it.
//
// The .wasm is a file next to this module: `new URL(…, import.meta.url)`, which bundlers that know
// the pattern (Vite, webpack 5, Parcel) copy into the app's output as an asset. In the package
// (client/build.mjs) the path below becomes "./shardgate_core_bg.wasm", the copy in dist/. In
// Node the URL is a file: URL, which fetch cannot read: the bytes are read from disk instead.
import init, * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";

/**
 * Where the core's .wasm comes from when not from the file next to the package: a URL (string or
 * URL) to fetch, a Response, its bytes, or a compiled WebAssembly.Module.
 */
export type CoreSource = bindings.InitInput;

let loading: Promise<Core> | null = null;

/**
 * The core, instantiated once (later calls answer the same one, whatever `source` they pass).
 * Without `source`, from the .wasm file next to the package. A failed load is tried again by the
 * next call.
 */
export function loadCore(source?: CoreSource): Promise<Core> {
  if (!loading) {
    const started = instantiate(source ?? new URL("../../core/pkg/shardgate_core_bg.wasm", (import.meta as ImportMeta & { url: string }).url));
    started.catch(() => {
      if (loading === started) loading = null;
    });
    loading = started;
  }
  return loading;
}

async function instantiate(source: CoreSource): Promise<Core> {
  let input = source;
  const url = typeof input === "string" && input.startsWith("file:") ? new URL(input) : input;
  if (url instanceof URL && url.protocol === "file:") input = await readFileUrl(url);
  const { memory } = await init({ module_or_path: input });
  return new Core(bindings, memory);
}

/** A file: URL's bytes, with Node's fs (imported only here, and hidden from browser bundlers). */
async function readFileUrl(url: URL): Promise<Uint8Array<ArrayBuffer>> {
  const fs = "node:fs/promises";
  const { readFile } = (await import(/* @vite-ignore */ /* webpackIgnore: true */ fs)) as { readFile(path: URL): Promise<Uint8Array<ArrayBuffer>> };
  return readFile(url);
}
