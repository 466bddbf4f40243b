// shared/bounded.ts's Lru, the one bounded map behind the Worker's caches (decoded manifests,
// signing keys, access keys resolved and unknown, bucket settings, parsed bucket policies, auth
// failure tallies, metrics' series keys, the block cache's memory and the segments it saw read in
// part): what it keeps and what it drops first.
import { describe, expect, it } from "vitest";
import { Lru } from "../../worker/src/shared/bounded";

const keysOf = <K, V>(lru: Lru<K, V>) => [...lru.keys()];

describe("Lru", () => {
  it("keeps at most `entries` entries, the oldest set out first", () => {
    const lru = new Lru<string, number>({ entries: 3 });
    for (const [i, key] of ["a", "b", "c", "d", "e"].entries()) lru.set(key, i);
    expect(keysOf(lru)).toEqual(["c", "d", "e"]);
    expect(lru.size).toBe(3);
    expect(lru.peek("a")).toBeUndefined();
    expect(lru.get("b")).toBeUndefined();
    expect(lru.get("e")).toBe(4);
  });

  it("get makes an entry the newest, peek leaves it in place", () => {
    const lru = new Lru<string, string>({ entries: 3 });
    lru.set("a", "A");
    lru.set("b", "B");
    lru.set("c", "C");
    expect(lru.get("a")).toBe("A");
    expect(keysOf(lru)).toEqual(["b", "c", "a"]);
    expect(lru.peek("b")).toBe("B");
    expect(keysOf(lru)).toEqual(["b", "c", "a"]);
    lru.set("d", "D"); // drops b: peeked, never got
    expect(keysOf(lru)).toEqual(["c", "a", "d"]);
    // Setting a key it holds replaces the value and makes it the newest.
    lru.set("c", "C2");
    expect(keysOf(lru)).toEqual(["a", "d", "c"]);
    expect(lru.peek("c")).toBe("C2");
    expect(lru.size).toBe(3);
  });

  it("keeps weights within `weight`, dropping the oldest until the new entry fits", () => {
    const lru = new Lru<string, string>({ weight: 10 });
    lru.set("a", "", 4);
    lru.set("b", "", 4);
    lru.set("c", "", 2);
    expect(keysOf(lru)).toEqual(["a", "b", "c"]); // 10: at the limit, nothing dropped
    lru.set("d", "", 5); // 15: a goes (11), then b (7)
    expect(keysOf(lru)).toEqual(["c", "d"]);
    lru.set("e", "", 3); // 10
    expect(keysOf(lru)).toEqual(["c", "d", "e"]);
    // An entry heavier than the whole budget is not kept, and drops nothing else; one that
    // replaces a key it holds leaves that key out.
    lru.set("huge", "", 11);
    expect(keysOf(lru)).toEqual(["c", "d", "e"]);
    lru.set("d", "", 11);
    expect(keysOf(lru)).toEqual(["c", "e"]);
    lru.set("f", "", 5); // 10
    expect(keysOf(lru)).toEqual(["c", "e", "f"]);
    // A weight that is not a finite number ≥ 0 is refused: it would break the sum for good.
    for (const bad of [Number.NaN, -1, Number.POSITIVE_INFINITY]) expect(() => lru.set("g", "", bad)).toThrow(RangeError);
    expect(keysOf(lru)).toEqual(["c", "e", "f"]);
  });

  it("replacing a key counts its new weight, not both", () => {
    const lru = new Lru<string, string>({ weight: 10 });
    lru.set("a", "big", 8);
    lru.set("b", "", 2);
    lru.set("a", "small", 1); // 3 in all now, not 11
    expect(keysOf(lru)).toEqual(["b", "a"]);
    lru.set("c", "", 7); // 10: fits beside both
    expect(keysOf(lru)).toEqual(["b", "a", "c"]);
    lru.set("a", "bigger", 9); // 18: b and c go, a alone is 9
    expect(keysOf(lru)).toEqual(["a"]);
    expect(lru.peek("a")).toBe("bigger");
  });

  it("delete frees its entry's count and weight, and says whether it held the key", () => {
    const lru = new Lru<string, number>({ entries: 2, weight: 10 });
    lru.set("a", 1, 6);
    lru.set("b", 2, 4);
    expect(lru.delete("a")).toBe(true);
    expect(lru.delete("a")).toBe(false);
    expect(lru.size).toBe(1);
    lru.set("c", 3, 6); // 10 and 2 entries: both limits exactly met, b stays
    expect(keysOf(lru)).toEqual(["b", "c"]);
    expect(lru.get("a")).toBeUndefined();
    lru.set("d", 4, 1); // 3 entries: the oldest (b) goes
    expect(keysOf(lru)).toEqual(["c", "d"]);
  });

  it("keys() is a snapshot: walking it while getting or setting ends", () => {
    const lru = new Lru<string, number>({ entries: 3 });
    lru.set("a", 1);
    lru.set("b", 2);
    const seen: string[] = [];
    for (const key of lru.keys()) {
      seen.push(key);
      lru.get(key);
      lru.set(`${key}2`, 0);
    }
    expect(seen).toEqual(["a", "b"]);
    expect(keysOf(lru)).toEqual(["a2", "b", "b2"]);
  });
});
