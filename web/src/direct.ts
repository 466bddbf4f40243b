// The direct path in the console (docs/direct-path.md): uploads coded and downloads decoded in
// this browser by a Web Worker (direct-worker.ts), shard files moving straight to where the
// gateway's plan says. A visible setting turns it off; the gateway answers "classic" where it
// cannot be used (small objects, encrypting buckets, encrypted objects) and the worker falls back.
import type { Declined, DirectUploadSession, Encryption, Opening, UploadProgress, UploadResult } from "../../client/src/index";
import type { DirectReply, DirectRequest, ReadAround } from "./direct-worker";
import type { Credentials } from "./s3";

const SETTING_KEY = "shardgate.browserCoding";

/** Whether this browser codes uploads and decodes downloads itself (on unless turned off). */
export function browserCoding(): boolean {
  try {
    return localStorage.getItem(SETTING_KEY) !== "off";
  } catch {
    return false;
  }
}

export function setBrowserCoding(on: boolean): void {
  localStorage.setItem(SETTING_KEY, on ? "on" : "off");
}

export interface DirectUploadHooks {
  session: DirectUploadSession | null;
  onSession(session: DirectUploadSession): void;
  onProgress(progress: UploadProgress): void;
  signal: AbortSignal;
  /** Seal the file in the worker first (client-side encryption): never declined then. */
  encryption: Encryption | null;
}

/** Runs one request in a worker of its own (ended when it answers, or when `signal` aborts). */
function run<T>(request: DirectRequest, signal: AbortSignal | null, handle: (reply: DirectReply, done: (value: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const worker = new Worker(new URL("./direct-worker.ts", import.meta.url), { type: "module" });
    const finish = () => {
      worker.terminate();
      signal?.removeEventListener("abort", aborted);
    };
    const aborted = () => {
      finish();
      reject(new DOMException("The transfer was cancelled.", "AbortError"));
    };
    signal?.addEventListener("abort", aborted);
    worker.onmessage = (e: MessageEvent<DirectReply>) => {
      if (e.data.type === "error") {
        finish();
        // The name says which (WrongPassphrase, CorruptObject …): the views word each their own way.
        const error = new Error(e.data.message);
        error.name = e.data.name;
        reject(error);
        return;
      }
      handle(e.data, (value) => {
        finish();
        resolve(value);
      });
    };
    worker.onerror = (e) => {
      finish();
      reject(new Error(`The direct-path worker stopped: ${e.message}`));
    };
    worker.postMessage(request);
  });
}

/** Uploads `file` by the direct path; "declined" (nothing sent) where the gateway says it cannot be used. */
export function directUpload(
  endpoint: string,
  credentials: Credentials,
  bucket: string,
  key: string,
  file: File,
  hooks: DirectUploadHooks,
): Promise<UploadResult | Declined> {
  const request: DirectRequest = {
    op: "upload",
    origin: endpoint,
    credentials,
    bucket,
    key,
    file,
    contentType: file.type || "application/octet-stream",
    session: hooks.session,
    encryption: hooks.encryption,
  };
  return run<UploadResult | Declined>(request, hooks.signal, (reply, done) => {
    if (reply.type === "session") hooks.onSession(reply.session);
    else if (reply.type === "upload-progress") hooks.onProgress(reply.progress);
    else if (reply.type === "uploaded") done(reply.result);
  });
}

export interface DirectDownload {
  blob: Blob;
  mode: "direct" | "classic";
  readAround: ReadAround[];
}

/** Downloads (a range of) an object by the direct path; a sealed one decrypted with `opening` (its range in plaintext bytes). */
export function directDownload(
  endpoint: string,
  credentials: Credentials,
  bucket: string,
  key: string,
  onProgress: (bytes: number, size: number, readAround: ReadAround[]) => void,
  sealed: { opening: Opening; range?: { start: number; end: number } } | null = null,
): Promise<DirectDownload> {
  const request: DirectRequest = {
    op: "download",
    origin: endpoint,
    credentials,
    bucket,
    key,
    versionId: null,
    opening: sealed?.opening ?? null,
    range: sealed?.range ?? null,
  };
  return run<DirectDownload>(request, null, (reply, done) => {
    if (reply.type === "download-progress") onProgress(reply.bytes, reply.size, reply.readAround);
    else if (reply.type === "downloaded") done({ blob: reply.blob, mode: reply.mode, readAround: reply.readAround });
  });
}

/** The raw data key of a sealed object, its header opened with `passphrase` (Argon2id, in a worker). */
export function unlockSealed(header: string, passphrase: string): Promise<Uint8Array> {
  return run<Uint8Array>({ op: "unlock", header, passphrase }, null, (reply, done) => {
    if (reply.type === "unlocked") done(reply.dataKey);
  });
}

/** `file` sealed with `passphrase` in a worker, for the classic path: the ciphertext and its header (x-amz-meta-shardgate-sealed). */
export function sealFile(file: Blob, passphrase: string, signal: AbortSignal): Promise<{ blob: Blob; header: string }> {
  return run<{ blob: Blob; header: string }>({ op: "seal", file, passphrase }, signal, (reply, done) => {
    if (reply.type === "sealed") done({ blob: reply.blob, header: reply.header });
  });
}
