// Writing one object part: the body streams through block by block, the WASM core encodes and
// frames each block, and every shard file streams to its node with a known length. Memory is a
// block buffer plus at most one block per shard in flight, whatever the part's size.
import { errorText } from "../errors";
import { giveBuffer, takeBuffer } from "../shared/buffer-pool";
import { toBase64 } from "../shared/bytes";
import type { GatewayConfig } from "../config";
import type { Core, PartLayout } from "../shared/core-api";
import { WriteAbandoned } from "../shared/storage-errors";
import { WriteQuorumError } from "./errors";
import { shardKey, type StorageNode } from "../shared/nodes";
import { placeShards } from "./placement";
import { ExactReader } from "./exact-reader";
import { GuardedNode } from "../shared/node-health";
import { ShardSink } from "./shard-sink";
import { withinStall } from "../shared/bounded";

export interface WrittenPart {
  size: number;
  /** MD5 of the part's bytes (the ETag of a single PUT). */
  md5: Uint8Array;
  layout: PartLayout;
  /** Shard files that could not be written (the part is under-replicated; heal them). */
  missedShards: number[];
}

/** Sees every byte of the part once, in order (S3 checksums are computed here). */
export type ByteObserver = (bytes: Uint8Array) => void;

/** Where a part's bytes come from: the client's request body, or a stream the gateway opened (a copy's source). */
export type PartSource = "request" | "copy";

export async function writePart(
  config: GatewayConfig,
  core: Core,
  body: ReadableStream<Uint8Array> | null,
  size: number,
  observe: ByteObserver,
  source: PartSource = "request",
  hashMd5 = true,
): Promise<WrittenPart> {
  const reader = new ExactReader(body, source === "request");
  try {
    if (size <= config.inlineBytes) return await writeInline(reader, size, observe);
    return await writeSharded({ config, core, reader, size, observe, hashMd5 });
  } catch (e) {
    // A client's body is read to its end before the error goes out; a copy's source is closed.
    if (source === "copy") await reader.cancel();
    else if (!reader.ended) await reader.drain();
    throw e;
  }
}

async function writeInline(reader: ExactReader, size: number, observe: ByteObserver): Promise<WrittenPart> {
  const bytes = await reader.fillInPlace(new Uint8Array(size));
  await reader.expectEnd();
  observe(bytes);
  const md5 = new Uint8Array(await crypto.subtle.digest("MD5", bytes));
  return { size, md5, layout: { type: "inline", data: toBase64(bytes) }, missedShards: [] };
}

/** A part written as shard files. `hashMd5` false: no MD5 of the bytes (an encrypted part's ETag is its plaintext's); `md5` is then empty. */
interface ShardedWrite {
  config: GatewayConfig;
  core: Core;
  reader: ExactReader;
  size: number;
  observe: ByteObserver;
  hashMd5: boolean;
}

async function writeSharded(w: ShardedWrite): Promise<WrittenPart> {
  const { config, core, reader, size, observe, hashMd5 } = w;
  const { dataShards: k, parityShards: m } = config;
  const geometry = core.geometry({ size, blockBytes: config.blockBytes, dataShards: k, parityShards: m, chunkBytes: config.chunkBytes });
  const storageId = newStorageId();
  const placement = await placeShards(preferAvailable(config.writableNodes, k + m), storageId, k + m);
  if (geometry.blockCount === 1) {
    try {
      const { md5, missedShards } = await writeOneBlock(w, geometry, storageId, placement);
      return { size, md5, layout: shardedLayout(config, storageId, placement), missedShards };
    } finally {
      geometry.free();
    }
  }
  const sinks = placement.map((node, i) => new ShardSink(node, shardKey(storageId, i), geometry.shardFileBytes, config.nodeStallMs));
  const md5 = new crypto.DigestStream("MD5");
  const md5Writer = md5.getWriter();
  const encoder = core.encoder(geometry);
  try {
    // The body is read straight into this buffer (it moves to a new ArrayBuffer on every fill),
    // one the previous request gave back when there is one.
    let block = takeBuffer(Math.min(config.blockBytes, size));
    for (let len = encoder.nextBlockLength; len > 0; len = encoder.nextBlockLength) {
      const bytes = await reader.fillInPlace(new Uint8Array(block, 0, len));
      block = bytes.buffer as ArrayBuffer;
      observe(bytes);
      if (hashMd5) await md5Writer.write(bytes);
      const writes: [ShardSink, Uint8Array][] = [];
      // The encoder's output views are valid until the next call into the core: writeAll hands
      // them all to their streams (which copy them) before it awaits anything.
      encoder.encode(bytes, (shard, framed) => writes.push([sinks[shard], framed]));
      await ShardSink.writeAll(writes);
      const ok = sinks.filter((s) => !s.failed).length;
      if (ok < config.writeQuorum) throw quorumLost(ok, sinks.length, config);
    }
    await reader.expectEnd();
    giveBuffer(block); // only here: a failed read may have left it with the stream
  } catch (e) {
    // Every upload is aborted with a WriteAbandoned, and what reached the nodes is removed: best
    // effort, and not awaited, since a stalled node must not hold the client's answer.
    const abandoned = new WriteAbandoned(errorText(e));
    for (const sink of sinks) sink.abort(abandoned);
    void cleanup(placement, storageId, sinks).catch(() => {});
    throw e;
  } finally {
    encoder.free();
    geometry.free();
  }
  const written = await ShardSink.closeAll(sinks);
  const missedShards = written.flatMap((ok, i) => (ok ? [] : [i]));
  if (written.length - missedShards.length < config.writeQuorum) {
    void cleanup(placement, storageId, sinks).catch(() => {});
    throw quorumLost(sinks.filter((s) => !s.failed).length, sinks.length, config);
  }
  await md5Writer.close();
  return { size, md5: hashMd5 ? new Uint8Array(await md5.digest) : new Uint8Array(0), layout: shardedLayout(config, storageId, placement), missedShards };
}

function shardedLayout(config: GatewayConfig, storageId: string, placement: readonly StorageNode[]): PartLayout {
  return {
    type: "sharded",
    blockBytes: config.blockBytes,
    dataShards: config.dataShards,
    parityShards: config.parityShards,
    chunkBytes: config.chunkBytes,
    storageId,
    placement: placement.map((n) => n.id),
    partChecksums: [],
  };
}

/**
 * A part of one block (every object of up to a block, 1 MiB by default): the body is read whole
 * and checked for its end first, then each shard file goes to its node as one buffer, in one
 * request. No stream per shard file, no write per block to wait for: streaming a shard file
 * through a FixedLengthStream costs the runtime a pump (and a zeroed buffer) per file. The
 * encoder's views into WASM memory go to the nodes as they are: a node copies a buffer body
 * before its put's first await (shared/nodes.ts StorageNode.put), and all are handed over before the
 * encoder is freed.
 */
async function writeOneBlock(
  { config, core, reader, size, observe, hashMd5 }: ShardedWrite,
  geometry: ReturnType<Core["geometry"]>,
  storageId: string,
  placement: readonly StorageNode[],
): Promise<{ md5: Uint8Array; missedShards: number[] }> {
  const block = takeBuffer(size);
  const bytes = await reader.fillInPlace(new Uint8Array(block, 0, size));
  await reader.expectEnd();
  observe(bytes);
  const files: Uint8Array[] = [];
  const encoder = core.encoder(geometry);
  let stored: Promise<boolean>[];
  try {
    encoder.encode(bytes, (_shard, framed) => files.push(framed));
    stored = placement.map((node, i) =>
      node.put(shardKey(storageId, i), files[i], files[i].length).then(
        () => true,
        () => false,
      ),
    );
  } finally {
    encoder.free();
  }
  const md5 = hashMd5 ? new Uint8Array(await crypto.subtle.digest("MD5", bytes)) : new Uint8Array(0);
  giveBuffer(bytes.buffer as ArrayBuffer);
  const done = new Array<boolean>(stored.length).fill(false);
  await withinStall(Promise.all(stored.map(async (s, i) => (done[i] = await s))), config.nodeStallMs);
  const missedShards = done.flatMap((ok, i) => (ok ? [] : [i]));
  if (done.length - missedShards.length < config.writeQuorum) {
    // Best effort, and not awaited: what a stalled node stores late is removed once it settles.
    void Promise.allSettled(stored)
      .then(() => Promise.allSettled(placement.map((node, i) => node.delete([shardKey(storageId, i)]))))
      .catch(() => {});
    throw quorumLost(done.length - missedShards.length, done.length, config);
  }
  return { md5, missedShards };
}

/** Nodes whose breaker is closed, when there are enough of them; otherwise all of them. */
export function preferAvailable(nodes: readonly StorageNode[], count: number): readonly StorageNode[] {
  const available = nodes.filter((n) => !(n instanceof GuardedNode && n.health.refusing));
  return available.length >= count ? available : nodes;
}

function quorumLost(ok: number, total: number, config: GatewayConfig): WriteQuorumError {
  return new WriteQuorumError(`Only ${ok} of ${total} storage nodes accepted the data; ${config.writeQuorum} are needed.`);
}

/** Removes whatever a failed write left on its nodes (best effort: nothing references it). */
async function cleanup(placement: StorageNode[], storageId: string, sinks: ShardSink[]): Promise<void> {
  await Promise.allSettled(sinks.map((s) => s.done));
  await Promise.allSettled(placement.map((node, i) => node.delete([shardKey(storageId, i)])));
}

/** Unique per written part: node keys are never overwritten in place. Time-prefixed for ops. */
export function newStorageId(): string {
  const now = new Date().toISOString().slice(0, 10).replace(/-/g, "");
  return `${now}/${crypto.randomUUID()}`;
}
