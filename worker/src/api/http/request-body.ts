// Small request bodies read whole (XML configurations, the direct path's JSON), never more than a
// bound: a body that goes past it is cancelled and answered with the caller's error.

/** `body` whole, at most `max` bytes; beyond that the rest is cancelled and `tooLarge()` thrown. */
export async function readBodyUpTo(body: ReadableStream<Uint8Array>, max: number, tooLarge: () => Error): Promise<Uint8Array> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  chunks.reduce((at, c) => (bytes.set(c, at), at + c.length), 0);
  return bytes;
}
