// Client-side encryption's format (client/src/sealed.ts, docs/storage-format.md "Client-side
// encryption") without a gateway: the range math, the header, the KDF's bounds through the core, and
// sealed bytes opened, tampered with, reordered, cut short and spliced, all in memory.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  CorruptObjectError,
  type Encryption,
  type Opening,
  type SealedHeader,
  Sealer,
  TAG_BYTES,
  WrongPassphraseError,
  cipherRange,
  dataKeyOf,
  decodeHeader,
  encodeHeader,
  openDataKey,
  openingStream,
  rewrapHeader,
  segmentCount,
  storedSize,
} from "../../client/src/sealed";
import * as bindings from "../../core/pkg/shardgate_core.js";
import { Core } from "../../worker/src/shared/core-api";
import { randomBytes } from "../shared/core-suite";

const memory = bindings.initSync({ module: readFileSync(new URL("../../core/pkg/shardgate_core_bg.wasm", import.meta.url)) }).memory;
const core = new Core(bindings, memory);
/** A cheap Argon2id cost for the tests (the default's 64 MiB is exercised once below). */
const FAST = { memoryKiB: 64, passes: 1, lanes: 1 };
const PASS: Encryption = { passphrase: "correct horse battery staple", kdf: FAST };

describe("range math", () => {
  const S = 100; // plaintext bytes per segment; stored segments are 116 bytes
  const F = S + TAG_BYTES;

  it("stored sizes: one tag per segment, an empty object one empty segment", () => {
    expect(segmentCount(0, S)).toBe(1);
    expect(storedSize(0, S)).toBe(16);
    expect(storedSize(1, S)).toBe(17);
    expect(storedSize(100, S)).toBe(116);
    expect(storedSize(101, S)).toBe(133);
    expect(storedSize(300, S)).toBe(348);
    expect(storedSize(65_520 * 3, 65_520)).toBe(3 * 65_536);
  });

  it("a plaintext range maps to exactly the stored segments it touches", () => {
    const size = 350; // segments 0..3, the last 50 bytes
    // Inside one segment.
    expect(cipherRange(10, 20, size, S)).toEqual({ first: 0, last: 0, start: 0, end: F, skip: 10 });
    // First byte, last byte.
    expect(cipherRange(0, 1, size, S)).toEqual({ first: 0, last: 0, start: 0, end: F, skip: 0 });
    expect(cipherRange(349, 350, size, S)).toEqual({ first: 3, last: 3, start: 3 * F, end: 3 * F + 50 + 16, skip: 49 });
    // Exactly one whole segment, and one byte either side of a boundary.
    expect(cipherRange(100, 200, size, S)).toEqual({ first: 1, last: 1, start: F, end: 2 * F, skip: 0 });
    expect(cipherRange(99, 101, size, S)).toEqual({ first: 0, last: 1, start: 0, end: 2 * F, skip: 99 });
    // The whole object.
    expect(cipherRange(0, size, size, S)).toEqual({ first: 0, last: 3, start: 0, end: storedSize(size, S), skip: 0 });
    // An exact multiple of the segment size: no empty segment after the last full one.
    expect(cipherRange(0, 300, 300, S)).toEqual({ first: 0, last: 2, start: 0, end: 3 * F, skip: 0 });
    expect(cipherRange(299, 300, 300, S)).toEqual({ first: 2, last: 2, start: 2 * F, end: 3 * F, skip: 99 });
    // The empty object: its one empty segment, read to authenticate it.
    expect(cipherRange(0, 0, 0, S)).toEqual({ first: 0, last: 0, start: 0, end: 16, skip: 0 });
  });

  it("every range reads at most one segment beyond each end (exhaustive over a small object)", () => {
    const size = 333;
    const wrong: string[] = [];
    for (let start = 0; start < size; start++)
      for (let end = start + 1; end <= size; end++) {
        const r = cipherRange(start, end, size, S);
        const covers = r.first * S <= start && start < (r.first + 1) * S && r.last * S < end && end <= (r.last + 1) * S;
        const exact = r.end - r.start === Math.min((r.last + 1) * S, size) - r.first * S + (r.last - r.first + 1) * TAG_BYTES;
        if (!covers || !exact || r.start !== r.first * F || r.skip !== start - r.first * S) wrong.push(`[${start}, ${end})`);
      }
    expect(wrong).toEqual([]);
  });

  it("refuses ranges outside the object", () => {
    expect(() => cipherRange(0, 11, 10, S)).toThrow(RangeError);
    expect(() => cipherRange(5, 4, 10, S)).toThrow(RangeError);
    expect(() => cipherRange(-1, 4, 10, S)).toThrow(RangeError);
    expect(() => cipherRange(0.5, 4, 10, S)).toThrow(RangeError);
  });
});

/** Seals `plain` and returns the header and all stored bytes. */
async function seal(plain: Uint8Array, encryption: Encryption = PASS, segmentBytes = 100) {
  const sealer = await Sealer.create(core, encryption, new Blob([plain as Uint8Array<ArrayBuffer>]), segmentBytes);
  // Read in uneven pieces, as parts of the direct path would be: segments straddle them.
  const stored = new Uint8Array(sealer.storedSize);
  for (let at = 0; at < stored.length; at += 77) stored.set(await sealer.read(at, Math.min(at + 77, stored.length)), at);
  expect(stored).toEqual(await sealer.read(0, sealer.storedSize));
  return { header: decodeHeader(sealer.metadata), stored };
}

/** Opens plaintext [start, end) from the stored bytes given (fed in small pieces). */
async function open(header: SealedHeader, stored: Uint8Array, start = 0, end = header.size, encryption: Opening = PASS): Promise<Uint8Array> {
  const range = cipherRange(start, end, header.size, header.segmentBytes);
  const slice = stored.slice(range.start, range.end);
  const pieces = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < slice.length; at += 37) controller.enqueue(slice.slice(at, at + 37));
      controller.close();
    },
  });
  const key = await dataKeyOf(core, header, encryption);
  return new Uint8Array(await new Response(openingStream(pieces, key, header, range, end - start)).arrayBuffer());
}

describe("sealing and opening", () => {
  const plain = randomBytes(1234, 5);

  it("round trips whole and every kind of range, with a passphrase and with a key file", async () => {
    const { header, stored } = await seal(plain);
    expect(stored.length).toBe(storedSize(1234, 100));
    expect(header.kdf).toMatchObject({ type: "argon2id", params: FAST });
    expect(await open(header, stored)).toEqual(plain);
    for (const [s, e] of [
      [0, 1],
      [1233, 1234],
      [99, 101],
      [100, 200],
      [150, 160],
      [7, 1200],
    ])
      expect(await open(header, stored, s, e), `[${s}, ${e})`).toEqual(plain.slice(s, e));
    const keyFile: Encryption = { key: randomBytes(32, 9) };
    const sealed = await seal(plain, keyFile);
    expect(sealed.header.kdf).toEqual({ type: "key" });
    expect(await open(sealed.header, sealed.stored, 0, 1234, keyFile)).toEqual(plain);
    // The stored bytes contain no run of the plaintext.
    expect(Buffer.from(stored).includes(Buffer.from(plain.subarray(300, 332)))).toBe(false);
  });

  it("the empty object and an exact multiple of the segment size", async () => {
    const empty = await seal(new Uint8Array(0));
    expect(empty.stored.length).toBe(16);
    expect(await open(empty.header, empty.stored)).toEqual(new Uint8Array(0));
    const exact = await seal(plain.slice(0, 300));
    expect(exact.stored.length).toBe(348);
    expect(await open(exact.header, exact.stored)).toEqual(plain.slice(0, 300));
  });

  it("a wrong passphrase, a wrong key file and the other kind of secret are WrongPassphrase", async () => {
    const { header } = await seal(plain);
    await expect(openDataKey(core, header, { passphrase: "correct horse battery stapl" })).rejects.toBeInstanceOf(WrongPassphraseError);
    await expect(openDataKey(core, header, { key: new Uint8Array(32) })).rejects.toBeInstanceOf(WrongPassphraseError);
    const keyed = await seal(plain, { key: randomBytes(32, 1) });
    await expect(openDataKey(core, keyed.header, { key: randomBytes(32, 2) })).rejects.toBeInstanceOf(WrongPassphraseError);
    await expect(openDataKey(core, keyed.header, PASS)).rejects.toBeInstanceOf(WrongPassphraseError);
    await expect(openDataKey(core, keyed.header, { key: new Uint8Array(31) })).rejects.toBeInstanceOf(RangeError);
    // A composed and a decomposed "é" are one passphrase (NFC).
    const accented = await seal(plain, { passphrase: "caf\u00e9", kdf: FAST });
    expect(await open(accented.header, accented.stored, 0, 10, { passphrase: "cafe\u0301" })).toEqual(plain.slice(0, 10));
  });

  it("the raw data key (a share link's) opens its object whole and in ranges; another key, or a short one, opens nothing", async () => {
    const { header, stored } = await seal(plain);
    const dataKey = await openDataKey(core, header, PASS);
    expect(await open(header, stored, 0, header.size, { dataKey })).toEqual(plain);
    expect(await open(header, stored, 150, 260, { dataKey })).toEqual(plain.slice(150, 260));
    // The raw key opens without the passphrase's KDF, and only this object: another's key is CorruptObject (no key check exists).
    const other = await seal(plain);
    await expect(open(header, stored, 0, 10, { dataKey: await openDataKey(core, other.header, PASS) })).rejects.toBeInstanceOf(CorruptObjectError);
    await expect(dataKeyOf(core, header, { dataKey: dataKey.subarray(0, 31) })).rejects.toBeInstanceOf(RangeError);
  });

  const corrupt = (header: SealedHeader, stored: Uint8Array, start?: number, end?: number) =>
    expect(open(header, stored, start, end)).rejects.toBeInstanceOf(CorruptObjectError);

  it("a flipped byte, swapped segments, a dropped last segment and a length lie are CorruptObject", async () => {
    const { header, stored } = await seal(plain);
    const F = 116;
    const flipped = stored.slice();
    flipped[5 * F + 40] ^= 1;
    await corrupt(header, flipped);
    await corrupt(header, flipped, 5 * 100 + 3, 5 * 100 + 4);
    expect(await open(header, flipped, 0, 500)).toEqual(plain.slice(0, 500)); // segments before it are intact
    // Segments 2 and 3 swapped (equal lengths).
    const swapped = stored.slice();
    swapped.set(stored.subarray(3 * F, 4 * F), 2 * F);
    swapped.set(stored.subarray(2 * F, 3 * F), 3 * F);
    await corrupt(header, swapped);
    await corrupt(header, swapped, 250, 260);
    // The last segment dropped, and the header's length cut to match: the new last segment was not sealed as the last.
    const cut = { ...header, size: 1200 };
    await corrupt(cut, stored.slice(0, 12 * F));
    // A length lie inside the last segment, and one that grows the object.
    await corrupt({ ...header, size: 1233 }, stored);
    await corrupt({ ...header, size: 1300 }, new Uint8Array([...stored, ...new Uint8Array(66)]));
    // A stream shorter or longer than the header's.
    await corrupt(header, stored.slice(0, stored.length - 1));
    const longer = new Uint8Array(stored.length + 5);
    longer.set(stored);
    const range = cipherRange(0, header.size, header.size, header.segmentBytes);
    const key = await dataKeyOf(core, header, PASS);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(longer);
        c.close();
      },
    });
    await expect(new Response(openingStream(stream, key, header, range, header.size)).arrayBuffer()).rejects.toBeInstanceOf(CorruptObjectError);
  });

  it("segments of another object under the same passphrase do not open, even at the same index", async () => {
    const a = await seal(plain);
    const b = await seal(plain);
    const spliced = a.stored.slice();
    spliced.set(b.stored.subarray(116, 232), 116);
    await corrupt(a.header, spliced);
    // B's stored bytes under A's header (A's wrapped key, A's object id).
    await corrupt(a.header, b.stored);
    // B's object id on A's header: the wrapped key no longer opens (it binds the id).
    await expect(openDataKey(core, { ...a.header, objectId: b.header.objectId }, PASS)).rejects.toBeInstanceOf(WrongPassphraseError);
  });

  it("re-wrapping changes only the header's KDF and wrapped key: the new passphrase opens the same bytes, the old one no longer", async () => {
    const { header, stored } = await seal(plain);
    const next: Encryption = { passphrase: "new passphrase", kdf: FAST };
    const rewrapped = await rewrapHeader(core, header, PASS, next);
    expect(rewrapped.objectId).toEqual(header.objectId);
    expect(rewrapped.wrappedKey).not.toEqual(header.wrappedKey);
    expect(await open(rewrapped, stored, 0, header.size, next)).toEqual(plain);
    await expect(openDataKey(core, rewrapped, PASS)).rejects.toBeInstanceOf(WrongPassphraseError);
    await expect(rewrapHeader(core, header, { passphrase: "nope" }, next)).rejects.toBeInstanceOf(WrongPassphraseError);
  });
});

describe("the header", () => {
  it("round trips and fits S3's user metadata easily", async () => {
    const sealer = await Sealer.create(core, { passphrase: "pw" }, new Blob([new Uint8Array(10)]));
    const value = sealer.metadata;
    expect(value).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(value.length).toBe(159);
    expect(decodeHeader(value)).toEqual(sealer.header);
    expect(encodeHeader(decodeHeader(value))).toBe(value);
    expect(sealer.header.kdf).toMatchObject({ type: "argon2id", params: { memoryKiB: 65536, passes: 3, lanes: 1 } });
  });

  it("malformed, unknown or out-of-bounds headers are CorruptObject; a hostile KDF cost is refused before any work", async () => {
    const sealer = await Sealer.create(core, PASS, new Blob([new Uint8Array(10)]));
    const good = sealer.header;
    const bad = (value: string) => expect(() => decodeHeader(value)).toThrow(CorruptObjectError);
    bad("");
    bad("not base64!");
    bad("A".repeat(3000));
    bad(sealer.metadata.slice(0, 40));
    bad(`${sealer.metadata}AAAA`);
    // A length no base64 has (4k + 1 characters) is the format's error too, not the decoder's.
    bad("A");
    bad(`${sealer.metadata.slice(0, 41)}`);
    bad(`${sealer.metadata}A`);
    bad(encodeHeader({ ...good, version: 2 }));
    bad(encodeHeader({ ...good, segmentBytes: 0 }));
    bad(encodeHeader({ ...good, segmentBytes: 64 * 1024 * 1024 }));
    const hostile = (params: { memoryKiB: number; passes: number; lanes: number }) =>
      expect(
        openDataKey(core, decodeHeader(encodeHeader({ ...good, kdf: { type: "argon2id", salt: new Uint8Array(16), params } })), PASS),
      ).rejects.toBeInstanceOf(CorruptObjectError);
    await hostile({ memoryKiB: 0xffffffff, passes: 1, lanes: 1 }); // 4 TiB
    await hostile({ memoryKiB: 256 * 1024 + 1, passes: 1, lanes: 1 });
    await hostile({ memoryKiB: 64, passes: 0xffffffff, lanes: 1 });
    await hostile({ memoryKiB: 64, passes: 1, lanes: 255 });
    await expect(openDataKey(core, { ...good, kdf: { type: "argon2id", salt: new Uint8Array(8), params: FAST } }, PASS)).rejects.toBeInstanceOf(
      CorruptObjectError,
    );
  });

  it("the core's Argon2id wrapper: deterministic, 32 bytes, and whole numbers only at the boundary", () => {
    const salt = randomBytes(16, 3);
    const a = core.argon2id(new TextEncoder().encode("pw"), salt, FAST);
    expect(a.length).toBe(32);
    expect(core.argon2id(new TextEncoder().encode("pw"), salt, FAST)).toEqual(a);
    expect(core.argon2id(new TextEncoder().encode("pv"), salt, FAST)).not.toEqual(a);
    // 2^32 + 64 KiB must not wrap to 64 KiB on the way into the core.
    expect(() => core.argon2id(new Uint8Array(1), salt, { ...FAST, memoryKiB: 2 ** 32 + 64 })).toThrow(/bounds/);
    expect(() => core.argon2id(new Uint8Array(1), salt, { ...FAST, memoryKiB: 64.5 })).toThrow();
    expect(() => core.argon2id(new Uint8Array(1), salt, { ...FAST, passes: -1 })).toThrow();
  });
});
