// A Web Worker that runs the direct path (docs/direct-path.md) with @shardgate/client: it codes
// uploads and decodes downloads with the WASM core off the page's thread, and reports progress.
// It also does what client-side encryption asks of the core (client/src/sealed.ts): Argon2id of a
// passphrase is hundreds of milliseconds of memory-hard work, never run on the page's thread.
import { decodeSealedHeader, openSealedDataKey, Sealer, ShardgateClient } from "../../client/src/index";
import type { Declined, DirectUploadSession, Encryption, Opening, UploadProgress, UploadResult } from "../../client/src/index";
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
      /** Sealed here before it leaves (then never declined: the client falls back on one PutObject itself). */
      encryption: Encryption | null;
    }
  | {
      op: "download";
      origin: string;
      credentials: Credentials;
      bucket: string;
      key: string;
      versionId: string | null;
      /** A sealed object's opening (its raw data key, from "unlock"): decrypted here, sizes and range in plaintext. */
      opening: Opening | null;
      range: { start: number; end: number } | null;
    }
  /** The raw data key of a sealed object's header (x-amz-meta-shardgate-sealed), opened with a passphrase. */
  | { op: "unlock"; header: string; passphrase: string }
  /** `file` sealed whole, for the classic path: its stored bytes and its header. */
  | { op: "seal"; file: Blob; passphrase: string };

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
  | { type: "unlocked"; dataKey: Uint8Array }
  | { type: "sealed"; blob: Blob; header: string }
  | { type: "error"; message: string; name: string };

const scope = self as unknown as { onmessage: ((e: MessageEvent<DirectRequest>) => void) | null; postMessage(m: DirectReply, transfer?: Transferable[]): void };

/** Progress messages at most this often (ms): a message per shard file would flood the page. */
const REPORT_MS = 100;
/** Stored bytes sealed per step for the classic path: the Blob is built of such pieces. */
const SEAL_STEP = 16 * 1024 * 1024;

scope.onmessage = async (e) => {
  const request = e.data;
  try {
    if (request.op === "unlock") return await unlock(request);
    if (request.op === "seal") return await seal(request);
    const { accessKeyId, secretAccessKey, sessionToken } = request.credentials;
    const client = new ShardgateClient({ endpoint: request.origin, accessKeyId, secretAccessKey, sessionToken, core: await loadCore() });
    if (request.op === "upload") await upload(client, request);
    else await download(client, request);
  } catch (err) {
    // Only the error's name and message cross to the page: never a key or the passphrase.
    const error = err instanceof Error ? err : new Error(String(err));
    scope.postMessage({ type: "error", message: error.message, name: error.name });
  }
};

async function upload(client: ShardgateClient, r: Extract<DirectRequest, { op: "upload" }>): Promise<void> {
  let last = 0;
  const options = {
    contentType: r.contentType,
    ...(r.session ? { session: r.session } : {}),
    ...(r.encryption ? { encryption: r.encryption } : {}),
    onSession: (session: DirectUploadSession) => scope.postMessage({ type: "session", session }),
    onProgress: (progress: UploadProgress) => {
      const now = performance.now();
      if (now - last < REPORT_MS && progress.sentBytes < progress.totalBytes) return;
      last = now;
      scope.postMessage({ type: "upload-progress", progress });
    },
  };
  // Declined plain uploads: the console sends those its own way (multipart, checksums). A sealed
  // one never leaves this worker as plaintext: where the gateway declines, the client puts the ciphertext.
  const result = r.encryption ? await client.upload(r.bucket, r.key, r.file, options) : await client.uploadDirect(r.bucket, r.key, r.file, options);
  scope.postMessage({ type: "uploaded", result });
}

async function download(client: ShardgateClient, r: Extract<DirectRequest, { op: "download" }>): Promise<void> {
  const got = await client.download(r.bucket, r.key, {
    ...(r.versionId === null ? {} : { versionId: r.versionId }),
    ...(r.opening ? { encryption: r.opening } : {}),
    ...(r.range ? { range: r.range } : {}),
  });
  const reader = got.body.getReader();
  const pieces: Uint8Array[] = [];
  let bytes = 0;
  let last = 0;
  const expected = got.range.end - got.range.start;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    pieces.push(value);
    bytes += value.length;
    const now = performance.now();
    if (now - last >= REPORT_MS) {
      last = now;
      scope.postMessage({ type: "download-progress", bytes, size: expected, readAround: got.readAround });
    }
  }
  if (bytes !== expected) throw new Error(`The download ended after ${bytes} of ${expected} bytes.`);
  const blob = new Blob(pieces as BlobPart[], { type: got.contentType ?? "application/octet-stream" });
  scope.postMessage({ type: "downloaded", blob, mode: got.mode, readAround: got.readAround });
}

async function unlock(r: Extract<DirectRequest, { op: "unlock" }>): Promise<void> {
  const dataKey = await openSealedDataKey(await loadCore(), decodeSealedHeader(r.header), { passphrase: r.passphrase });
  scope.postMessage({ type: "unlocked", dataKey }, [dataKey.buffer]);
}

async function seal(r: Extract<DirectRequest, { op: "seal" }>): Promise<void> {
  const sealer = await Sealer.create(await loadCore(), { passphrase: r.passphrase }, r.file);
  const pieces: Uint8Array<ArrayBuffer>[] = [];
  for (let at = 0; at < sealer.storedSize; at += SEAL_STEP) pieces.push(await sealer.read(at, Math.min(sealer.storedSize, at + SEAL_STEP)));
  scope.postMessage({ type: "sealed", blob: new Blob(pieces), header: sealer.metadata });
}
