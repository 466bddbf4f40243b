// Objects to and from files: `shardgate get` and `shardgate put` (docs/cli.md, "Objects"), streamed
// both ways. A sealed object (client-side encryption, docs/storage-format.md) is opened or sealed
// here, with the format's one source (bin/lib/pkg/sealed.mjs, the build of client/src/sealed.ts)
// and the WASM core's Argon2id: the gateway gets only ciphertext, never the passphrase or the key.
import { open, rename, rm } from "node:fs/promises";
import { createReadStream, openAsBlob, readFileSync, rmSync, statSync } from "node:fs";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { constants } from "node:os";
import { Readable } from "node:stream";
import { clean, RequestError, UsageError } from "./errors.mjs";
import { bytes } from "./output.mjs";
import { encryptionOf, PASSPHRASE_VAR } from "./secrets.mjs";

/** The header's metadata name (x-amz-meta-…): what marks an object as sealed. */
const SEALED = "x-amz-meta-shardgate-sealed";
/** PutObject's largest object (S3's 5 GiB; larger ones need a multipart upload). */
const MAX_PUT_BYTES = 5 * 1024 ** 3;
/** Stored bytes sealed per piece of a sealed upload's body: 16 segments. */
const SEAL_PIECE_BYTES = 16 * 64 * 1024;

/** Signals that end the CLI (Ctrl-C, kill, a closed terminal): a partial download is removed first. */
const ENDING_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"];

/** The format (loaded only when a sealed object is met). */
const sealedFormat = () => import("./pkg/sealed.mjs");

let coreLoading = null;

/**
 * What client/src/sealed.ts needs of the core (Core.argon2id) for `encryption`: for a passphrase,
 * the WASM core from `ctx.coreDir` (core/pkg, which bin/shardgate.mjs names), loaded once; for a key
 * file nothing. The one-file binary bundles this code without the core's files (no `coreDir`): key
 * files work there, a passphrase is refused with one line.
 */
function coreFor(ctx, encryption) {
  if ("key" in encryption)
    return {
      argon2id: () => {
        throw new Error("a key file derives nothing");
      },
    };
  coreLoading ??= (async () => {
    let bindings;
    let wasm;
    try {
      if (!ctx.coreDir) throw new Error("no core here");
      bindings = await import(new URL("shardgate_core.js", ctx.coreDir).href);
      wasm = readFileSync(new URL("shardgate_core_bg.wasm", ctx.coreDir));
    } catch {
      throw new RequestError(
        "a passphrase needs the WASM core's files (core/pkg), which are not beside this CLI: run `npx shardgate` from the repository, or use a key file.",
      );
    }
    bindings.initSync({ module: wasm });
    return { argon2id: (passphrase, salt, p) => bindings.argon2id(passphrase, salt, p.memoryKiB, p.passes, p.lanes) };
  })();
  return coreLoading;
}

/** The format's errors (WrongPassphrase, CorruptObject) as the CLI's one line, exit status 1; others as they are. */
function asRequestError(e) {
  if (e?.name === "WrongPassphrase" || e?.name === "CorruptObject")
    return new RequestError(`${e.name}: ${clean(e.message)}`, { code: e.name, detail: clean(e.message) });
  return e;
}

/** BUCKET/KEY (an s3:// prefix allowed) as { bucket, key }. */
export function objectOf(text) {
  const path = text.startsWith("s3://") ? text.slice(5) : text;
  const slash = path.indexOf("/");
  if (slash <= 0 || slash === path.length - 1) throw new UsageError(`"${clean(text, 100)}" is not BUCKET/KEY (e.g. photos/2024/img.jpg).`);
  return { bucket: path.slice(0, slash), key: path.slice(slash + 1) };
}

/** --range FIRST-LAST (bytes, both counted, as HTTP's Range) or FIRST- (to the end): { start, end } (end exclusive, or undefined). */
export function parseRange(text) {
  const m = /^(\d+)-(\d*)$/.exec(text);
  const start = m ? Number(m[1]) : Number.NaN;
  const last = m && m[2] !== "" ? Number(m[2]) : null;
  if (!m || !Number.isSafeInteger(start) || (last !== null && !(Number.isSafeInteger(last) && last >= start)))
    throw new UsageError(`--range takes FIRST-LAST or FIRST- (bytes, counted from 0, LAST included), not "${clean(text, 40)}".`);
  return { start, end: last === null ? undefined : last + 1 };
}

/**
 * Writes a stream to `file` (`-`: standard output): into a new file beside it, renamed over it only
 * once every byte is there, so that a failed download leaves no partial file. With `isPrivate` the
 * file is readable by its owner only (decrypted plaintext).
 */
async function writeOut(stream, file, failure, isPrivate) {
  let written = 0;
  /** Every chunk to `write`: a failed read is the format's error or the network's, a failed write the file's. */
  const each = async (write) => {
    const reader = stream.getReader();
    for (;;) {
      let next;
      try {
        next = await reader.read();
      } catch (e) {
        const named = asRequestError(e);
        throw named !== e || e?.exitCode ? named : failure(e);
      }
      if (next.done) return;
      try {
        await write(next.value);
      } catch (e) {
        await reader.cancel(e).catch(() => {});
        throw new RequestError(`cannot write ${clean(file, 100)}: ${clean(e?.message ?? String(e), 100)}.`);
      }
      written += next.value.length;
    }
  };
  if (file === "-") {
    await each(async (chunk) => {
      if (!process.stdout.write(chunk)) await once(process.stdout, "drain");
    });
    return written;
  }
  const partial = `${file}.shardgate-${process.pid}.partial`;
  let handle;
  try {
    handle = await open(partial, "wx", isPrivate ? 0o600 : 0o666);
  } catch (e) {
    throw new UsageError(`cannot write ${clean(file, 100)}: ${clean(e.message, 100)}.`);
  }
  // A signal would end the process with the partial file (a sealed object's decrypted plaintext)
  // left behind: it is removed first, then the CLI exits as the signal would have ended it.
  const onSignal = (signal) => {
    rmSync(partial, { force: true });
    process.exit(128 + constants.signals[signal]);
  };
  for (const signal of ENDING_SIGNALS) process.on(signal, onSignal);
  try {
    await each((chunk) => handle.write(chunk));
    await handle.close();
    handle = null;
    await rename(partial, file);
    return written;
  } catch (e) {
    await handle?.close().catch(() => {});
    await rm(partial, { force: true });
    throw e?.exitCode ? e : new RequestError(`cannot write ${clean(file, 100)}: ${clean(e?.message ?? String(e), 100)}.`);
  } finally {
    for (const signal of ENDING_SIGNALS) process.off(signal, onSignal);
  }
}

/**
 * The object's HEAD. A HEAD's error has no body: it is asked again as a GET (of one byte) for the
 * S3 error document, which names it (NoSuchBucket, AccessDenied, SignatureDoesNotMatch …).
 */
async function headOf(client, bucket, key, query) {
  try {
    return await client.stream("HEAD", [bucket], { key, query });
  } catch (e) {
    if (!(e instanceof RequestError) || e.status === null) throw e;
    const again = await client.stream("GET", [bucket], { key, query, headers: { range: "bytes=0-0" } }).catch((error) => error);
    if (again instanceof RequestError && again.code) throw again;
    await again.body?.cancel().catch(() => {});
    throw e;
  }
}

/** `shardgate get OBJECT FILE`: the object (a version, a range), decrypted here when it is sealed. */
async function get(ctx) {
  const { bucket, key } = objectOf(ctx.args.OBJECT);
  const file = ctx.args.FILE;
  const wanted = ctx.flags.range === undefined ? null : parseRange(ctx.flags.range);
  const client = ctx.client();
  const query = ctx.flags["version-id"] === undefined ? {} : { versionId: ctx.flags["version-id"] };
  const head = await headOf(client, bucket, key, query);
  const etag = head.headers.get("etag");
  // The version HEAD answered for, so that the bytes come from the object the header is of.
  const versionId = ctx.flags["version-id"] ?? head.headers.get("x-amz-version-id") ?? undefined;
  const at = { key, query: versionId === undefined ? {} : { versionId }, headers: etag ? { "if-match": etag } : {} };
  const value = head.headers.get(SEALED);
  // A secret given in any way (SHARDGATE_PASSPHRASE too) says a sealed object is expected.
  const secretGiven = ctx.flags["key-file"] !== undefined || ctx.flags["passphrase-file"] !== undefined || !!ctx.env[PASSPHRASE_VAR];
  let body;
  let got;
  let range = null;
  let size;
  if (value === null) {
    // A passphrase was meant for a sealed object: a plain one in its place is not opened as if it were.
    if (secretGiven)
      throw new RequestError(`CorruptObject: ${bucket}/${clean(key, 100)} carries no ${SEALED} header: it was not sealed.`, { code: "CorruptObject" });
    size = Number(head.headers.get("content-length"));
    if (wanted) at.headers.range = `bytes=${wanted.start}-${wanted.end === undefined ? "" : wanted.end - 1}`;
    got = await client.stream("GET", [bucket], at);
    const ranged = /^bytes (\d+)-(\d+)\/\d+$/.exec(got.headers.get("content-range") ?? "");
    if (got.status === 206 && ranged) range = { start: Number(ranged[1]), end: Number(ranged[2]) + 1 };
    body = got.body;
  } else {
    const sealed = await sealedFormat();
    const header = (() => {
      try {
        return sealed.decodeHeader(value);
      } catch (e) {
        throw asRequestError(e);
      }
    })();
    const length = Number(head.headers.get("content-length"));
    const stored = sealed.storedSize(header.size, header.segmentBytes);
    if (length !== stored)
      throw new RequestError(`CorruptObject: the stored object is ${length} bytes, its header says ${stored}: truncated or extended.`, {
        code: "CorruptObject",
      });
    const encryption = await encryptionOf(ctx, `${bucket}/${key}`);
    if (!encryption)
      throw new UsageError(
        `${bucket}/${clean(key, 100)} is sealed (client-side encryption): give --passphrase-file FILE, --key-file FILE or ${PASSPHRASE_VAR}.`,
      );
    size = header.size;
    const start = wanted?.start ?? 0;
    const end = Math.min(wanted?.end ?? size, size);
    // As S3 answers a range of a plain object: one starting at or past the end (any, of an empty object) is not satisfiable.
    if (wanted && start >= size) throw new RequestError("InvalidRange: The requested range is not satisfiable", { code: "InvalidRange", status: 416 });
    let dataKey;
    try {
      dataKey = await sealed.dataKeyOf(await coreFor(ctx, encryption), header, encryption);
    } catch (e) {
      throw asRequestError(e);
    }
    const covering = sealed.cipherRange(start, end, size, header.segmentBytes);
    got = await client.stream("GET", [bucket], { ...at, headers: { ...at.headers, range: `bytes=${covering.start}-${covering.end - 1}` } });
    body = sealed.openingStream(got.body, dataKey, header, covering, end - start);
    if (wanted) range = { start, end };
  }
  const sealedNote = value === null ? "" : " (sealed: decrypted and authenticated here)";
  const written = await writeOut(body, file, got.failure, value !== null);
  if (file === "-") return;
  const answer = { bucket, key, file, bytes: written, size, sealed: value !== null, ...(range ? { range } : {}), ...(versionId ? { versionId } : {}) };
  const part = range ? `bytes ${range.start}-${range.end - 1} of ${size}` : `${written} bytes`;
  ctx.print(answer, () => `${clean(bucket, 63)}/${clean(key, 200)} → ${clean(file, 200)}: ${part} (${bytes(written)})${sealedNote}`);
}

/** Every aws-chunked chunk of an upload but the last is this long, so that the body's length is known before it is sent. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * `body` (a stream of `length` bytes) as an aws-chunked body with its SHA-256 in the trailer
 * (STREAMING-UNSIGNED-PAYLOAD-TRAILER, as the AWS CLI sends): the gateway checks what it received
 * against it (BadDigest otherwise) and keeps it as the object's checksum, which is also the proof of
 * integrity object lock's retention asks for. A file that changes while it is sent fails the upload.
 */
function withChecksum(body, length) {
  const trailer = (digest) => `0\r\nx-amz-checksum-sha256:${digest}\r\n\r\n`;
  const framed = (n) => n.toString(16).length + 4 + n;
  const encoded =
    Math.floor(length / CHUNK_BYTES) * framed(CHUNK_BYTES) + (length % CHUNK_BYTES ? framed(length % CHUNK_BYTES) : 0) + trailer("=".repeat(44)).length;
  const hash = createHash("sha256");
  const reader = body.getReader();
  /** What the source gave that is not sent yet: pieces, `held` bytes in all. */
  let pieces = [];
  let held = 0;
  let ended = false;
  const chunked = new ReadableStream(
    {
      async pull(controller) {
        while (!ended && held < CHUNK_BYTES) {
          const { done, value } = await reader.read();
          if (done) ended = true;
          else {
            pieces.push(value);
            held += value.length;
          }
        }
        if (held === 0) {
          controller.enqueue(Buffer.from(trailer(hash.digest("base64"))));
          return controller.close();
        }
        const all = Buffer.concat(pieces, held);
        const chunk = all.subarray(0, CHUNK_BYTES);
        pieces = chunk.length < all.length ? [all.subarray(chunk.length)] : [];
        held = all.length - chunk.length;
        hash.update(chunk);
        controller.enqueue(Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]));
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  const headers = { "content-encoding": "aws-chunked", "x-amz-decoded-content-length": String(length), "x-amz-trailer": "x-amz-checksum-sha256" };
  return { body: chunked, length: encoded, headers, payloadHash: "STREAMING-UNSIGNED-PAYLOAD-TRAILER" };
}

/** `shardgate put FILE OBJECT`: one PutObject of the file, sealed here first with --encrypt. */
async function put(ctx) {
  const { bucket, key } = objectOf(ctx.args.OBJECT);
  const file = ctx.args.FILE;
  let stat;
  try {
    stat = statSync(file);
  } catch (e) {
    throw new UsageError(`${clean(file, 100)}: ${e.code === "ENOENT" ? "no such file" : clean(e.message, 100)}.`);
  }
  if (!stat.isFile()) throw new UsageError(`${clean(file, 100)} is not a file.`);
  const headers = ctx.flags["content-type"] === undefined ? {} : { "content-type": ctx.flags["content-type"] };
  let body;
  let length;
  if (ctx.flags.encrypt) {
    const encryption = await encryptionOf(ctx, `${bucket}/${key}`, { confirm: true });
    if (!encryption) throw new UsageError(`--encrypt needs a passphrase or key: --passphrase-file FILE, --key-file FILE or ${PASSPHRASE_VAR}.`);
    const sealed = await sealedFormat();
    const sealer = await sealed.Sealer.create(await coreFor(ctx, encryption), encryption, await openAsBlob(file));
    headers[SEALED] = sealer.metadata;
    length = sealer.storedSize;
    let at = 0;
    body = new ReadableStream(
      {
        async pull(controller) {
          if (at >= length) return controller.close();
          const end = Math.min(at + SEAL_PIECE_BYTES, length);
          controller.enqueue(await sealer.read(at, end));
          at = end;
        },
      },
      { highWaterMark: 0 },
    );
  } else {
    // A secret given (SHARDGATE_PASSPHRASE too) means sealing was meant: a forgotten --encrypt must not send the plaintext.
    if (ctx.flags["key-file"] !== undefined || ctx.flags["passphrase-file"] !== undefined || ctx.env[PASSPHRASE_VAR])
      throw new UsageError(`--passphrase-file, --key-file and ${PASSPHRASE_VAR} seal an upload only with --encrypt.`);
    length = stat.size;
    body = Readable.toWeb(createReadStream(file));
  }
  if (length > MAX_PUT_BYTES)
    throw new UsageError(`${clean(file, 100)} is ${bytes(length)}${ctx.flags.encrypt ? " sealed" : ""}: one PutObject takes at most 5 GiB.`);
  const sent = withChecksum(body, length);
  const res = await ctx.client().stream("PUT", [bucket], { key, ...sent, headers: { ...headers, ...sent.headers } });
  await res.body.cancel().catch(() => {});
  const etag = (res.headers.get("etag") ?? "").replace(/"/g, "");
  const versionId = res.headers.get("x-amz-version-id");
  const answer = { bucket, key, etag, size: stat.size, stored: length, sealed: !!ctx.flags.encrypt, ...(versionId ? { versionId } : {}) };
  const note = ctx.flags.encrypt ? ` sealed here: ${bytes(length)} of ciphertext` : "";
  ctx.print(
    answer,
    () =>
      `${clean(file, 200)} → ${clean(bucket, 63)}/${clean(key, 200)}: ${bytes(stat.size)}${note}, ETag ${clean(etag, 80)}${versionId ? `, version ${clean(versionId, 80)}` : ""}`,
  );
}

const string = (desc, metavar) => ({ type: "string", desc, metavar });
const SECRET_FLAGS = {
  "passphrase-file": string(`Read the passphrase from this file (- for standard input); else ${PASSPHRASE_VAR}, else a prompt.`, "FILE"),
  "key-file": string("Use this 32-byte key file instead of a passphrase.", "FILE"),
};

/** The object commands, for the CLI's table (commands.mjs). */
export const objectCommands = [
  {
    words: ["get"],
    args: ["OBJECT", "FILE"],
    summary: "Download an object (BUCKET/KEY) to FILE (- for standard output); a sealed one is decrypted here with its passphrase or key file.",
    flags: {
      "version-id": string("This version of the object.", "ID"),
      range: string("Only bytes FIRST-LAST (counted from 0, LAST included) or FIRST- (to the end); of the plaintext for a sealed object.", "FIRST-LAST"),
      ...SECRET_FLAGS,
    },
    example: "shardgate get photos/2024/img.jpg img.jpg --passphrase-file ~/.photos-passphrase",
    run: get,
  },
  {
    words: ["put"],
    args: ["FILE", "OBJECT"],
    summary: "Upload FILE as an object (BUCKET/KEY) with one PutObject (at most 5 GiB); --encrypt seals it here first (client-side encryption).",
    flags: {
      encrypt: { type: "boolean", desc: "Seal it here: the gateway and the nodes get only ciphertext (docs/storage-format.md)." },
      "content-type": string("The object's Content-Type.", "TYPE"),
      ...SECRET_FLAGS,
    },
    example: "shardgate put img.jpg photos/2024/img.jpg --encrypt --passphrase-file ~/.photos-passphrase",
    run: put,
  },
];
