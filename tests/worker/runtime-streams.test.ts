// What the byte path assumes of the runtime's own streams (worker/src/shared/bytes.ts writeBorrowed):
// a chunk written into a FixedLengthStream is copied inside write(), so the caller may change or
// reuse its buffer (or hand a view of WASM memory) as soon as write() returns. GET responses and
// shard uploads rely on it; if a runtime update stopped copying, this fails before data does.
// Likewise a Response made of a view of WASM memory copies it as it is made (api/s3/get.ts answers
// a small body straight from the core's memory, which the next read reuses).
import { describe, expect, it } from "vitest";
import { writeBorrowed } from "../../worker/src/shared/bytes";

describe("the runtime's writable streams", () => {
  it("copy a written chunk inside write(): the buffer may change right after", async () => {
    const pieces = 8;
    const size = 64 * 1024;
    const fixed = new FixedLengthStream(pieces * size);
    const received = new Response(fixed.readable).arrayBuffer();
    const writer = fixed.writable.getWriter();
    const buffer = new Uint8Array(size);
    for (let i = 0; i < pieces; i++) {
      buffer.fill(i + 1);
      const written = writeBorrowed(writer, buffer);
      buffer.fill(0xee); // overwritten before the write completes
      await written;
    }
    await writer.close();
    const bytes = new Uint8Array(await received);
    expect(bytes.length).toBe(pieces * size);
    for (let i = 0; i < pieces; i++) {
      const piece = bytes.subarray(i * size, (i + 1) * size);
      expect(piece.every((b) => b === i + 1)).toBe(true);
    }
  });

  it("copy a buffer body as a Response is made: a view of WASM memory may change right after", async () => {
    const memory = new WebAssembly.Memory({ initial: 2 });
    const view = new Uint8Array(memory.buffer, 1000, 70_000);
    view.fill(7);
    const response = new Response(view);
    view.fill(0xee); // the core's next read reuses its memory
    memory.grow(1); // and may grow it (the old buffer is detached)
    const body = new Uint8Array(await response.arrayBuffer());
    expect(body.length).toBe(70_000);
    expect(body.every((b) => b === 7)).toBe(true);
  });
});
