// A Web Worker that runs the direct path (docs/direct-path.md) with @shardgate/client: it codes
// uploads and decodes downloads with the WASM core off the page's thread, and reports progress.
import { ShardgateClient } from "../../client/src/index";
import type { Declined, DirectUploadSession, UploadProgress, UploadResult } from "../../client/src/index";
import { loadCore } from "./core";
import type { Credentials } from "./s3";

export type DirectRequest =
  | {
      op: "upload";
      /** The gateway. */
      origin: string;
      credentials: Credentials;
      bucket: string;
      key: string;
      file: Blob;
      contentType: string;
      session: DirectUploadSession | null;
    }
  | { op: "download"; origin: string; credentials: Credentials; bucket: string; key: string; versionId: string | null };

export interface ReadAround {
  part: number;
  shard: number;
  why: string;
}

export type DirectReply =
  | { type: "session"; session: DirectUploadSession }
  | { type: "upload-progress"; progress: UploadProgress }
  | { type: "uploaded"; result: UploadResult | Declined }
  | { type: "download-progress"; bytes: number; size: number; readAround: ReadAround[] }
  | { type: "downloaded"; blob: Blob; mode: "direct" | "classic"; readAround: ReadAround[] }
  | { type: "error"; message: string };

const scope = self as unknown as { onmessage: ((e: MessageEvent<DirectRequest>) => void) | null; postMessage(m: DirectReply): void };

/** Progress messages at most this often (ms): a message per shard file would flood the page. */
const REPORT_MS = 100;

scope.onmessage = async (e) => {
  const request = e.data;
  try {
    const { accessKeyId, secretAccessKey, sessionToken } = request.credentials;
    const client = new ShardgateClient({ endpoint: request.origin, accessKeyId, secretAccessKey, sessionToken, core: await loadCore() });
    if (request.op === "upload") await upload(client, request);
    else await download(client, request);
  } catch (err) {
    scope.postMessage({ type: "error", message: err instanceof Error ? err.message : String(err) });
  }
};

async function upload(client: ShardgateClient, r: Extract<DirectRequest, { op: "upload" }>): Promise<void> {
  let last = 0;
  // Declined: the console sends those its own way (multipart, checksums).
  const result = await client.uploadDirect(r.bucket, r.key, r.file, {
    contentType: r.contentType,
    ...(r.session ? { session: r.session } : {}),
    onSession: (session) => scope.postMessage({ type: "session", session }),
    onProgress: (progress) => {
      const now = performance.now();
      if (now - last < REPORT_MS && progress.sentBytes < progress.totalBytes) return;
      last = now;
      scope.postMessage({ type: "upload-progress", progress });
    },
  });
  scope.postMessage({ type: "uploaded", result });
}

async function download(client: ShardgateClient, r: Extract<DirectRequest, { op: "download" }>): Promise<void> {
  const got = await client.download(r.bucket, r.key, r.versionId === null ? {} : { versionId: r.versionId });
  const reader = got.body.getReader();
  const pieces: Uint8Array[] = [];
  let bytes = 0;
  let last = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pieces.push(value);
    bytes += value.length;
    const now = performance.now();
    if (now - last >= REPORT_MS) {
      last = now;
      scope.postMessage({ type: "download-progress", bytes, size: got.size, readAround: got.readAround });
    }
  }
  if (bytes !== got.size) throw new Error(`The download ended after ${bytes} of ${got.size} bytes.`);
  const blob = new Blob(pieces as BlobPart[], { type: got.contentType ?? "application/octet-stream" });
  scope.postMessage({ type: "downloaded", blob, mode: got.mode, readAround: got.readAround });
}
