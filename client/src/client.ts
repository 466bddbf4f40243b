// The shardgate client: uploads and downloads whose erasure coding happens here, with the same
// WASM core the gateway runs (docs/direct-path.md). Signed S3-style requests ask the gateway for
// a session or a read plan and commit the result; shard files go straight to where the plan says.
import { AwsClient } from "aws4fetch";
import { toBase64 } from "../../worker/src/shared/bytes";
import type { Core } from "../../worker/src/shared/core-api";
import type {
  DirectCommit,
  DirectCommitted,
  DirectPartPlace,
  DirectReadPlan,
  DirectUploadPart,
  DirectUploadSession,
} from "../../worker/src/shared/direct-protocol";
import { openPlanPart, planNodes } from "./plan-nodes";
import { codePart, type CodedPart, partMd5 } from "./coding";
import { type CoreSource, loadCore } from "./core";
import {
  CorruptObjectError,
  cipherRange,
  dataKeyOf,
  decodeHeader,
  type Encryption,
  type Opening,
  openingStream,
  rewrapHeader,
  SEALED_METADATA,
  Sealer,
  encodeHeader,
  storedSize,
} from "./sealed";

export interface ClientOptions {
  /** The gateway, e.g. "http://127.0.0.1:8787". */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Temporary credentials' session token (x-amz-security-token), with their key and secret. */
  sessionToken?: string;
  region?: string;
  /**
   * The core, instantiated by the caller. Default: the package loads it itself, once, when a call
   * first needs it (from `wasm`, or the .wasm file next to the package).
   */
  core?: Core;
  /** Where the package loads the core's .wasm from, when the caller's bundler does not copy the file next to it. */
  wasm?: CoreSource;
  /** A shard stream silent this long (ms) is read around (default 5 s). */
  readStallMs?: number;
  /** How requests go out (default: the global fetch). */
  fetch?: Fetch;
}

export type Fetch = (request: Request) => Promise<Response>;

/** What an upload has done so far: `onProgress` gets it after every shard file. */
export interface UploadProgress {
  totalBytes: number;
  /** Object bytes coded into shard files. */
  codedBytes: number;
  /** Object bytes whose shard files have all been sent (or given up on). */
  sentBytes: number;
  /** Shard file bytes sent, by node. */
  nodeBytes: Record<string, number>;
  shards: ShardState[];
}

export interface ShardState {
  part: number;
  shard: number;
  node: string;
  bytes: number;
  state: "waiting" | "sending" | "sent" | "stored before" | "failed";
}

/** Every call takes an AbortSignal: once it aborts, the call sends nothing more and rejects with its reason. */
export interface CallOptions {
  signal?: AbortSignal;
}

export interface UploadOptions extends CallOptions {
  contentType?: string;
  metadata?: Record<string, string>;
  onProgress?(progress: UploadProgress): void;
  /** A session this upload began before (resume): shard files already stored are not sent again. */
  session?: DirectUploadSession;
  /** Called with the session once it is open, to keep it for a resume. */
  onSession?(session: DirectUploadSession): void;
  /**
   * Seal the object here (client/src/sealed.ts): the gateway and the nodes get only ciphertext.
   * A sealed upload starts afresh (a kept `session` is not resumed: its files hold another key's ciphertext).
   */
  encryption?: Encryption;
}

/** "classic": the gateway declined the direct path (small object, encrypting bucket) and the object went up with PutObject. */
export interface UploadResult {
  mode: "direct" | "classic";
  etag: string;
  versionId?: string;
}

/** What `uploadDirect` answers when the gateway declines the direct path: nothing was sent. */
export interface Declined {
  mode: "declined";
  reason: string;
}

export interface DownloadOptions extends CallOptions {
  versionId?: string;
  /** Bytes [start, end) of the object only (`end` defaults to its size), as Blob.slice counts them. */
  range?: { start: number; end?: number };
  /**
   * Open a sealed object (uploaded with `encryption`), with its passphrase or key file or its raw
   * data key: sizes and the range count its plaintext.
   */
  encryption?: Opening;
}

export interface Download {
  mode: "direct" | "classic";
  /** The object's size. */
  size: number;
  /** The object bytes `body` carries: [start, end). */
  range: { start: number; end: number };
  etag: string;
  contentType: string | null;
  body: ReadableStream<Uint8Array>;
  /** Shard files read around so far (missing, failed, slow or rotten), by shard and reason. */
  readAround: { part: number; shard: number; why: string }[];
}

/** An S3 error the gateway answered with. */
export class ShardgateError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "ShardgateError";
  }
}

/** Parts whose shard files are sent at once (each part's all together), while the next one codes. */
const PARTS_IN_FLIGHT = 2;

/** Commits sent before a 503 (a node the gateway's check could not read) is given up on. */
const COMMIT_ATTEMPTS = 3;

/** Sends of one shard file before it is given up on (the commit then decides, by write quorum). */
const SHARD_ATTEMPTS = 2;

export class ShardgateClient {
  private readonly aws: AwsClient;
  private readonly send: Fetch;

  constructor(private readonly options: ClientOptions) {
    this.send = options.fetch ?? ((request) => fetch(request));
    this.aws = new AwsClient({
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      sessionToken: options.sessionToken,
      service: "s3",
      region: options.region ?? "us-east-1",
      retries: 0,
    });
  }

  /** Uploads `data` as bucket/key, coding it here; small objects and encrypting buckets go up with one PutObject. */
  async upload(bucket: string, key: string, data: Blob | Uint8Array, options: UploadOptions = {}): Promise<UploadResult> {
    return (await this.uploadOr(bucket, key, data, options, false)) as UploadResult;
  }

  /** As `upload`, but where the gateway declines the direct path nothing is sent: for callers with a classic path of their own. */
  uploadDirect(bucket: string, key: string, data: Blob | Uint8Array, options: UploadOptions = {}): Promise<UploadResult | Declined> {
    return this.uploadOr(bucket, key, data, options, true);
  }

  private async uploadOr(bucket: string, key: string, data: Blob | Uint8Array, options: UploadOptions, decline: boolean): Promise<UploadResult | Declined> {
    const signal = options.signal;
    signal?.throwIfAborted();
    const plain = data instanceof Blob ? data : new Blob([data as Uint8Array<ArrayBuffer>]);
    const path = objectPath(bucket, key);
    const loaded = this.core(); // loads while the session is asked for
    // What is stored: the bytes as given, or sealed here (the plaintext read and encrypted part by part).
    let source: Source = { size: plain.size, read: async (start, end) => new Uint8Array(await plain.slice(start, end).arrayBuffer()) };
    if (options.encryption) {
      const sealer = await Sealer.create(await untilAborted(loaded, signal), options.encryption, plain);
      source = { size: sealer.storedSize, read: (start, end) => sealer.read(start, end) };
      options = { ...options, session: undefined, metadata: { ...options.metadata, [SEALED_METADATA]: sealer.metadata } };
    }
    // A session kept from before resumes only while it lasts, and only for data of its size.
    const kept = options.session;
    const resumed = kept?.mode === "direct" && kept.expires > Date.now() + 60_000 && kept.parts.reduce((n, p) => n + p.size, 0) === source.size ? kept : null;
    const session =
      resumed ?? (await this.json<DirectUploadSession>(`${path}?shardgate-upload`, { method: "POST", body: JSON.stringify({ size: source.size }), signal }));
    if (session.mode === "classic") return decline ? { mode: "declined", reason: session.reason } : this.putClassic(path, source, options);
    options.onSession?.(session);
    const core = await untilAborted(loaded, signal);
    const progress: UploadProgress = {
      totalBytes: source.size,
      codedBytes: 0,
      sentBytes: 0,
      nodeBytes: {},
      shards: session.parts.flatMap((part, p) =>
        part.placement.map((node, shard) => ({ part: p, shard, node, bytes: part.shardFileBytes, state: "waiting" as const })),
      ),
    };
    const report = () => {
      if (!signal?.aborted) options.onProgress?.(progress);
    };
    const md5s: string[] = [];
    // Parts code while earlier ones are sent: at most PARTS_IN_FLIGHT + 1 parts' shard files in memory.
    const sending: Promise<void>[] = [];
    let offset = 0;
    for (const [p, part] of session.parts.entries()) {
      const bytes = await source.read(offset, offset + part.size);
      offset += part.size;
      signal?.throwIfAborted();
      const stored = resumed ? await this.storedShards(part, signal) : new Set<number>();
      const coded = stored.size === part.urls.length ? null : codePart(core, session.geometry, part, bytes);
      md5s.push(coded?.md5 ?? partMd5(core, bytes));
      progress.codedBytes += part.size;
      if (sending.length >= PARTS_IN_FLIGHT) await sending.shift();
      signal?.throwIfAborted();
      const sent = this.sendPart(p, part, coded, stored, progress, report, signal);
      sent.catch(() => {}); // awaited in turn
      sending.push(sent);
    }
    for (const sent of sending) await sent;
    signal?.throwIfAborted();
    const commit: DirectCommit = {
      upload: session.upload,
      parts: session.parts.map(placeOf),
      partMd5s: md5s,
      ...(options.contentType === undefined ? {} : { contentType: options.contentType }),
      ...(options.metadata === undefined ? {} : { metadata: options.metadata }),
    };
    const committed = await this.commit(path, commit, signal);
    return { mode: "direct", ...committed };
  }

  /**
   * Gives up on a session: its shard files are removed now. After the session committed:
   * ShardgateError NoSuchUpload (the object is there, whole).
   */
  async abort(bucket: string, key: string, session: DirectUploadSession, options: CallOptions = {}): Promise<void> {
    if (session.mode !== "direct") return;
    const body = JSON.stringify({ upload: session.upload, parts: session.parts.map(placeOf) });
    const res = await this.signed(`${objectPath(bucket, key)}?shardgate-abort`, { method: "POST", body, signal: options.signal });
    await expectOk(res, options.signal);
  }

  /**
   * Downloads bucket/key (a version of it, a range of it), decoding here; parity stands in for
   * missing or slow shard files. An abort (options.signal) errors the body and cancels every shard request.
   */
  async download(bucket: string, key: string, options: DownloadOptions = {}): Promise<Download> {
    const signal = options.signal;
    signal?.throwIfAborted();
    if (options.encryption) return this.downloadSealed(bucket, key, options.encryption, options);
    const wanted = options.range;
    if (
      wanted &&
      !(
        Number.isSafeInteger(wanted.start) &&
        wanted.start >= 0 &&
        (wanted.end === undefined || (Number.isSafeInteger(wanted.end) && wanted.end > wanted.start))
      )
    )
      throw new RangeError("range: 0 <= start < end, whole numbers");
    const path = objectPath(bucket, key);
    const version = options.versionId === undefined ? "" : `&versionId=${encodeURIComponent(options.versionId)}`;
    const loaded = this.core(); // loads while the plan is asked for
    const plan = await this.json<DirectReadPlan>(`${path}?shardgate-plan${version}`, { method: "GET", signal });
    if (plan.mode === "classic") {
      const headers: Record<string, string> = wanted ? { range: `bytes=${wanted.start}-${wanted.end === undefined ? "" : wanted.end - 1}` } : {};
      const res = await this.signed(`${path}${version ? `?${version.slice(1)}` : ""}`, { method: "GET", headers, signal });
      await expectOk(res, signal);
      const length = Number(res.headers.get("content-length"));
      const ranged = res.status === 206 ? /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers.get("content-range") ?? "") : null;
      const size = ranged ? Number(ranged[3]) : length;
      const range = ranged ? { start: Number(ranged[1]), end: Number(ranged[2]) + 1 } : { start: 0, end: length };
      const etag = (res.headers.get("etag") ?? "").replace(/"/g, "");
      return { mode: "classic", size, range, etag, contentType: res.headers.get("content-type"), body: res.body ?? new Blob([]).stream(), readAround: [] };
    }
    const start = wanted?.start ?? 0;
    const end = Math.min(wanted?.end ?? plan.size, plan.size);
    if (start > 0 && start >= plan.size) throw new ShardgateError(416, "InvalidRange", "The requested range is not satisfiable");
    const core = await untilAborted(loaded, signal);
    // The parts the range touches, and the bytes of each it wants.
    const spans: { part: number; start: number; end: number }[] = [];
    let at = 0;
    for (const [p, part] of plan.parts.entries()) {
      const from = Math.max(start, at);
      const to = Math.min(end, at + part.size);
      if (from < to) spans.push({ part: p, start: from - at, end: to - at });
      at += part.size;
    }
    const readAround: Download["readAround"] = [];
    const nodes = planNodes(plan, (url) => this.url(url), this.send, signal);
    const setup = { nodes, readStallMs: this.options.readStallMs ?? 5_000 };
    let index = 0;
    let source: Awaited<ReturnType<typeof openPlanPart>> | null = null;
    let onAbort: (() => void) | null = null;
    const done = () => {
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      onAbort = null;
      source?.close();
      source = null;
    };
    const body = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          if (!signal) return;
          onAbort = () => {
            done();
            controller.error(signal.reason);
          };
          // Aborted already (in the gap between the core loading and this start): error at once.
          if (signal.aborted) return onAbort();
          signal.addEventListener("abort", onAbort, { once: true });
        },
        pull: async (controller) => {
          try {
            for (;;) {
              if (!source) {
                if (index >= spans.length) {
                  done();
                  return controller.close();
                }
                const { part, start: from, end: to } = spans[index];
                const opened = await openPlanPart(setup, core, plan.parts[part], from, to, (shard, why) => {
                  if (!signal?.aborted) readAround.push({ part, shard, why });
                });
                if (signal?.aborted) {
                  opened.close();
                  return;
                }
                source = opened;
              }
              const piece = await source.next((lent) => lent.slice());
              if (signal?.aborted) return;
              if (piece) return controller.enqueue(piece);
              source.close();
              source = null;
              index += 1;
            }
          } catch (e) {
            if (signal?.aborted) return; // the stream is errored with the signal's reason already
            done();
            throw e;
          }
        },
        cancel: () => done(),
      },
      { highWaterMark: 0 },
    );
    return { mode: "direct", size: plan.size, range: { start, end: Math.max(start, end) }, etag: plan.etag, contentType: plan.contentType, body, readAround };
  }

  /**
   * A sealed object's download: its header (HEAD), then only the stored segments the plaintext
   * range touches, each authenticated before any of its bytes is passed on. WrongPassphraseError
   * when `encryption` does not open it; CorruptObjectError when it is not sealed, or its stored
   * bytes are not what was sealed.
   */
  private async downloadSealed(bucket: string, key: string, encryption: Opening, options: DownloadOptions): Promise<Download> {
    const { signal, range: wanted } = options;
    const loaded = this.core();
    const head = await this.sealedHead(bucket, key, options.versionId, signal);
    const { header } = head;
    const start = wanted?.start ?? 0;
    const end = Math.min(wanted?.end ?? header.size, header.size);
    if (wanted && !(Number.isSafeInteger(start) && start >= 0 && (wanted.end === undefined || (Number.isSafeInteger(wanted.end) && wanted.end > start))))
      throw new RangeError("range: 0 <= start < end, whole numbers");
    if (start > 0 && start >= header.size) throw new ShardgateError(416, "InvalidRange", "The requested range is not satisfiable");
    const dataKey = await dataKeyOf(await untilAborted(loaded, signal), header, encryption);
    const covering = cipherRange(start, end, header.size, header.segmentBytes);
    // The version HEAD answered for, so that the segments come from the object the header is of.
    const versionId = options.versionId ?? head.versionId;
    const stored = await this.download(bucket, key, { signal, range: { start: covering.start, end: covering.end }, ...(versionId ? { versionId } : {}) });
    if (stored.etag !== head.etag) {
      await stored.body.cancel();
      throw new ShardgateError(412, "PreconditionFailed", "the object changed while it was read: download it again");
    }
    const body = openingStream(stored.body, dataKey, header, covering, end - start);
    return { ...stored, size: header.size, range: { start, end }, body };
  }

  /**
   * Re-wraps a sealed object's data key for `next` (a new passphrase or key file) after opening it
   * with `current`: CopyObject onto itself with the new header as its metadata (REPLACE, every other
   * header kept, If-Match its ETag), so no data is read or written by this client. In a versioned
   * bucket the earlier versions keep the old wrapping.
   */
  async rewrap(bucket: string, key: string, current: Encryption, next: Encryption, options: CallOptions = {}): Promise<UploadResult> {
    const signal = options.signal;
    const core = await untilAborted(this.core(), signal);
    const head = await this.sealedHead(bucket, key, undefined, signal);
    const header = await rewrapHeader(core, head.header, current, next);
    const headers: Record<string, string> = {
      "x-amz-copy-source": objectPath(bucket, key),
      "x-amz-metadata-directive": "REPLACE",
      "if-match": `"${head.etag}"`,
    };
    for (const [name, value] of head.response.headers) {
      if (name.startsWith("x-amz-meta-") || KEPT_HEADERS.includes(name)) headers[name] = value;
    }
    headers[`x-amz-meta-${SEALED_METADATA}`] = encodeHeader(header);
    const res = await this.signed(objectPath(bucket, key), { method: "PUT", headers, signal });
    await expectOk(res, signal);
    const etag = /<ETag>"?([^<"]*)"?<\/ETag>/.exec(await res.text())?.[1] ?? "";
    const version = res.headers.get("x-amz-version-id");
    return { mode: "classic", etag, ...(version ? { versionId: version } : {}) };
  }

  /** A sealed object's HEAD: its parsed header, checked against its stored length. */
  private async sealedHead(bucket: string, key: string, versionId: string | undefined, signal: AbortSignal | undefined) {
    const query = versionId === undefined ? "" : `?versionId=${encodeURIComponent(versionId)}`;
    const response = await this.signed(`${objectPath(bucket, key)}${query}`, { method: "HEAD", signal });
    await expectOk(response, signal);
    const value = response.headers.get(`x-amz-meta-${SEALED_METADATA}`);
    if (value === null) throw new CorruptObjectError(`the object carries no x-amz-meta-${SEALED_METADATA} header: it was not sealed`);
    const header = decodeHeader(value);
    const length = Number(response.headers.get("content-length"));
    if (length !== storedSize(header.size, header.segmentBytes))
      throw new CorruptObjectError(
        `the stored object is ${length} bytes, its header says ${storedSize(header.size, header.segmentBytes)}: truncated or extended`,
      );
    const etag = (response.headers.get("etag") ?? "").replace(/"/g, "");
    return { header, etag, versionId: response.headers.get("x-amz-version-id") ?? undefined, response };
  }

  /** The caller's core, or the package's (loaded once, on first use). */
  private core(): Promise<Core> {
    const core = this.options.core ? Promise.resolve(this.options.core) : loadCore(this.options.wasm);
    core.catch(() => {}); // awaited where needed; a classic upload never needs it
    return core;
  }

  /** Shard files of a resumed part already stored whole. */
  private async storedShards(part: DirectUploadPart, signal: AbortSignal | undefined): Promise<Set<number>> {
    const stored = new Set<number>();
    await Promise.all(
      part.urls.map(async (url, shard) => {
        const res = await this.send(new Request(this.url(url), { method: "HEAD", signal })).catch(() => null);
        signal?.throwIfAborted();
        if (res?.ok && Number(res.headers.get("content-length")) === part.shardFileBytes) stored.add(shard);
      }),
    );
    return stored;
  }

  /** Sends a part's shard files, all at once; a file that fails twice is left to the commit's quorum. */
  private async sendPart(
    p: number,
    part: DirectUploadPart,
    coded: CodedPart | null,
    stored: Set<number>,
    progress: UploadProgress,
    report: () => void,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const states = progress.shards.filter((s) => s.part === p);
    await Promise.all(
      part.urls.map(async (url, shard) => {
        const state = states[shard];
        if (stored.has(shard) || !coded) {
          state.state = "stored before";
          return;
        }
        state.state = "sending";
        report();
        for (let attempt = 1; attempt <= SHARD_ATTEMPTS; attempt++) {
          signal?.throwIfAborted();
          const res = await this.send(new Request(this.url(url), { method: "PUT", body: coded.files[shard], signal })).catch(() => null);
          signal?.throwIfAborted(); // an aborted send is not a failed one: nothing is sent again
          await res?.body?.cancel();
          if (res?.ok) {
            state.state = "sent";
            progress.nodeBytes[state.node] = (progress.nodeBytes[state.node] ?? 0) + state.bytes;
            return report();
          }
          if (res && res.status < 500) break; // refused: sending it again changes nothing
        }
        state.state = "failed";
        report();
      }),
    );
    progress.sentBytes += part.size;
    report();
  }

  private async putClassic(path: string, source: Source, options: UploadOptions): Promise<UploadResult> {
    const headers: Record<string, string> = {};
    if (options.contentType !== undefined) headers["content-type"] = options.contentType;
    for (const [name, value] of Object.entries(options.metadata ?? {})) headers[`x-amz-meta-${name}`] = value;
    const body = await source.read(0, source.size);
    // Its SHA-256: the gateway checks the body against it, and object lock's default retention asks for such a proof.
    headers["x-amz-checksum-sha256"] = toBase64(new Uint8Array(await crypto.subtle.digest("SHA-256", body)));
    const res = await this.signed(path, { method: "PUT", headers, body, signal: options.signal });
    await expectOk(res, options.signal);
    const version = res.headers.get("x-amz-version-id");
    return { mode: "classic", etag: (res.headers.get("etag") ?? "").replace(/"/g, ""), ...(version ? { versionId: version } : {}) };
  }

  /** The commit, sent again (up to COMMIT_ATTEMPTS) while the gateway answers 503: a node it had to check did not answer. */
  private async commit(path: string, commit: DirectCommit, signal: AbortSignal | undefined): Promise<DirectCommitted> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.json<DirectCommitted>(`${path}?shardgate-commit`, { method: "POST", body: JSON.stringify(commit), signal });
      } catch (e) {
        if (!(e instanceof ShardgateError && e.status === 503) || attempt >= COMMIT_ATTEMPTS) throw e;
        await sleep(500 * attempt, signal);
      }
    }
  }

  private async json<T>(path: string, init: RequestInit): Promise<T> {
    const res = await this.signed(path, init);
    await expectOk(res, init.signal);
    try {
      return (await res.json()) as T;
    } catch (e) {
      init.signal?.throwIfAborted();
      throw e;
    }
  }

  /** A signed request; when its signal aborts, rejects with the signal's reason. */
  private async signed(path: string, init: RequestInit): Promise<Response> {
    const request = await this.aws.sign(this.url(path), init);
    try {
      return await this.send(request);
    } catch (e) {
      init.signal?.throwIfAborted();
      throw e;
    }
  }

  private url(path: string): string {
    return new URL(path, this.options.endpoint).toString();
  }
}

/** What an upload stores: `size` bytes, read a part at a time. */
interface Source {
  size: number;
  read(start: number, end: number): Promise<Uint8Array<ArrayBuffer>>;
}

/** The stored headers a metadata-replacing copy names again, so that re-wrapping changes only the key's header. */
const KEPT_HEADERS = ["content-type", "content-encoding", "content-disposition", "content-language", "cache-control", "expires"];

function placeOf(part: DirectPartPlace): DirectPartPlace {
  return { storageId: part.storageId, placement: part.placement };
}

function objectPath(bucket: string, key: string): string {
  return `/${encodeURIComponent(bucket)}/${key.split("/").map(encodeURIComponent).join("/")}`;
}

async function expectOk(res: Response, signal?: AbortSignal | null): Promise<void> {
  if (res.ok) return;
  const text = await res.text().catch(() => "");
  signal?.throwIfAborted();
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? `HTTP ${res.status}`;
  const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? text.slice(0, 200);
  throw new ShardgateError(res.status, code, message);
}

/** `promise`, or the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  let timer!: ReturnType<typeof setTimeout>; // set by the executor, which runs at once
  const slept = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return untilAborted(slept, signal).finally(() => clearTimeout(timer));
}
