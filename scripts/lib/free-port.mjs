// A TCP port on 127.0.0.1 that nothing listens on right now (scripts/serve.mjs, cluster.mjs and
// the benchmark start their servers on such ports).
import { createServer } from "node:net";

/** @returns {Promise<number>} */
export function freePort(host = "127.0.0.1") {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, host, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Whether nothing listens on `host`:`port` right now. @returns {Promise<boolean>} */
export function portAvailable(host, port) {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}
