// The workerd config of the pass-through baseline (worker.js beside this file): one Worker, one
// writable disk service, on `address`. Written into `dir`, which also holds the files.
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const worker = fileURLToPath(new URL("worker.js", import.meta.url));
/** The block cache's entry size (worker/src/storage/block-cache.ts SEGMENT_BYTES): the lookup floor's GETs join entries of it. */
const ENTRY_BYTES = 16 * 1024 * 1024;

/**
 * Writes the config and returns its path. `shards`: the floor's GET (worker.js) over that many
 * ranged requests; `lookupSecret`: every GET checks its SigV4 signature with this secret and looks its
 * key up in a Durable Object first, and a whole GET of more than ENTRY_BYTES joins ranges of that
 * size (worker.js META).
 */
export function writePassthroughConfig(dir, address, compatibilityDate, shards = null, lookupSecret = null) {
  mkdirSync(join(dir, "files"), { recursive: true });
  if (lookupSecret) mkdirSync(join(dir, "meta"), { recursive: true });
  const meta = lookupSecret
    ? {
        binding: `, (name = "META", durableObjectNamespace = "Meta"), (name = "SECRET", text = ${JSON.stringify(lookupSecret)}), (name = "ENTRY_BYTES", text = "${ENTRY_BYTES}")`,
        worker:
          ', durableObjectNamespaces = [(className = "Meta", uniqueKey = "pass-through-meta", enableSql = true)], durableObjectStorage = (localDisk = "meta")',
        service: `\n    (name = "meta", disk = (path = ${JSON.stringify(join(dir, "meta"))}, writable = true)),`,
      }
    : { binding: "", worker: "", service: "" };
  copyFileSync(worker, join(dir, "worker.js")); // embeds are relative to the config
  const path = join(dir, "workerd.capnp");
  writeFileSync(
    path,
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "main", worker = (modules = [(name = "worker.js", esModule = embed "worker.js")], compatibilityDate = ${JSON.stringify(compatibilityDate)}, bindings = [(name = "FILES", service = "files")${shards ? `, (name = "SHARDS", text = "${shards}")` : ""}${meta.binding}]${meta.worker})),
    (name = "files", disk = (path = ${JSON.stringify(join(dir, "files"))}, writable = true)),${meta.service}
  ],
  sockets = [(name = "http", address = ${JSON.stringify(address)}, http = (), service = "main")],
);
`,
  );
  return path;
}
