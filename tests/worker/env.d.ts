// Types for tests that run inside workerd: `exports` from "cloudflare:workers" are loopback
// bindings to the Worker's main module (worker/src/index.ts).
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import("../../worker/src/index");
  }
}
