// Buffers that outlive a request: a GET's shard pieces and a PUT's block buffer, handed to the
// next request instead of allocated afresh (a fresh ArrayBuffer is zeroed and page-faulted in,
// which costs as much as the bytes' copy itself). Buffers are values held by one owner at a time:
// `take` hands one over, `give` takes it back once its owner no longer reads from or into it. A
// buffer may still hold another request's bytes: owners use only the bytes they filled.

/** The most bytes kept idle in the pool (per isolate). */
const MAX_POOLED_BYTES = 16 * 1024 * 1024;
/** Buffers smaller than this are cheap to allocate: not pooled. */
const MIN_POOLED_BYTES = 16 * 1024;

const idle = new Map<number, ArrayBuffer[]>();
/** Every idle buffer, the one given back longest ago first: what makes room for a newer one. */
const byAge = new Set<ArrayBuffer>();
let pooledBytes = 0;

/** A buffer of exactly `bytes`: an idle one of that size, or a new one. */
export function takeBuffer(bytes: number): ArrayBuffer {
  const list = idle.get(bytes);
  const buffer = list?.pop();
  if (!buffer) return new ArrayBuffer(bytes);
  byAge.delete(buffer);
  pooledBytes -= bytes;
  return buffer;
}

/**
 * Hands `buffer` back (its owner is done with it). A detached buffer is ignored. A full pool makes
 * room by dropping the buffers given back longest ago, whatever their size: the pool follows what
 * requests use now (a run of large GETs' pieces never keeps later PUTs' block buffers out).
 */
export function giveBuffer(buffer: ArrayBuffer): void {
  const bytes = buffer.byteLength; // 0 once transferred away
  if (bytes < MIN_POOLED_BYTES || bytes > MAX_POOLED_BYTES) return;
  for (const oldest of byAge) {
    if (pooledBytes + bytes <= MAX_POOLED_BYTES) break;
    const list = idle.get(oldest.byteLength) as ArrayBuffer[];
    list.splice(list.indexOf(oldest), 1);
    byAge.delete(oldest);
    pooledBytes -= oldest.byteLength;
  }
  let list = idle.get(bytes);
  if (!list) idle.set(bytes, (list = []));
  list.push(buffer);
  byAge.add(buffer);
  pooledBytes += bytes;
}
