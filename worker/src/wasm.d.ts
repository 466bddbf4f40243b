// `import m from "./x.wasm"` yields a compiled module (wrangler's CompiledWasm rule).
declare module "*.wasm" {
  const module: WebAssembly.Module;
  export default module;
}
