// A storage node's listing (storage/s3-node.ts parseNodeListing) is read in one forward scan: a
// hostile or broken node answering many opened and never closed elements costs linear time, where
// the lazy RegExp it replaced was quadratic (issue #29: storage-node operators are in the threat model).
import { describe, expect, it } from "vitest";
import { expectOk, NodeAnswerError, nodeText } from "../../worker/src/shared/nodes";
import { parseNodeListing } from "../../worker/src/storage/s3-node";

describe("a node's listing", () => {
  it("reads keys, times, entities and the continuation token", () => {
    const xml = `<?xml version="1.0"?><ListBucketResult><IsTruncated>true</IsTruncated>
      <Contents><Key>a/b&amp;c</Key><LastModified>2026-01-02T03:04:05.000Z</LastModified></Contents>
      <Contents><Key>d</Key><LastModified>bad</LastModified></Contents>
      <NextContinuationToken>t&lt;1</NextContinuationToken></ListBucketResult>`;
    expect(parseNodeListing(xml)).toEqual({
      files: [
        { key: "a/b&c", modified: Date.parse("2026-01-02T03:04:05.000Z") },
        { key: "d", modified: 0 },
      ],
      cursor: "t<1",
    });
    expect(parseNodeListing(xml.replace("true", "false")).cursor).toBeNull();
  });

  it("8 MiB of opened, never closed elements take linear time", () => {
    const shapes = ["<Contents>".repeat(800_000), `<Contents>${"<Key>".repeat(1_600_000)}</Contents>`, `<Contents><Key>${"<".repeat(8_000_000)}`];
    for (const xml of shapes) {
      const started = performance.now();
      const listing = parseNodeListing(xml);
      const ms = performance.now() - started;
      expect(listing.cursor).toBeNull();
      expect(listing.files.length).toBeLessThanOrEqual(1);
      // Quadratic work over 8 MiB would take hours; linear takes milliseconds (a generous bound for a loaded CI).
      expect(ms).toBeLessThan(2_000);
    }
  });
});

describe("a node's error answer", () => {
  it("is read up to 1 KiB, whatever its size: an endless body is cancelled, not read", async () => {
    let pulled = 0;
    let cancelled = false;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled += 64 * 1024;
        controller.enqueue(new Uint8Array(64 * 1024).fill(0x41));
      },
      cancel() {
        cancelled = true;
      },
    });
    const error = await expectOk(new Response(endless, { status: 500 }), "NODE_X", "GET", "k").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NodeAnswerError);
    expect((error as NodeAnswerError).status).toBe(500);
    expect((error as Error).message).toContain("HTTP 500 AAAA");
    expect(cancelled).toBe(true);
    expect(pulled).toBeLessThanOrEqual(4 * 64 * 1024); // what the stream queued ahead, not 64 MiB or more
  });

  it("a listing past 8 MiB is refused, not read on", async () => {
    const { text, whole } = await nodeText(new Response("<x>".repeat(100)), 30);
    expect(whole).toBe(false);
    expect(text).toBe("<x>".repeat(10));
    expect(await nodeText(new Response("short"), 30)).toEqual({ text: "short", whole: true });
  });
});
