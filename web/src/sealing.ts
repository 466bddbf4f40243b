// Client-side encryption in the page (client/src/sealed.ts is the format; the Argon2id work runs
// in direct-worker.ts): which objects are sealed, opening one through a presigned URL with its data
// key (the classic path, and share links), and share links themselves, which carry the data key in
// the URL's fragment: browsers never send a fragment, and the console takes it out of the address
// bar (history.replaceState) as soon as it has read it.
import {
  CorruptObjectError,
  decodeSealedHeader as decodeHeader,
  openSealedStream as openingStream,
  SEALED_METADATA,
  sealedCipherRange as cipherRange,
  sealedStoredSize as storedSize,
} from "../../client/src/index";
import { fromBase64, toBase64 } from "../../worker/src/shared/bytes";
import { errorFrom } from "./errors";

export { SEALED_METADATA };

/** The header (x-amz-meta-shardgate-sealed) of an object's user metadata, or null when it is not sealed. */
export function sealedHeaderOf(metadata: Record<string, string>): string | null {
  return metadata[SEALED_METADATA] ?? null;
}

/** The plaintext size a sealed object's header gives (CorruptObjectError for a malformed header). */
export function plainSizeOf(header: string): number {
  return decodeHeader(header).size;
}

/**
 * A sealed object read through `url` (a presigned GET) and decrypted here with its raw data key:
 * plaintext bytes [range.start, range.end) or all of them. Only the stored segments the range
 * touches are fetched, each authenticated before any of its bytes is kept (CorruptObjectError).
 */
export async function openSealedUrl(url: string, dataKey: Uint8Array, type: string, range?: { start: number; end: number }): Promise<Blob> {
  const get = (headers: Record<string, string>) => fetch(url, { headers, credentials: "omit", cache: "no-store" });
  // A whole read is one GET; a range first reads the header (with one byte) to know the stored bytes it needs.
  const first = await get(range ? { range: "bytes=0-0" } : {});
  if (!first.ok) throw await errorFrom(first);
  const value = first.headers.get(`x-amz-meta-${SEALED_METADATA}`);
  if (value === null) throw corrupt("the object carries no encryption header: it is not sealed");
  const header = decodeHeader(value);
  const total = Number(/\/(\d+)$/.exec(first.headers.get("content-range") ?? "")?.[1] ?? first.headers.get("content-length"));
  const expected = storedSize(header.size, header.segmentBytes);
  if (total !== expected) throw corrupt(`the stored object is ${total} bytes, its header says ${expected}: truncated or extended`);
  const start = Math.min(range?.start ?? 0, header.size);
  const end = Math.min(range?.end ?? header.size, header.size);
  const covering = cipherRange(start, end, header.size, header.segmentBytes);
  let stored = first;
  if (range) {
    await first.body?.cancel();
    const etag = first.headers.get("etag");
    stored = await get({ range: `bytes=${covering.start}-${covering.end - 1}`, ...(etag ? { "if-match": etag } : {}) });
    if (!stored.ok) throw await errorFrom(stored);
  }
  const key = await crypto.subtle.importKey("raw", dataKey as Uint8Array<ArrayBuffer>, "AES-GCM", false, ["decrypt"]);
  const reader = openingStream(stored.body ?? new Blob([]).stream(), key, header, covering, end - start).getReader();
  const pieces: Uint8Array[] = [];
  for (;;) {
    const { done, value: piece } = await reader.read();
    if (done) break;
    pieces.push(piece);
  }
  return new Blob(pieces as BlobPart[], { type: type || "application/octet-stream" });
}

function corrupt(message: string): Error {
  return new CorruptObjectError(message);
}

/** What a share link of a sealed object carries, all of it in the fragment. */
export interface SharedObject {
  /** A presigned GET URL of the object, on the gateway. */
  url: string;
  dataKey: Uint8Array;
  name: string;
}

const SHARE_ROUTE = "#/shared?";

const b64url = (bytes: Uint8Array) => toBase64(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

/** A link to this console that opens `shared` in the page: everything after "#", which no browser sends to any server. */
export function shareLink(shared: SharedObject): string {
  const params = new URLSearchParams({ u: shared.url, k: b64url(shared.dataKey), n: shared.name });
  return `${location.origin}${location.pathname}${SHARE_ROUTE}${params.toString()}`;
}

/**
 * The shared object a share link names, read from the address and removed from it at once (the
 * history entry is replaced by the bare console URL), or null when the address names none. Its URL
 * must be on `gateway`: a link cannot make the console fetch from anywhere else.
 */
export function takeSharedObject(gateway: string): SharedObject | { error: string } | null {
  if (!location.hash.startsWith(SHARE_ROUTE)) return null;
  const params = new URLSearchParams(location.hash.slice(SHARE_ROUTE.length));
  history.replaceState(null, "", `${location.pathname}${location.search}`);
  const url = params.get("u") ?? "";
  const key = params.get("k") ?? "";
  const name = (params.get("n") ?? "").replace(/[/\\]/g, "_") || "download";
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return { error: "This share link is incomplete: its download address is missing or cut off." };
  }
  if (target.origin !== new URL(gateway).origin) return { error: "This share link points at another server than this console's gateway: it is not opened." };
  if (!/^[A-Za-z0-9_-]{43}$/.test(key)) return { error: "This share link is incomplete: its key is missing or cut off." };
  const dataKey = fromBase64(key.replace(/-/g, "+").replace(/_/g, "/") + "=");
  return { url: target.toString(), dataKey, name };
}
