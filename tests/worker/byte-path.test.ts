// The write path's byte handling at block size: a request body read straight into the block
// buffer (ExactReader.fillInPlace over a byte stream), pieces that straddle blocks, bodies shorter
// or longer than declared, and shard sinks that wait for all their nodes with one stall timer.
import { describe, expect, it } from "vitest";
import { giveBuffer, takeBuffer } from "../../worker/src/shared/buffer-pool";
import { toS3Error } from "../../worker/src/api/http/error-map";
import { ExactReader } from "../../worker/src/storage/exact-reader";
import type { GatewayConfig } from "../../worker/src/config";
import { core } from "../../worker/src/core";
import { DelayedNode } from "../../worker/src/storage/delayed-node";
import { WriteQuorumError } from "../../worker/src/storage/errors";
import type { ShardBody, StorageNode } from "../../worker/src/shared/nodes";
import { ShardSink } from "../../worker/src/storage/shard-sink";
import { writePart } from "../../worker/src/storage/write-part";

/** A byte stream (BYOB-capable, like a request body) fed with `bytes` in pieces of `sizes`. */
function byteStream(bytes: Uint8Array, sizes: number[], extra = 0): ReadableStream<Uint8Array> {
  const pipe = new IdentityTransformStream();
  const writer = pipe.writable.getWriter();
  void (async () => {
    const all = new Uint8Array(bytes.length + extra);
    all.set(bytes);
    for (let at = 0, i = 0; at < all.length; i++) {
      const n = Math.min(sizes[i % sizes.length], all.length - at);
      await writer.write(all.slice(at, at + n));
      at += n;
    }
    await writer.close();
  })().catch(() => {});
  return pipe.readable;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function pattern(n: number): Uint8Array {
  return Uint8Array.from({ length: n }, (_, i) => (i * 31 + (i >> 8)) & 0xff);
}

/** Reads `total` bytes in blocks of `block` the way writePart does, reusing the moved buffer. */
async function readBlocks(reader: ExactReader, total: number, block: number): Promise<Uint8Array> {
  const out = new Uint8Array(total);
  let buffer = new ArrayBuffer(block);
  for (let at = 0; at < total; at += block) {
    const len = Math.min(block, total - at);
    const filled = await reader.fillInPlace(new Uint8Array(buffer, 0, len));
    expect(filled.length).toBe(len);
    out.set(filled, at);
    buffer = filled.buffer as ArrayBuffer;
  }
  return out;
}

/** `p` fails with an error the S3 API answers with `code`. */
async function expectS3Error(p: Promise<unknown>, code: string): Promise<void> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  expect(toS3Error(e).code).toBe(code);
}

describe("ExactReader.fillInPlace", () => {
  it("reads a byte stream straight into the block, whatever the pieces' sizes", async () => {
    for (const [size, sizes] of [
      [5000, [1]],
      [300_000, [4096]],
      [300_000, [65_536 + 7]],
      [300_000, [100_000]],
      [300_000, [300_000]],
      [300_000, [1, 99_999, 7]],
    ] as const) {
      const body = pattern(size);
      const reader = new ExactReader(byteStream(body, [...sizes]), true);
      const read = await readBlocks(reader, body.length, 64 * 1024);
      expect(same(read, body), String(sizes)).toBe(true);
      await reader.expectEnd();
    }
  });

  it("goes on from bytes a copying fill left over, and copies from a stream made in JS", async () => {
    const body = pattern(200_000);
    const reader = new ExactReader(byteStream(body, [150_000]), true);
    const head = new Uint8Array(1000);
    await reader.fill(head); // copies through a piece: the rest of that piece is left over
    const rest = await readBlocks(reader, body.length - 1000, 64 * 1024);
    expect(same(head, body.subarray(0, 1000))).toBe(true);
    expect(same(rest, body.subarray(1000))).toBe(true);
    await reader.expectEnd();

    const js = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(body.slice(0, 70_000));
        c.enqueue(body.slice(70_000));
        c.close();
      },
    });
    const copied = new ExactReader(js, true);
    expect(same(await readBlocks(copied, body.length, 64 * 1024), body)).toBe(true);
  });

  it("a body shorter than declared is IncompleteBody; a longer one fails the end check", async () => {
    const body = pattern(100_000);
    const short = new ExactReader(byteStream(body, [30_000]), true);
    await expectS3Error(readBlocks(short, 150_000, 64 * 1024), "IncompleteBody");
    expect(short.ended).toBe(true);

    const long = new ExactReader(byteStream(body, [30_000], 10), true);
    expect(same(await readBlocks(long, body.length, 64 * 1024), body)).toBe(true);
    await expectS3Error(long.expectEnd(), "IncompleteBody");
  });

  it("a body that breaks midway is the client's IncompleteBody", async () => {
    const pipe = new IdentityTransformStream();
    const writer = pipe.writable.getWriter();
    void writer.write(pattern(10_000)).catch(() => {});
    void writer.abort(new Error("client went away")).catch(() => {});
    const reader = new ExactReader(pipe.readable, true);
    await expectS3Error(reader.fillInPlace(new Uint8Array(50_000)), "IncompleteBody");
  });
});

/** A node whose PUT reads its body (or, when `stall`, never does), keeping what it got. */
function fakeNode(behaviour: "ok" | "stall" | "fail", id = `fake-${behaviour}`): StorageNode & { stored: Uint8Array | null } {
  const node = {
    id,
    kind: "disk" as const,
    stored: null as Uint8Array | null,
    async put(_key: string, body: ShardBody): Promise<void> {
      if (behaviour === "stall") return new Promise<void>(() => {}); // never reads, never answers
      if (behaviour === "fail") {
        if (body instanceof ReadableStream) await body.cancel();
        throw new Error("node refused");
      }
      node.stored = new Uint8Array(await new Response(body).arrayBuffer());
    },
    get: () => Promise.resolve(null),
    delete: () => Promise.resolve(),
    head: () => Promise.resolve(null),
    list: () => Promise.resolve({ files: [], cursor: null }),
  };
  return node;
}

describe("ShardSink.writeAll / closeAll", () => {
  it("writes every block to every node and closes them all", async () => {
    const nodes = [fakeNode("ok"), fakeNode("ok"), fakeNode("ok")];
    const blocks = [pattern(70_000), pattern(50_000).reverse()];
    const length = blocks[0].length + blocks[1].length;
    const sinks = nodes.map((n, i) => new ShardSink(n, `k/${i}`, length, 10_000));
    for (const block of blocks) await ShardSink.writeAll(sinks.map((s) => [s, block.slice()] as const));
    expect(await ShardSink.closeAll(sinks)).toEqual([true, true, true]);
    expect(await Promise.all(sinks.map((s) => s.done))).toEqual([true, true, true]);
    for (const n of nodes) expect(same(n.stored ?? new Uint8Array(0), new Uint8Array([...blocks[0], ...blocks[1]]))).toBe(true);
  });

  it("a node that stalls or fails is given up (its sink failed), the others finish", async () => {
    const nodes = [fakeNode("ok"), fakeNode("stall"), fakeNode("fail")];
    const block = pattern(64 * 1024);
    const blocks = 4;
    const sinks = nodes.map((n, i) => new ShardSink(n, `k/${i}`, block.length * blocks, 50));
    for (let b = 0; b < blocks; b++) await ShardSink.writeAll(sinks.map((s) => [s, block.slice()] as const));
    expect(await ShardSink.closeAll(sinks)).toEqual([true, false, false]);
    expect(sinks.map((s) => s.failed)).toEqual([false, true, true]);
    expect(nodes[0].stored?.length).toBe(block.length * blocks);
  });
});

describe("writePart, a part of one block (each shard file sent whole)", () => {
  const behaviours = ["ok", "ok", "ok", "ok", "stall", "fail"] as const;
  const configOf = (nodes: StorageNode[]) =>
    ({
      dataShards: 4,
      parityShards: 2,
      blockBytes: 1 << 20,
      chunkBytes: 16384,
      inlineBytes: 4096,
      writableNodes: nodes,
      writeQuorum: 4,
      nodeStallMs: 50,
    }) as unknown as GatewayConfig;

  it("stores the encoder's shard files; a node that stalls or fails is a missed shard, the quorum stands", async () => {
    const nodes = behaviours.map((b, i) => fakeNode(b, `node-${i}`));
    const body = pattern(300_000);
    const written = await writePart(configOf(nodes), core, byteStream(body, [70_000]), body.length, () => {});
    if (written.layout.type !== "sharded") throw new Error("expected a sharded part");
    const placed = written.layout.placement.map((id) => nodes.find((n) => n.id === id) as (typeof nodes)[number]);
    const geometry = core.geometry({ size: body.length, blockBytes: 1 << 20, dataShards: 4, parityShards: 2, chunkBytes: 16384 });
    const expected: Uint8Array[] = [];
    const encoder = core.encoder(geometry);
    encoder.encode(body, (shard, framed) => (expected[shard] = framed.slice()));
    encoder.free();
    geometry.free();
    expect(written.missedShards).toEqual(placed.flatMap((n, i) => (n.id === "node-4" || n.id === "node-5" ? [i] : [])));
    placed.forEach((n, i) => {
      if (!written.missedShards.includes(i)) expect(same(n.stored ?? new Uint8Array(0), expected[i] as Uint8Array)).toBe(true);
    });
    expect(same(written.md5, new Uint8Array(await crypto.subtle.digest("MD5", body)))).toBe(true);
  });

  it("the runtime copies a buffer body as a request is made: the caller's memory may change right after", async () => {
    // DiskNode.put hands fetch a view of WASM memory that the next core call overwrites.
    const memory = new WebAssembly.Memory({ initial: 1 });
    const view = new Uint8Array(memory.buffer, 1000, 20_000).fill(7);
    const request = new Request("http://disk/file", { method: "PUT", body: view });
    view.fill(0xee);
    const sent = new Uint8Array(await request.arrayBuffer());
    expect(sent.length).toBe(20_000);
    expect(sent.every((b) => b === 7)).toBe(true);
  });

  it("a node may keep the bytes across an await only by copying them (a delayed node)", async () => {
    const inner = fakeNode("ok", "inner");
    const bytes = pattern(30_000);
    const put = new DelayedNode(inner, 5).put("k/0", bytes, bytes.length);
    bytes.fill(0); // the caller's again once put has returned
    await put;
    expect(same(inner.stored ?? new Uint8Array(0), pattern(30_000))).toBe(true);
  });

  it("fewer nodes than the write quorum take their file: WriteQuorumError", async () => {
    const nodes = ["ok", "ok", "ok", "fail", "fail", "stall"].map((b, i) => fakeNode(b as "ok" | "fail" | "stall", `node-${i}`));
    const body = pattern(50_000);
    await expect(writePart(configOf(nodes), core, byteStream(body, [8_000]), body.length, () => {})).rejects.toBeInstanceOf(WriteQuorumError);
  });
});

describe("buffer pool", () => {
  it("hands a given-back buffer to the next taker of that size, once; ignores detached and small ones", () => {
    const size = 300_001; // a size no other test in this isolate uses
    const a = takeBuffer(size);
    giveBuffer(a);
    expect(takeBuffer(size)).toBe(a);
    expect(takeBuffer(size)).not.toBe(a); // given once, taken once

    const moved = takeBuffer(size);
    void structuredClone(moved, { transfer: [moved] }); // detached: byteLength 0
    giveBuffer(moved);
    const small = new ArrayBuffer(100);
    giveBuffer(small);
    expect(takeBuffer(size)).not.toBe(moved);
    expect(takeBuffer(100)).not.toBe(small);
  });

  it("makes room by dropping the buffers given back longest ago, whatever their size, and never holds more than its cap", () => {
    // 16 MiB of one size (a run of GETs' pieces), then one of another size (a PUT's block buffer):
    // the newcomer is kept and the oldest of the first size goes.
    const piece = 1_048_577; // sizes no other test in this isolate uses
    const block = 1_048_579;
    const pieces = Array.from({ length: 16 }, () => takeBuffer(piece));
    for (const p of pieces) giveBuffer(p);
    const b = takeBuffer(block);
    giveBuffer(b);
    expect(takeBuffer(block)).toBe(b);
    // Beside it fit at most 14 of the pieces (cap 16 MiB), the ones given back last: the first went.
    const kept = Array.from({ length: 16 }, () => takeBuffer(piece)).filter((k) => pieces.includes(k));
    expect(kept.length).toBeGreaterThan(0);
    expect(kept.length).toBeLessThanOrEqual(Math.floor((16 * 1024 * 1024 - block) / piece));
    expect(kept).toContain(pieces[15]);
    expect(kept).not.toContain(pieces[0]);
  });

  it("a block buffer taken back by a PUT never leaks into what a later read returns", async () => {
    // Two bodies through the same pooled sizes: the second must read as itself, not the first.
    const first = pattern(200_000);
    const second = pattern(200_000).reverse();
    for (const body of [first, second]) {
      const reader = new ExactReader(byteStream(body, [70_000]), true);
      let buffer = takeBuffer(64 * 1024);
      const out = new Uint8Array(body.length);
      for (let at = 0; at < body.length; at += 64 * 1024) {
        const filled = await reader.fillInPlace(new Uint8Array(buffer, 0, Math.min(64 * 1024, body.length - at)));
        out.set(filled, at);
        buffer = filled.buffer as ArrayBuffer;
      }
      giveBuffer(buffer);
      expect(same(out, body)).toBe(true);
    }
  });
});
