// A Web Worker that computes S3 checksums (CRC32, CRC32C, CRC64NVME) of Blobs with the WASM core,
// streaming them in slices, so hashing a big upload never blocks the page.
import { base64, loadCore } from "./core";

export interface ChecksumRequest {
  id: number;
  blob: Blob;
  algorithm: string;
}

export type ChecksumReply = { id: number; value: string } | { id: number; error: string };

const scope = self as unknown as { onmessage: ((e: MessageEvent<ChecksumRequest>) => void) | null; postMessage(m: ChecksumReply): void };

scope.onmessage = async (e) => {
  const { id, blob, algorithm } = e.data;
  try {
    const core = await loadCore();
    const sum = core.checksum(algorithm);
    const reader = blob.stream().getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      sum.update(value);
    }
    scope.postMessage({ id, value: base64(sum.digest()) });
  } catch (err) {
    scope.postMessage({ id, error: err instanceof Error ? err.message : String(err) });
  }
};
