// Types for tests that run inside workerd: `exports` from "cloudflare:workers" are loopback
// bindings to the Worker's main module (worker/src/index.ts).
declare namespace Cloudflare {
  interface GlobalProps {
    mainModule: typeof import("../../worker/src/index");
  }
  /** Test bindings (vitest.config.ts): a Queue of SHARDGATE_QUEUES, and its consumer, which answers the bodies it got. */
  interface Env {
    EVENTS: Queue;
    QUEUE_SINK: Fetcher;
  }
}
