// Checksums of upload parts, computed off the main thread (checksum-worker.ts). Falls back on the
// page's own core if Web Workers cannot start.
import type { ChecksumReply, ChecksumRequest } from "./checksum-worker";
import { base64, loadCore } from "./core";

let worker: Worker | null = null;
let nextId = 1;
const pending = new Map<number, { resolve: (v: string) => void; reject: (e: Error) => void }>();

function getWorker(): Worker | null {
  if (worker) return worker;
  try {
    worker = new Worker(new URL("./checksum-worker.ts", import.meta.url), { type: "module" });
    worker.onmessage = (e: MessageEvent<ChecksumReply>) => {
      const p = pending.get(e.data.id);
      if (!p) return;
      pending.delete(e.data.id);
      if ("value" in e.data) p.resolve(e.data.value);
      else p.reject(new Error(`Could not compute the checksum: ${e.data.error}`));
    };
    worker.onerror = () => {
      for (const p of pending.values()) p.reject(new Error("The checksum worker stopped."));
      pending.clear();
      worker = null;
    };
    return worker;
  } catch {
    return null;
  }
}

/** The base64 checksum (as sent in x-amz-checksum-<algorithm>) of a Blob. */
export async function checksumBlob(blob: Blob, algorithm: string): Promise<string> {
  const w = getWorker();
  if (!w) {
    const core = await loadCore();
    const c = core.checksum(algorithm);
    c.update(new Uint8Array(await blob.arrayBuffer()));
    return base64(c.digest());
  }
  const id = nextId++;
  return new Promise<string>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    const msg: ChecksumRequest = { id, blob, algorithm };
    w.postMessage(msg);
  });
}
