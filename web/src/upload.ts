// Uploads: coded in this browser and sent shard file by shard file (the direct path, direct.ts)
// where the setting and the gateway allow it; otherwise small files in one PUT, large ones as
// multipart uploads with several parts in flight, every body with its CRC32 (computed by the WASM
// core in a Web Worker). A multipart upload or a direct-path session is remembered in localStorage
// (with the file's name, size and modification time), so after a page reload picking the same file
// again resumes it: only the missing parts, or shard files, are sent.
import type { DirectUploadSession, Encryption, UploadProgress } from "../../client/src/index";
import { checksumBlob } from "./checksums";
import { browserCoding, directUpload, sealFile } from "./direct";
import { errorFromText, messageOf, S3Error } from "./errors";
import { objectPath, type Part, type S3Client } from "./s3";
import { SEALED_METADATA } from "./sealing";

export const MULTIPART_THRESHOLD = 8 * 1024 * 1024;
export const MIN_PART_SIZE = 8 * 1024 * 1024;
export const PARTS_IN_FLIGHT = 4;
export const ALGORITHM = "CRC32";
const PART_ATTEMPTS = 3;
const RESUME_PREFIX = "shardgate.upload:";
const DIRECT_PREFIX = "shardgate.direct:";
/** Files this small are stored in their manifest: the gateway would decline the direct path. */
const DIRECT_MIN_BYTES = 4096;
/** Largest file a direct-path session takes (as PutObject); bigger ones go up in parts. */
const DIRECT_MAX_BYTES = 5 * 1024 ** 3;

export type UploadState = "queued" | "uploading" | "completing" | "done" | "failed" | "cancelled";

export interface UploadItem {
  readonly id: number;
  readonly file: File;
  readonly bucket: string;
  readonly key: string;
  readonly size: number;
  state: UploadState;
  /** Bytes stored plus bytes of parts in flight. */
  loaded: number;
  error: string | null;
  multipart: boolean;
  partsTotal: number;
  partsDone: number;
  /** Parts that were already on the gateway when an interrupted upload was resumed. */
  partsResumed: number;
  failedParts: number[];
  speed: number;
  started: number;
  /** Coded in this browser: its shard files, by node. Null on the classic path. */
  direct: DirectProgress | null;
  /** Sealed in this browser (client-side encryption): only ciphertext leaves it. */
  readonly encrypted: boolean;
  /** The passphrase it is sealed with, held in this page's memory until the upload ends (a retry needs it). */
  encryption: Encryption | null;
  /** On the classic path: the ciphertext (sealed in a worker) and its header, sent as one PutObject. */
  sealed: { blob: Blob; header: string } | null;
}

export interface DirectProgress {
  shardsTotal: number;
  shardsSent: number;
  /** Shard files a resumed upload found stored already. */
  shardsResumed: number;
  shardsFailed: number;
  /** Shard file bytes sent and to send, by node. */
  nodes: Record<string, { sent: number; total: number }>;
}

interface ResumeRecord {
  uploadId: string;
  partSize: number;
  algorithm: string;
  created: number;
}

/** Counts requests in flight across all files. */
class Slots {
  private free: number;
  private waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async take(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}

/** Bytes per second over the last few seconds. */
class Speedometer {
  private samples: [number, number][] = [];
  add(bytes: number): number {
    const now = performance.now();
    this.samples.push([now, bytes]);
    while (this.samples.length > 2 && now - (this.samples[0]?.[0] ?? now) > 5000) this.samples.shift();
    const first = this.samples[0];
    if (!first || now - first[0] < 300) return 0;
    return Math.max(0, ((bytes - first[1]) * 1000) / (now - first[0]));
  }
}

function resumeKey(bucket: string, key: string, file: File): string {
  return storageKey(RESUME_PREFIX, bucket, key, file);
}

/** Where an upload of `file` to bucket/key is remembered, under `prefix`. */
function storageKey(prefix: string, bucket: string, key: string, file: File): string {
  return `${prefix}${JSON.stringify([bucket, key, file.name, file.size, file.lastModified])}`;
}

function loadJson<T>(key: string): T | null {
  try {
    const raw = localStorage.getItem(key);
    return raw ? (JSON.parse(raw) as T) : null;
  } catch {
    return null;
  }
}

function saveJson(key: string, value: unknown): void {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // storage full or disabled: the upload still works, it just cannot be resumed
  }
}

function directProgress(progress: UploadProgress): DirectProgress {
  const nodes: DirectProgress["nodes"] = {};
  let sent = 0;
  let resumed = 0;
  let failed = 0;
  for (const s of progress.shards) {
    const node = (nodes[s.node] ??= { sent: 0, total: 0 });
    node.total += s.bytes;
    if (s.state === "sent" || s.state === "stored before") {
      node.sent += s.bytes;
      sent++;
    }
    if (s.state === "stored before") resumed++;
    if (s.state === "failed") failed++;
  }
  return { shardsTotal: progress.shards.length, shardsSent: sent, shardsResumed: resumed, shardsFailed: failed, nodes };
}

function partSizeFor(size: number): number {
  const mib = 1024 * 1024;
  return Math.max(MIN_PART_SIZE, Math.ceil(size / 10_000 / mib) * mib);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The parts of a multipart upload, stored and in flight; update() shows them on its item (loaded: bytes stored plus bytes sent of parts in flight). */
class PartTally {
  private readonly have: Map<number, Part>;
  private readonly inFlight = new Map<number, number>();
  constructor(
    private readonly item: UploadItem,
    stored: Part[],
    private readonly onProgress: () => void,
  ) {
    this.have = new Map(stored.map((p) => [p.partNumber, p]));
  }
  has(n: number): boolean {
    return this.have.has(n);
  }
  parts(): Part[] {
    return [...this.have.values()];
  }
  /** Part `n` is being sent (again): none of its bytes yet. */
  sending(n: number): void {
    this.inFlight.set(n, 0);
  }
  sent(n: number, loaded: number): void {
    this.inFlight.set(n, loaded);
    this.update();
  }
  stored(n: number, part: Part): void {
    this.inFlight.delete(n);
    this.have.set(n, part);
    this.update();
  }
  /** Part `n` is no longer in flight, and not stored (its request failed or was cancelled). */
  dropped(n: number): void {
    this.inFlight.delete(n);
    this.update();
  }
  update(): void {
    const storedBytes = [...this.have.values()].reduce((n, p) => n + p.size, 0);
    this.item.loaded = storedBytes + [...this.inFlight.values()].reduce((a, b) => a + b, 0);
    this.item.partsDone = this.have.size;
    this.onProgress();
  }
}

export class Uploads {
  readonly items: UploadItem[] = [];
  private readonly slots = new Slots(PARTS_IN_FLIGHT);
  private readonly fileSlots = new Slots(3);
  private readonly aborts = new Map<number, AbortController>();
  private readonly overallSpeed = new Speedometer();
  private readonly itemSpeed = new Map<number, Speedometer>();
  private nextId = 1;
  overallSpeedValue = 0;

  constructor(
    private readonly s3: S3Client,
    private readonly onChange: () => void,
    private readonly onFileDone: (item: UploadItem) => void,
  ) {}

  /** Queues files; `relativePath` (folder uploads) is kept under `prefix`. With `encryption`, each is sealed here first. */
  add(bucket: string, prefix: string, files: { file: File; path: string }[], encryption: Encryption | null = null): void {
    for (const { file, path } of files) {
      // A sealed file goes up whole (the direct path's session, or one PutObject of its ciphertext): no multipart resume.
      const multipart = !encryption && file.size > MULTIPART_THRESHOLD;
      const item: UploadItem = {
        id: this.nextId++,
        file,
        bucket,
        key: prefix + path.replace(/^\/+/, ""),
        size: file.size,
        state: "queued",
        loaded: 0,
        error: null,
        multipart,
        partsTotal: multipart ? Math.ceil(file.size / partSizeFor(file.size)) : 1,
        partsDone: 0,
        partsResumed: 0,
        failedParts: [],
        speed: 0,
        started: 0,
        direct: null,
        encrypted: encryption !== null,
        encryption,
        sealed: null,
      };
      this.items.push(item);
      void this.run(item);
    }
    this.onChange();
  }

  /** Totals over the files not cancelled. */
  totals(): { size: number; loaded: number; active: number; failed: number; done: number; count: number } {
    let size = 0;
    let loaded = 0;
    let active = 0;
    let failed = 0;
    let done = 0;
    let count = 0;
    for (const i of this.items) {
      if (i.state === "cancelled") continue;
      count++;
      size += i.size;
      loaded += Math.min(i.loaded, i.size);
      if (i.state === "queued" || i.state === "uploading" || i.state === "completing") active++;
      if (i.state === "failed") failed++;
      if (i.state === "done") done++;
    }
    return { size, loaded, active, failed, done, count };
  }

  cancel(item: UploadItem): void {
    if (item.state === "done" || item.state === "cancelled") return;
    this.aborts.get(item.id)?.abort();
    const wasFailed = item.state === "failed";
    item.state = "cancelled";
    item.error = null;
    item.encryption = null;
    item.sealed = null;
    this.abortDirect(item);
    if (item.multipart) {
      const record = this.recall(item);
      this.forget(item);
      if (record) void this.s3.abortMultipart(item.bucket, item.key, record.uploadId).catch(() => undefined);
    }
    if (wasFailed) this.onChange();
    this.onChange();
  }

  retry(item: UploadItem): void {
    if (item.state !== "failed") return;
    void this.run(item);
  }

  /** Removes finished and cancelled entries from the list. */
  clearFinished(): void {
    for (let i = this.items.length - 1; i >= 0; i--) {
      const s = this.items[i]?.state;
      if (s === "done" || s === "cancelled") this.items.splice(i, 1);
    }
    this.onChange();
  }

  private progress(item: UploadItem): void {
    let meter = this.itemSpeed.get(item.id);
    if (!meter) this.itemSpeed.set(item.id, (meter = new Speedometer()));
    item.speed = meter.add(item.loaded);
    this.overallSpeedValue = this.overallSpeed.add(this.items.reduce((n, i) => n + (i.state === "cancelled" ? 0 : Math.min(i.loaded, i.size)), 0));
    this.onChange();
  }

  private async run(item: UploadItem): Promise<void> {
    const abort = new AbortController();
    this.aborts.set(item.id, abort);
    item.state = "queued";
    item.error = null;
    item.failedParts = [];
    this.onChange();
    const release = await this.fileSlots.take();
    try {
      if (abort.signal.aborted) return;
      item.state = "uploading";
      item.started ||= performance.now();
      this.onChange();
      if (item.encryption) await this.sealedUpload(item, item.encryption, abort.signal);
      else {
        const direct = browserCoding() && item.size > DIRECT_MIN_BYTES && item.size <= DIRECT_MAX_BYTES && (await this.direct(item, abort.signal));
        if (direct || abort.signal.aborted) {
          // done, or cancelled
        } else if (item.multipart) await this.multipart(item, abort.signal);
        else await this.single(item, abort.signal);
      }
      if (abort.signal.aborted) return;
      item.loaded = item.size;
      item.state = "done";
      item.encryption = null;
      item.sealed = null;
      this.progress(item);
      this.onFileDone(item);
    } catch (e) {
      if (abort.signal.aborted || (item.state as UploadState) === "cancelled") return;
      item.state = "failed";
      item.error = messageOf(e);
      this.onChange();
    } finally {
      release();
      this.aborts.delete(item.id);
    }
  }

  /**
   * A sealed upload (client-side encryption, client/src/sealed.ts): by the direct path where this
   * browser codes (the worker seals, codes and sends; where the gateway declines, it puts the
   * ciphertext itself), else sealed whole in a worker and sent as one PutObject. The passphrase
   * reaches only the worker; the gateway gets ciphertext and the header.
   */
  private async sealedUpload(item: UploadItem, encryption: Encryption, signal: AbortSignal): Promise<void> {
    if (item.size > DIRECT_MAX_BYTES) throw new Error("An encrypted file can be at most 5 GiB.");
    if (browserCoding()) {
      await this.direct(item, signal, encryption);
      return;
    }
    if (!("passphrase" in encryption)) throw new Error("The console encrypts with a passphrase only.");
    item.sealed ??= await sealFile(item.file, encryption.passphrase, signal);
    if (!signal.aborted) await this.single(item, signal);
  }

  /** The direct path; false when the gateway declines it (the classic path then runs). A sealed upload is never declined. */
  private async direct(item: UploadItem, signal: AbortSignal, encryption: Encryption | null = null): Promise<boolean> {
    const key = storageKey(DIRECT_PREFIX, item.bucket, item.key, item.file);
    // A sealed upload starts afresh (a new data key): a kept session is only there for Cancel to abort.
    const saved = encryption ? null : loadJson<DirectUploadSession>(key);
    const result = await directUpload(this.s3.origin, this.s3.credentials, item.bucket, item.key, item.file, {
      session: saved,
      encryption,
      signal,
      onSession: (session) => saveJson(key, session),
      onProgress: (progress) => {
        item.direct = directProgress(progress);
        const shardBytes = progress.shards.reduce((n, s) => n + s.bytes, 0);
        const sentBytes = progress.shards.reduce((n, s) => n + (s.state === "sent" || s.state === "stored before" ? s.bytes : 0), 0);
        item.loaded = shardBytes === 0 ? 0 : Math.floor((item.size * sentBytes) / shardBytes);
        this.progress(item);
      },
    });
    if (result.mode === "declined") {
      item.direct = null;
      return false;
    }
    localStorage.removeItem(key);
    return true;
  }

  /** Removes a cancelled direct-path upload's shard files now (the gateway's orphan sweep would, later). */
  private abortDirect(item: UploadItem): void {
    const key = storageKey(DIRECT_PREFIX, item.bucket, item.key, item.file);
    const session = loadJson<DirectUploadSession>(key);
    localStorage.removeItem(key);
    if (session?.mode !== "direct") return;
    const body = JSON.stringify({ upload: session.upload, parts: session.parts.map(({ storageId, placement }) => ({ storageId, placement })) });
    void this.s3.request("POST", objectPath(item.bucket, item.key), { query: { "shardgate-abort": "" }, body }).catch(() => undefined);
  }

  /** One PutObject of the file, or of its ciphertext and header when it was sealed here. */
  private async single(item: UploadItem, signal: AbortSignal): Promise<void> {
    const body = item.sealed?.blob ?? item.file;
    const checksum = await checksumBlob(body, ALGORITHM);
    const headers: Record<string, string> = {
      "content-type": item.file.type || "application/octet-stream",
      [`x-amz-checksum-${ALGORITHM.toLowerCase()}`]: checksum,
      ...(item.sealed ? { [`x-amz-meta-${SEALED_METADATA}`]: item.sealed.header } : {}),
    };
    await this.withRetries(item, signal, async () => {
      const release = await this.slots.take();
      try {
        const res = await this.s3.sendWithProgress(
          "PUT",
          objectPath(item.bucket, item.key),
          {},
          headers,
          body,
          (n) => {
            item.loaded = n;
            this.progress(item);
          },
          signal,
        );
        if (res.status < 200 || res.status >= 300) throw errorFromText(res.status, res.text);
      } finally {
        release();
      }
    });
    item.partsDone = 1;
  }

  /** A multipart upload: the one remembered for this file resumed (only its missing parts sent), or a new one. */
  private async multipart(item: UploadItem, signal: AbortSignal): Promise<void> {
    const upload = await this.resumeOrCreate(item, signal);
    if (!upload) return;
    const { record, stored } = upload;
    const total = Math.max(1, Math.ceil(item.file.size / record.partSize));
    item.partsTotal = total;
    const tally = new PartTally(item, stored, () => this.progress(item));
    tally.update();
    const missing: number[] = [];
    for (let n = 1; n <= total; n++) if (!tally.has(n)) missing.push(n);
    const failed = await this.sendParts(item, signal, record, missing, tally);
    if (signal.aborted) return;
    if (failed.length) {
      item.failedParts = failed.sort((a, b) => a - b);
      throw new Error(
        `${failed.length === 1 ? `Part ${failed[0]} failed` : `${failed.length} parts failed`}: ${item.error ?? "unknown error"} Retry sends only the missing parts.`,
      );
    }
    item.state = "completing";
    this.onChange();
    await this.s3.completeMultipart(item.bucket, item.key, record.uploadId, record.algorithm, tally.parts());
    this.forget(item);
  }

  /** The remembered upload with the parts it has stored, else a new one; null when cancelled while it was created. */
  private async resumeOrCreate(item: UploadItem, signal: AbortSignal): Promise<{ record: ResumeRecord; stored: Part[] } | null> {
    const recalled = this.recall(item);
    const stored = recalled && (await this.storedParts(item, recalled));
    if (recalled && stored) return { record: recalled, stored };
    const record = await this.create(item, signal);
    return record && { record, stored: [] };
  }

  /** The parts an interrupted upload has whole (as its part size says they must be); null when the gateway no longer has it. */
  private async storedParts(item: UploadItem, record: ResumeRecord): Promise<Part[] | null> {
    const { bucket, key, file } = item;
    try {
      const listed = await this.s3.listParts(bucket, key, record.uploadId, record.algorithm);
      const partSize = record.partSize;
      const expected = (n: number) => Math.min(partSize, file.size - (n - 1) * partSize);
      const done = listed.filter((p) => p.partNumber >= 1 && (p.partNumber - 1) * partSize < file.size && p.size === expected(p.partNumber) && p.etag);
      if (item.partsResumed === 0 && item.partsDone === 0) item.partsResumed = done.length;
      return done;
    } catch (e) {
      if (!(e instanceof S3Error) || e.code !== "NoSuchUpload") throw e;
      this.forget(item);
      return null;
    }
  }

  /** Creates a multipart upload and remembers it; null (and the upload aborted) when cancelled meanwhile. */
  private async create(item: UploadItem, signal: AbortSignal): Promise<ResumeRecord | null> {
    const { bucket, key, file } = item;
    const uploadId = await this.s3.createMultipart(bucket, key, file.type, ALGORITHM);
    if (signal.aborted) {
      // Cancelled while the upload was being created: cancel() had no upload id to abort yet.
      void this.s3.abortMultipart(bucket, key, uploadId).catch(() => undefined);
      return null;
    }
    const record = { uploadId, partSize: partSizeFor(file.size), algorithm: ALGORITHM, created: Date.now() };
    this.remember(item, record);
    return record;
  }

  /** Sends the parts numbered `numbers`, as many at a time as the shared slots allow; returns those that failed. */
  private async sendParts(item: UploadItem, signal: AbortSignal, record: ResumeRecord, numbers: number[], tally: PartTally): Promise<number[]> {
    const failed: number[] = [];
    await Promise.all(
      numbers.map(async (n) => {
        const release = await this.slots.take();
        try {
          if (signal.aborted) return;
          tally.stored(n, await this.sendPart(item, signal, record, n, tally));
        } catch (e) {
          tally.dropped(n);
          if (signal.aborted) return;
          if (e instanceof S3Error && e.code === "NoSuchUpload") this.forget(item);
          failed.push(n);
          item.error = messageOf(e);
        } finally {
          release();
        }
      }),
    );
    return failed;
  }

  /** Part `n`: its checksum, then its PUT (retried), its bytes counted as they go. */
  private async sendPart(item: UploadItem, signal: AbortSignal, record: ResumeRecord, n: number, tally: PartTally): Promise<Part> {
    const { uploadId, partSize, algorithm } = record;
    const blob = item.file.slice((n - 1) * partSize, Math.min(item.file.size, n * partSize));
    const checksum = await checksumBlob(blob, algorithm);
    return this.withRetries(item, signal, async () => {
      tally.sending(n);
      const res = await this.s3.sendWithProgress(
        "PUT",
        objectPath(item.bucket, item.key),
        { partNumber: n, uploadId },
        { [`x-amz-checksum-${algorithm.toLowerCase()}`]: checksum },
        blob,
        (loaded) => tally.sent(n, loaded),
        signal,
      );
      if (res.status < 200 || res.status >= 300) {
        tally.dropped(n);
        throw errorFromText(res.status, res.text);
      }
      return { partNumber: n, size: blob.size, etag: res.header("etag") ?? "", checksum } satisfies Part;
    });
  }

  /** Runs one request up to PART_ATTEMPTS times (1 s, 2 s between), except for errors retrying cannot fix. */
  private async withRetries<T>(_item: UploadItem, signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (signal.aborted) throw e;
        const permanent = e instanceof S3Error && e.status >= 400 && e.status < 500 && e.code !== "SlowDown" && e.code !== "RequestTimeout";
        if (permanent || attempt >= PART_ATTEMPTS) throw e;
        await sleep(1000 * 2 ** (attempt - 1));
      }
    }
  }

  private recall(item: UploadItem): ResumeRecord | null {
    try {
      const raw = localStorage.getItem(resumeKey(item.bucket, item.key, item.file));
      if (!raw) return null;
      const r = JSON.parse(raw) as Partial<ResumeRecord>;
      if (typeof r.uploadId !== "string" || typeof r.partSize !== "number" || typeof r.algorithm !== "string") return null;
      return { uploadId: r.uploadId, partSize: r.partSize, algorithm: r.algorithm, created: r.created ?? 0 };
    } catch {
      return null;
    }
  }

  private remember(item: UploadItem, r: ResumeRecord): void {
    try {
      localStorage.setItem(resumeKey(item.bucket, item.key, item.file), JSON.stringify(r));
    } catch {
      // storage full or disabled: the upload still works, it just cannot be resumed
    }
  }

  private forget(item: UploadItem): void {
    localStorage.removeItem(resumeKey(item.bucket, item.key, item.file));
  }
}

/** Uploads interrupted earlier (page closed or reloaded) that can be resumed by picking the file again. */
export function interruptedUploads(): { bucket: string; key: string; name: string; size: number; created: number }[] {
  const out: { bucket: string; key: string; name: string; size: number; created: number }[] = [];
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i);
    if (!k?.startsWith(RESUME_PREFIX)) continue;
    try {
      const [bucket, key, name, size] = JSON.parse(k.slice(RESUME_PREFIX.length)) as [string, string, string, number];
      const r = JSON.parse(localStorage.getItem(k) ?? "{}") as Partial<ResumeRecord>;
      out.push({ bucket, key, name, size, created: r.created ?? 0 });
    } catch {
      // not ours
    }
  }
  return out;
}

/** Files (with their paths) from a drop, walking dropped folders. */
export async function filesFromDrop(dt: DataTransfer): Promise<{ file: File; path: string }[]> {
  const entries = Array.from(dt.items)
    .map((i) => (typeof i.webkitGetAsEntry === "function" ? i.webkitGetAsEntry() : null))
    .filter((e): e is FileSystemEntry => e !== null);
  if (entries.length === 0) return Array.from(dt.files).map((file) => ({ file, path: file.name }));
  const out: { file: File; path: string }[] = [];
  const walk = async (entry: FileSystemEntry, path: string): Promise<void> => {
    if (entry.isFile) {
      const file = await new Promise<File>((res, rej) => (entry as FileSystemFileEntry).file(res, rej));
      out.push({ file, path: path + entry.name });
    } else if (entry.isDirectory) {
      const reader = (entry as FileSystemDirectoryEntry).createReader();
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((res, rej) => reader.readEntries(res, rej));
        if (batch.length === 0) break;
        for (const e of batch) await walk(e, `${path}${entry.name}/`);
      }
    }
  };
  for (const e of entries) await walk(e, "");
  return out;
}
