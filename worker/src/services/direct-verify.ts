// Checking an upload the client coded itself, before its commit (docs/direct-path.md, "Trust").
// The gateway reads no more than a sample back, and trusts nothing the client says about them:
//   1. every shard file is there with exactly the length the geometry gives (a HEAD each), or is
//      missing, and at least the write quorum of each part is there (missing ones are healed);
//   2. sampled blocks (the first, the last, random others: SHARDGATE_DIRECT_VERIFY_BLOCKS in all)
//      are read twice, once from the data shards and once with as many data shards as the code
//      allows read around, so that every present shard file's chunks of that block are read and
//      their checksums checked, and the two must agree byte for byte: parity that does not match
//      the data cannot be decoded into the same bytes;
//   3. a part whose blocks were all sampled has its MD5 (the ETag the client claimed) checked too.
// Chunks checked when a shard file came through the gateway (storage/coded-shard.ts) were checked
// whole; what was not sampled of files sent elsewhere is checked by scrub and by every read.
import { mapBounded } from "../shared/bounded";
import { hex } from "../shared/bytes";
import { S3Error } from "../s3-error";
import { type ShardedPart, shardFileBytes } from "../storage/layout";
import { nodesById, shardKey } from "../shared/nodes";
import { type LossReason, openPartSource } from "../shared/read-part";
import type { DirectContext } from "./direct-context";

/** HEADs of shard files in flight at once. */
const HEADS_IN_FLIGHT = 16;

/** Verifies the parts' shard files; resolves with each part's missing shards, or throws the S3 error that refuses the commit. */
export async function verifyCodedParts(ctx: DirectContext, parts: ShardedPart[]): Promise<number[][]> {
  const missed = await checkLengths(ctx, parts);
  const blocks = sampleBlocks(ctx, parts);
  const md5s = new Map<number, { hash: DigestStream; writer: WritableStreamDefaultWriter<Uint8Array> }>();
  for (const { part, block, wholePart } of blocks) {
    const bytes = await readBlockBothWays(ctx, parts[part], block, missed[part], part);
    if (!wholePart) continue;
    let md5 = md5s.get(part);
    if (!md5) {
      const hash = new crypto.DigestStream("MD5");
      md5 = { hash, writer: hash.getWriter() };
      md5s.set(part, md5);
    }
    await md5.writer.write(bytes);
  }
  for (const [part, { hash, writer }] of md5s) {
    await writer.close();
    if (hex(new Uint8Array(await hash.digest)) !== parts[part].etag) throw new S3Error("BadDigest", `The MD5 of part ${part + 1} is not the one sent.`);
  }
  return missed;
}

/** Step 1: each part's missing shard files; refuses wrong lengths and parts below the write quorum. */
async function checkLengths(ctx: DirectContext, parts: ShardedPart[]): Promise<number[][]> {
  const nodes = nodesById(ctx.config.nodes);
  const files = parts.flatMap((part, p) => part.layout.placement.map((node, shard) => ({ p, shard, node })));
  const found = await mapBounded(files, HEADS_IN_FLIGHT, async ({ p, shard, node }) => {
    const stored = nodes.get(node);
    if (!stored) throw new S3Error("ServiceUnavailable", `Storage node ${node} is no longer configured.`);
    // A node down now: the file counts as missing (healed later) if the quorum allows.
    return stored.head(shardKey(parts[p].layout.storageId, shard)).catch(() => null);
  });
  const missed: number[][] = parts.map(() => []);
  const lengths = parts.map((part) => shardFileBytes(ctx.core, part));
  files.forEach(({ p, shard }, i) => {
    const length = found[i];
    if (length === null) return void missed[p].push(shard);
    const expected = lengths[p];
    if (length !== expected) throw new S3Error("BadDigest", `Shard file ${shard} of part ${p + 1} is ${length} bytes, not ${expected}.`);
  });
  missed.forEach((m, p) => {
    const stored = parts[p].layout.placement.length - m.length;
    if (stored < ctx.config.writeQuorum) {
      throw new S3Error("InvalidRequest", `Only ${stored} shard files of part ${p + 1} are stored; ${ctx.config.writeQuorum} are needed.`);
    }
  });
  return missed;
}

interface SampledBlock {
  part: number;
  block: number;
  /** Every block of the part is sampled: its MD5 can be checked. */
  wholePart: boolean;
}

/** Step 2's sample, in object order: the first and the last block, and random others. */
function sampleBlocks(ctx: DirectContext, parts: ShardedPart[]): SampledBlock[] {
  const counts = parts.map((p) => Math.max(1, Math.ceil(p.size / p.layout.blockBytes)));
  const all: [number, number][] = counts.flatMap((n, part) => Array.from({ length: n }, (_, block): [number, number] => [part, block]));
  const want = Math.min(all.length, ctx.config.direct.verifyBlocks);
  const chosen = new Set<number>([0, all.length - 1].slice(0, want));
  const random = new Uint32Array(1);
  while (chosen.size < want) chosen.add(crypto.getRandomValues(random)[0] % all.length);
  const picked = [...chosen].sort((a, b) => a - b).map((i) => all[i]);
  const perPart = new Map<number, number>();
  for (const [part] of picked) perPart.set(part, (perPart.get(part) ?? 0) + 1);
  return picked.map(([part, block]) => ({ part, block, wholePart: perPart.get(part) === counts[part] }));
}

/**
 * Step 2 for one block: its bytes read from the data shards, and again around as many present data
 * shards as the code can spare, must agree. Any chunk failing its checksum refuses the commit.
 */
async function readBlockBothWays(ctx: DirectContext, part: ShardedPart, block: number, missing: number[], index: number): Promise<Uint8Array> {
  const { layout } = part;
  const start = block * layout.blockBytes;
  const end = Math.min(part.size, start + layout.blockBytes);
  const present = layout.placement.map((_, shard) => shard).filter((s) => !missing.includes(s));
  const spare = present.length - layout.dataShards;
  const aroundData = present.filter((s) => s < layout.dataShards).slice(0, spare);
  const first = await readRange(ctx, part, start, end, missing, index);
  const second = await readRange(ctx, part, start, end, [...missing, ...aroundData], index);
  if (first.length !== second.length || first.some((b, i) => b !== second[i])) {
    throw new S3Error("BadDigest", `Block ${block + 1} of part ${index + 1}: the parity shards do not match the data shards.`);
  }
  return first;
}

async function readRange(ctx: DirectContext, part: ShardedPart, start: number, end: number, avoid: number[], index: number): Promise<Uint8Array> {
  const lost: { shard: number; why: LossReason }[] = [];
  const events = { shardLost: (_: string, shard: number, why: LossReason) => void lost.push({ shard, why }) };
  const out = new Uint8Array(end - start);
  let at = 0;
  try {
    // Patient reads: the files this check names, waited for (a busy node is not read around).
    const setup = { nodes: ctx.config.nodes, readStallMs: ctx.config.readStallMs, hedge: false };
    const source = await openPartSource(setup, ctx.core, part, start, end, events, avoid);
    const copy = (piece: Uint8Array) => {
      out.set(piece, at);
      return { bytes: piece.length };
    };
    try {
      for (let got = await source.next(copy); got; got = await source.next(copy)) at += got.bytes;
    } finally {
      source.close();
    }
  } catch (e) {
    if (lost.length === 0) throw e;
  }
  const bad = lost.find((l) => l.why === "checksum" || l.why === "missing");
  if (bad) throw new S3Error("BadDigest", `Shard file ${bad.shard} of part ${index + 1} ${bad.why === "missing" ? "is gone" : "fails its checksums"}.`);
  if (lost.length > 0 || at !== out.length)
    throw new S3Error("ServiceUnavailable", "A storage node did not answer while the upload was verified; commit again.");
  return out;
}
