// A shard file that arrives already coded (the direct path, docs/direct-path.md): streamed to
// its node as it comes, with no decoding or re-encoding, and every chunk's checksum verified on
// the way. A piece is checked before it is passed on, so a file with a bad chunk, or of the wrong
// length, never completes on its node: its upload is aborted and nothing is stored. Its last bytes
// wait for the caller's leave (a commit may have begun meanwhile: services/direct-shards.ts).
import { writeBorrowed } from "../shared/bytes";
import type { ShardVerifier } from "../shared/core-api";
import { BODY_PIECE_BYTES, PieceReader } from "../shared/piece-reader";
import type { StorageNode } from "../shared/nodes";
import { withinStall } from "../shared/bounded";

/** The shard file was refused: what is wrong with it (the client's error, not the node's). */
export class CodedShardRefused extends Error {}

/** The node had not stored the file by the deadline: the upload was aborted, but it may still complete. */
export class CodedShardLate extends Error {}

/**
 * Stores `body` under `key` on `node` if it is exactly the file `verifier` expects, chunk for chunk.
 * The file goes live on its node only with its last bytes: they are held back until the whole body
 * has come and checked, and then until `publish` (when given) allows it, returning the time (ms
 * since the epoch) by which the node must have the file, or throwing to refuse it. Past that time
 * the write is abandoned.
 */
export async function storeCodedShard(
  node: StorageNode,
  key: string,
  body: ReadableStream<Uint8Array>,
  verifier: ShardVerifier,
  publish?: () => Promise<number>,
): Promise<void> {
  const length = verifier.fileBytes;
  // The runtime's fixed-length stream straight into the node's request (as storage/shard-sink.ts).
  const pipe = new FixedLengthStream(length);
  const writer = pipe.writable.getWriter();
  const stored = node.put(key, pipe.readable, length);
  stored.catch(() => {}); // awaited below, or abandoned with the upload
  const reader = new PieceReader(body, { pieceBytes: BODY_PIECE_BYTES, reuse: true });
  try {
    let received = 0;
    let last: Uint8Array | null = null;
    for (let piece = await reader.read(); piece; piece = await reader.read()) {
      received += piece.length;
      if (received > length) throw new CodedShardRefused(`the shard file is longer than its ${length} bytes`);
      verifier.push(piece);
      if (verifier.failed) throw new CodedShardRefused(`chunk ${verifier.finish().badChunks[0]} of the shard file fails its checksum`);
      // The last piece is copied (the reader reuses its buffer) and held while the body's end is read.
      if (received === length) last = piece.slice();
      else await writeBorrowed(writer, piece); // the runtime copies it: the reader may reuse its buffer
    }
    if (received < length) throw new CodedShardRefused(`the shard file is ${received} bytes, not ${length}`);
    const deadline = publish ? await publish() : Number.POSITIVE_INFINITY;
    const finish = (async () => {
      if (last) await writeBorrowed(writer, last);
      await writer.close();
      await stored;
    })();
    finish.catch(() => {}); // awaited below, or abandoned past the deadline
    // Past the deadline, an error: the upload is then abandoned.
    const late = () => new CodedShardLate(`node ${node.id} did not complete the shard file in time`);
    await (deadline === Number.POSITIVE_INFINITY ? finish : withinStall(finish, Math.max(0, deadline - Date.now()), late));
  } catch (e) {
    await writer.abort(e).catch(() => {});
    // The rest of the body (at most the file's length: its Content-Length was checked) is read
    // away, not cancelled, so that the client gets the answer (api/handle.ts settleUnreadBody).
    try {
      while (await reader.read());
    } catch {
      // the client went away
    }
    throw e;
  }
}
