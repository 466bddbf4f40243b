// Scrub of one object part: are its shard files all there and all sound? Shallow: every shard file
// is on its node at its exact length (HEAD requests, `missingShards`). Deep: also every byte of
// every shard file is read from its node, streamed whole through the core's ShardVerifier (memory
// is one network read per file, whatever its size), so each chunk whose checksum fails is found
// and named. Each bad chunk counts in `shardgate_checksum_failures_total`. The caller heals the
// bad shard files (services/scrub.ts, with services/heal.ts's healObject: rebuilt from the survivors,
// bit-identical to the ones first written).
import { errorText } from "../errors";
import type { GatewayConfig } from "../config";
import { partGeometry, type Core } from "../shared/core-api";
import { metrics } from "../observability/metrics";
import { missingShards } from "./rebuild-part";
import type { ShardedPart } from "./layout";
import { GuardedNode, NodeUnavailableError } from "../shared/node-health";
import { nodesById, shardKey, type StorageNode } from "../shared/nodes";
import { withinStall } from "../shared/bounded";

export type ScrubMode = "deep" | "shallow";

/**
 * Why a shard file is bad: missing (deep: the node does not have it), length (shallow: missing or
 * of the wrong length), error (the node failed), short (ended early), checksum (rotten chunks), or
 * unavailable (its node's circuit breaker is open: not checked; the node likely still has it).
 */
export type ShardFault = "missing" | "length" | "error" | "short" | "checksum" | "unavailable";

export interface ShardProblem {
  shard: number;
  node: string;
  fault: ShardFault;
  /** Deep only: the chunks that failed their checksum. */
  badChunks?: number[];
  error?: string;
}

export interface PartScrub {
  /** Shard files checked. */
  files: number;
  /** Deep only: chunks read and checked, and bytes of shard files streamed through the verifier. */
  chunks: number;
  bytes: number;
  /** Chunks that failed their checksum (deep). */
  badChunks: number;
  /** The bad shard files, in shard order. */
  problems: ShardProblem[];
}

/** Checks one sharded part without changing anything (but the checksum-failure metric). */
export async function scrubPart(config: GatewayConfig, core: Core, part: ShardedPart, mode: ScrubMode): Promise<PartScrub> {
  const { layout } = part;
  const nodes = nodesById(config.nodes);
  // Both modes check lengths (a file that is too long is harmless to reads but not what was
  // written); deep mode does it alongside its reads, so it costs no extra round trip of latency.
  const lengths = missingShards(config, core, part);
  const result: PartScrub = { files: layout.placement.length, chunks: 0, bytes: 0, badChunks: 0, problems: [] };
  const found = new Map<number, ShardProblem>();
  layout.placement.forEach((nodeId, shard) => {
    const node = nodes.get(nodeId);
    if (node instanceof GuardedNode && node.health.refusing) found.set(shard, { shard, node: nodeId, fault: "unavailable" });
  });
  if (mode === "deep") {
    const geometry = core.geometry(partGeometry(part.size, layout));
    try {
      const checks = await Promise.all(
        layout.placement.map((nodeId, shard) =>
          found.has(shard)
            ? { chunks: 0, bytes: 0, problem: null }
            : verifyShardFile(core, geometry, nodes.get(nodeId), nodeId, layout.storageId, shard, config.readStallMs),
        ),
      );
      for (const c of checks) {
        result.chunks += c.chunks;
        result.bytes += c.bytes;
        result.badChunks += c.problem?.badChunks?.length ?? 0;
        if (c.problem) found.set(c.problem.shard, c.problem);
      }
    } finally {
      geometry.free();
    }
  }
  for (const shard of await lengths) {
    if (!found.has(shard)) found.set(shard, { shard, node: layout.placement[shard], fault: "length" });
  }
  result.problems = [...found.values()].sort((a, b) => a.shard - b.shard);
  metrics.add("shardgate_checksum_failures_total", result.badChunks);
  return result;
}

interface FileCheck {
  chunks: number;
  bytes: number;
  problem: ShardProblem | null;
}

/** Streams one whole shard file from its node through a verifier. Never throws. */
async function verifyShardFile(
  core: Core,
  geometry: ReturnType<Core["geometry"]>,
  node: StorageNode | undefined,
  nodeId: string,
  storageId: string,
  shard: number,
  stallMs: number,
): Promise<FileCheck> {
  const verifier = core.shardVerifier(geometry, shard);
  const problem = (fault: ShardFault, extra: Partial<ShardProblem> = {}): ShardProblem => ({ shard, node: nodeId, fault, ...extra });
  try {
    if (!node) return { chunks: 0, bytes: 0, problem: problem("missing", { error: `node ${nodeId} is not configured` }) };
    const length = verifier.fileBytes;
    if (length === 0) return { chunks: 0, bytes: 0, problem: null };
    let body: ReadableStream<Uint8Array> | null;
    try {
      body = await node.get(shardKey(storageId, shard), 0, length);
    } catch (e) {
      return { chunks: 0, bytes: 0, problem: problem(e instanceof NodeUnavailableError ? "unavailable" : "error", { error: errorText(e) }) };
    }
    if (!body) return { chunks: 0, bytes: 0, problem: problem("missing") };
    const reader = body.getReader();
    let error: unknown;
    try {
      for (;;) {
        // Failing when the node sends nothing for stallMs: it stalled mid-file.
        const read = withinStall(reader.read(), stallMs, () => new Error(`the node sent nothing for ${stallMs} ms`));
        const { done, value } = (await read) as ReadableStreamReadResult<Uint8Array>;
        if (done) break;
        verifier.push(value);
      }
    } catch (e) {
      error = e;
      reader.cancel().catch(() => {});
    }
    const v = verifier.finish();
    const counted = { chunks: v.chunks, bytes: v.bytes };
    if (v.badChunks.length > 0)
      return { ...counted, problem: problem("checksum", { badChunks: v.badChunks, ...(error === undefined ? {} : { error: errorText(error) }) }) };
    if (error !== undefined) return { ...counted, problem: problem("error", { error: errorText(error) }) };
    if (v.short) return { ...counted, problem: problem("short") };
    return { ...counted, problem: null };
  } finally {
    verifier.free();
  }
}
