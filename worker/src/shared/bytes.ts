// Small byte helpers shared across layers, and with the client library and the console.

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * Writes `bytes` into one of the runtime's own writable streams (a FixedLengthStream's). workerd
 * copies a chunk inside `write()` itself, so `bytes` may be a view that changes as soon as this
 * returns: a reused buffer, or a view of the core's WASM memory. That saves a copy and an
 * allocation per piece on the GET and PUT paths; tests/worker/runtime-streams.test.ts checks that
 * the runtime still copies.
 */
export function writeBorrowed(writer: WritableStreamDefaultWriter<Uint8Array>, bytes: Uint8Array): Promise<void> {
  return writer.write(bytes);
}

export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export function fromBase64(b64: string): Uint8Array {
  const s = atob(b64);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
