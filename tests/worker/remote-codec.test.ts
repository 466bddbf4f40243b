// What crosses between the processes of `--processes N` (worker/src/meta/remote.ts): every value a
// Durable Object call carries comes back as itself — bytes as bytes, undefined as undefined, and
// strings that look like the codec's own tags (S3 keys may start with anything) as those strings.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Env } from "../../worker/src/config";
import { decode, encode } from "../../worker/src/meta/remote";
import { bucketIndex } from "../../worker/src/meta/stubs";
import { NoSuchBucketError } from "../../worker/src/meta/types";
import { S3Error } from "../../worker/src/s3-error";

/** Values as Durable Object calls carry them: JSON, bytes, undefined; strings biased towards tags. */
const hostileString = fc.oneof(
  fc.string(),
  fc.constantFrom("\u0000", "\u0000u", "\u0000b", "\u0000bAAAA", "\u0000\u0000u", "\u0000x"),
  fc.string().map((s) => `\u0000${s}`),
);
const value = fc.letrec((tie) => ({
  leaf: fc.oneof(
    hostileString,
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.uint8Array({ maxLength: 300 }),
  ),
  node: fc.oneof({ depthSize: "small" }, tie("leaf"), fc.array(tie("node"), { maxLength: 5 }), fc.dictionary(hostileString, tie("node"), { maxKeys: 5 })),
}));

/** `v` as the receiving side sees it: undefined properties are absent, undefined array items stay holes. */
function normal(v: unknown): unknown {
  if (v instanceof Uint8Array) return [...v];
  if (Array.isArray(v)) return v.map(normal);
  if (v && typeof v === "object")
    return Object.fromEntries(
      Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => [k, normal(x)]),
    );
  if (Object.is(v, -0)) return 0;
  return v;
}

describe("the codec between gateway processes", () => {
  it("gives back bytes, undefined and tag-like strings as they were (fast-check, 2,000 runs)", () => {
    fc.assert(
      fc.property(value.node, (v) => {
        expect(normal(decode(encode(v)))).toEqual(normal(v));
      }),
      { numRuns: 2_000 },
    );
  });

  it("keeps types apart: bytes stay bytes, a string that looks like bytes stays a string", () => {
    const out = decode(encode({ manifest: new Uint8Array([0, 1, 255]), key: "\u0000bAAE=", gone: undefined, list: ["\u0000u", undefined] })) as Record<
      string,
      unknown
    >;
    expect(out.manifest).toBeInstanceOf(Uint8Array);
    expect([...(out.manifest as Uint8Array)]).toEqual([0, 1, 255]);
    expect(out.key).toBe("\u0000bAAE=");
    expect("gone" in out).toBe(false);
    expect((out.list as unknown[])[0]).toBe("\u0000u");
    expect((out.list as unknown[])[1]).toBeUndefined();
    expect(1 in (out.list as unknown[]), "an undefined item arrives as an item, not a hole").toBe(true);
    expect((decode(encode([1, undefined, 3])) as unknown[]).map((x) => x ?? 0)).toEqual([1, 0, 3]);
    expect(decode(encode(undefined))).toBeUndefined();
  });

  it("refuses what JSON would turn into something else, where it is sent", () => {
    for (const v of [
      new Map([["a", 1]]),
      new Set([1]),
      new Date(0),
      new ArrayBuffer(4),
      new Uint16Array(2),
      { nested: [new Map()] },
      1n,
      () => 1,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      [Number.NEGATIVE_INFINITY],
    ])
      expect(() => encode(v), String(v)).toThrow(/MetaGate: cannot send/);
  });

  it("refuses a tag it does not know", () => {
    expect(() => decode('"\\u0000x"')).toThrow(/malformed/);
  });
});

describe("a bucket that does not exist, from another process", () => {
  it("arrives as S3's 404 NoSuchBucket for that bucket, as in the home process", async () => {
    // What MetaGate answers when the object throws: its name and message, status 500.
    const thrown = new NoSuchBucketError();
    const gate = { fetch: async () => new Response(JSON.stringify({ name: thrown.name, message: thrown.message }), { status: 500 }) };
    const index = bucketIndex({ SHARDGATE_META: gate } as unknown as Env, "far-away");
    const error = await index.head("k").then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(S3Error);
    expect(error).toMatchObject({ code: "NoSuchBucket", status: 404, message: "The specified bucket does not exist: far-away." });
    // Any other failure passes through as it came.
    const other = { fetch: async () => new Response(JSON.stringify({ name: "Error", message: "disk full" }), { status: 500 }) };
    await expect(bucketIndex({ SHARDGATE_META: other } as unknown as Env, "b").head("k")).rejects.toThrow("disk full");
  });
});
