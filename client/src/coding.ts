// Coding one part of an upload here, as storage/write-part.ts does in the gateway: block by block
// through the core's encoder, each shard's framed pieces appended to its file, and the part's MD5.
import { hex } from "../../worker/src/shared/bytes";
import type { Core } from "../../worker/src/shared/core-api";
import type { DirectGeometry, DirectUploadPart } from "../../worker/src/shared/direct-protocol";

/** A part coded: one shard file per shard (checksums included), and the MD5 of the part's bytes. */
export interface CodedPart {
  files: Uint8Array<ArrayBuffer>[];
  md5: string;
}

export function codePart(core: Core, geometry: DirectGeometry, part: DirectUploadPart, bytes: Uint8Array): CodedPart {
  const layout = core.geometry({ size: part.size, ...geometry });
  const encoder = core.encoder(layout);
  try {
    const files = part.urls.map(() => new Uint8Array(part.shardFileBytes));
    const filled = files.map(() => 0);
    let at = 0;
    for (let len = encoder.nextBlockLength; len > 0; len = encoder.nextBlockLength) {
      encoder.encode(bytes.subarray(at, at + len), (shard, framed) => {
        files[shard].set(framed, filled[shard]);
        filled[shard] += framed.length;
      });
      at += len;
    }
    if (filled.some((n) => n !== part.shardFileBytes)) throw new Error("the core coded shard files of another length than the session's");
    return { files, md5: partMd5(core, bytes) };
  } finally {
    encoder.free();
    layout.free();
  }
}

/** The hex MD5 of a part's bytes (its ETag), from the core: browsers have no MD5. */
export function partMd5(core: Core, bytes: Uint8Array): string {
  const md5 = core.md5();
  md5.update(bytes);
  return hex(md5.digest());
}
