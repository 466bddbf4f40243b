// A ranged read of a part (shared/read-part.ts) as a stream, for the Worker's readers that want
// one: a copy's source, a heal.
import { openPartSource, type RangeSource } from "../shared/read-part";

export async function openPartRange(...args: Parameters<typeof openPartSource>): Promise<ReadableStream<Uint8Array>> {
  return sourceStream(await openPartSource(...args));
}

/** A RangeSource as a pull stream: nothing is read before the consumer asks. */
export function sourceStream(source: RangeSource): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const piece = await source.next((lent) => lent.slice());
        if (piece) controller.enqueue(piece);
        else controller.close();
      },
      cancel: () => source.close(),
    },
    { highWaterMark: 0 },
  );
}
