// A TCP port on 127.0.0.1 that nothing listens on right now (scripts/serve.mjs, cluster.mjs and
// the benchmark start their servers on such ports).
import { createServer } from "node:net";

/** @returns {Promise<number>} */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}
