// Origin storage nodes: where shard files live. A node stores whole shard files under unique keys
// (never overwritten in place) and serves byte ranges of them. The interface and what drivers
// share (shared/: the client library's nodes, which fetch presigned URLs, implement it too); the
// Worker's drivers are in storage/, its counting wrapper in storage/counted-node.ts.

/** R2 bucket binding, S3-compatible endpoint, or a local directory (workerd disk service). */
export type NodeKind = "r2" | "s3" | "disk";

/** A shard file on its way to a node: streamed, or whole. */
export type ShardBody = ReadableStream<Uint8Array> | Uint8Array;

export interface StorageNode {
  readonly id: string;
  readonly kind: NodeKind;
  /**
   * Stores `body` under `key`: the readable side of a FixedLengthStream of exactly `length` bytes,
   * so it goes to the node with its length declared, as R2 and fetch need, without another copy;
   * or, for a shard file written in one go, its bytes: read (copied) before put's first await, so
   * the caller may reuse their memory as soon as put has returned its promise (a view of WASM
   * memory, storage/write-part.ts). Wrappers pass them on before awaiting anything, or copy them.
   */
  put(key: string, body: ShardBody, length: number): Promise<void>;
  /** Bytes [start, end) of `key`, or null when the node does not have it. */
  get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null>;
  delete(keys: string[]): Promise<void>;
  /** The size of `key`, or null when the node does not have it. */
  head(key: string): Promise<number | null>;
  /**
   * One page of the shard files the node holds, in no particular order, from `cursor` (null: the
   * first page); the next page's cursor, or null after the last. For the orphan sweep.
   */
  list(cursor: string | null): Promise<NodeListing>;
  /**
   * A URL that clients may use themselves to GET (one Range) or PUT `key` until it expires:
   * only nodes they can reach have it (S3 nodes configured with "clientUrls": the direct path,
   * docs/direct-path.md). Others are reached through the gateway.
   */
  readonly presign?: (key: string, method: "GET" | "PUT", expiresSeconds: number) => Promise<string>;
}

/** A page of a node's shard files (StorageNode.list): each key as shardKey makes it, and when it was written. */
export interface NodeListing {
  files: { key: string; modified: number }[];
  cursor: string | null;
}

/**
 * A node answered, with an error status: it is up, but cannot serve the request (a 4xx: e.g. its
 * bucket is gone) or is struggling (a 5xx).
 */
export class NodeAnswerError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Throws a NodeAnswerError, with the start of the answer's body, unless `res` is a 2xx. */
export async function expectOk(res: Response, node: string, method: string, key: string): Promise<void> {
  if (res.ok) return;
  // Only the start is read: a node's error body may be of any size, or never end.
  const detail = (await nodeText(res, 1024).catch(() => ({ text: "" }))).text.slice(0, 300);
  throw new NodeAnswerError(res.status, `node ${node}: ${method} ${key}: HTTP ${res.status} ${detail}`);
}

/** At most `limit` bytes of a node's answer as text (the rest cancelled), and whether that was all of it. */
export async function nodeText(res: Response, limit: number): Promise<{ text: string; whole: boolean }> {
  if (!res.body) return { text: "", whole: true };
  const reader = res.body.getReader();
  const pieces: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    const room = limit - total;
    if (value.length > room) {
      pieces.push(value.subarray(0, room));
      total = limit;
      await reader.cancel().catch(() => {});
      return { text: decodePieces(pieces, total), whole: false };
    }
    pieces.push(value);
    total += value.length;
  }
  return { text: decodePieces(pieces, total), whole: true };
}

function decodePieces(pieces: readonly Uint8Array[], total: number): string {
  const all = new Uint8Array(total);
  let at = 0;
  for (const p of pieces) {
    all.set(p, at);
    at += p.length;
  }
  return new TextDecoder().decode(all);
}

/**
 * The body of a node's answer to a ranged GET: null for a 404. A server that ignores Range sends
 * the whole file: that is right only when the range is the whole file, never passed on otherwise.
 */
export async function rangedBody(res: Response, node: string, key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
  if (res.status === 404) {
    await res.body?.cancel();
    return null;
  }
  await expectOk(res, node, "GET", key);
  if (res.status !== 206 && !(start === 0 && Number(res.headers.get("content-length")) === end)) {
    await res.body?.cancel();
    throw new Error(`node ${node}: GET ${key} ignored the Range header`);
  }
  return res.body;
}

/** A node's answer to a DELETE: done, or the file was not there. */
export async function expectDeleted(res: Response, node: string, key: string): Promise<void> {
  await res.body?.cancel();
  if (!res.ok && res.status !== 404) throw new NodeAnswerError(res.status, `node ${node}: DELETE ${key}: HTTP ${res.status}`);
}

const byIdCache = new WeakMap<readonly StorageNode[], ReadonlyMap<string, StorageNode>>();

/** The nodes by id, built once per node list (a configuration's lives as long as its isolate). */
export function nodesById(nodes: readonly StorageNode[]): ReadonlyMap<string, StorageNode> {
  let byId = byIdCache.get(nodes);
  if (!byId) {
    byId = new Map(nodes.map((n) => [n.id, n]));
    byIdCache.set(nodes, byId);
  }
  return byId;
}

/** The node object key of shard file `shard` of a part stored under `storageId`. */
export function shardKey(storageId: string, shard: number): string {
  return `${storageId}/${shard}`;
}

/** A node wrapped by another (counting, guarding, delaying): which node it is stays the inner one's. */
export abstract class WrappedNode implements StorageNode {
  constructor(protected readonly inner: StorageNode) {}

  get id(): string {
    return this.inner.id;
  }

  get kind(): NodeKind {
    return this.inner.kind;
  }

  get presign(): StorageNode["presign"] {
    return this.inner.presign;
  }

  abstract put(key: string, body: ShardBody, length: number): Promise<void>;
  abstract get(key: string, start: number, end: number): Promise<ReadableStream<Uint8Array> | null>;
  abstract delete(keys: string[]): Promise<void>;
  abstract head(key: string): Promise<number | null>;
  abstract list(cursor: string | null): Promise<NodeListing>;
}
