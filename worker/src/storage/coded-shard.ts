// A shard file that arrives already coded (the browser path, docs/browser-path.md): streamed to
// its node as it comes, with no decoding or re-encoding, and every chunk's checksum verified on
// the way. A piece is checked before it is passed on, so a file with a bad chunk, or of the wrong
// length, never completes on its node: its upload is aborted and nothing is stored.
import { writeBorrowed } from "../bytes";
import type { ShardVerifier } from "../core-api";
import { BODY_PIECE_BYTES, PieceReader } from "../piece-reader";
import type { StorageNode } from "./nodes";

/** The shard file was refused: what is wrong with it (the client's error, not the node's). */
export class CodedShardRefused extends Error {}

/** Stores `body` under `key` on `node` if it is exactly the file `verifier` expects, chunk for chunk. */
export async function storeCodedShard(node: StorageNode, key: string, body: ReadableStream<Uint8Array>, verifier: ShardVerifier): Promise<void> {
  const length = verifier.fileBytes;
  // The runtime's fixed-length stream straight into the node's request (as storage/shard-sink.ts).
  const pipe = new FixedLengthStream(length);
  const writer = pipe.writable.getWriter();
  const stored = node.put(key, pipe.readable, length);
  stored.catch(() => {}); // awaited below, or abandoned with the upload
  const reader = new PieceReader(body, { pieceBytes: BODY_PIECE_BYTES, reuse: true });
  try {
    let received = 0;
    for (let piece = await reader.read(); piece; piece = await reader.read()) {
      received += piece.length;
      if (received > length) throw new CodedShardRefused(`the shard file is longer than its ${length} bytes`);
      verifier.push(piece);
      if (verifier.failed) throw new CodedShardRefused(`chunk ${verifier.finish().badChunks[0]} of the shard file fails its checksum`);
      await writeBorrowed(writer, piece); // the runtime copies it: the reader may reuse its buffer
    }
    if (received < length) throw new CodedShardRefused(`the shard file is ${received} bytes, not ${length}`);
    await writer.close();
    await stored;
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
