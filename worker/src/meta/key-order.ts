// S3's key order, the prefix arithmetic listings are built on, and the roll-up into common prefixes they share. Pure functions.

/**
 * Compares keys the way S3 orders them: by their UTF-8 bytes, which is code point order. JS's `<`
 * compares UTF-16 code units and disagrees only where a surrogate (a code point above U+FFFF)
 * meets U+E000..U+FFFF, so only that case is remapped.
 */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codeUnitRank(x) - codeUnitRank(y);
  }
  return a.length - b.length;
}

function codeUnitRank(u: number): number {
  if (u < 0xd800) return u;
  return u < 0xe000 ? u + 0x2000 : u - 0x800; // surrogates above the rest of the BMP
}

/**
 * The smallest string greater than every string that starts with `prefix` (the exclusive upper
 * bound of `key >= prefix AND key < end`), or null when there is none (the prefix is all
 * U+10FFFF). Working on code points rather than on the last UTF-8 byte keeps the bound valid
 * UTF-8; in byte order it is the same bound, since no valid key sorts between the two.
 */
export function prefixEnd(prefix: string): string | null {
  const points = Array.from(prefix, (ch) => ch.codePointAt(0) ?? 0);
  while (points.length > 0) {
    const last = points.pop() ?? 0;
    if (last < 0x10ffff) {
      // Skip the surrogate range, which holds no code points of its own.
      points.push(last === 0xd7ff ? 0xe000 : last + 1);
      return String.fromCodePoint(...points);
    }
  }
  return null;
}

/**
 * The common prefix `key` rolls up into: the prefix plus the rest of the key up to and including
 * the first delimiter, or null when the rest holds no delimiter (the key is listed itself).
 */
export function commonPrefixOf(key: string, prefix: string, delimiter: string | null): string | null {
  if (delimiter === null || delimiter === "") return null;
  const at = key.indexOf(delimiter, prefix.length);
  return at < 0 ? null : key.slice(0, at + delimiter.length);
}

/** Where a listing's read starts: at `key` itself (inclusive) or just after it. */
export interface Lower {
  key: string;
  inclusive: boolean;
}

/** A listing's entry: an item listed itself, or a common prefix that keys rolled up into. */
export type Entry<T> = { kind: "item"; item: T } | { kind: "prefix"; prefix: string };

/** The first position a listing reads: just after `marker` if that is within or past the prefix's keys. */
export function startOf(prefix: string, marker: string | null): Lower {
  if (marker !== null && compareKeys(marker, prefix) >= 0) return { key: marker, inclusive: false };
  return { key: prefix, inclusive: true };
}

/**
 * `entries` filled up to `limit` in key order from `start`: items are read lazily by `read` (an
 * ordered range query from its lower bound, at most `want` rows); the first that rolls up into a
 * common prefix ends that read, and the next one seeks past every key starting with that prefix.
 * A common prefix at or before `marker` was returned already (or skipped on purpose).
 */
export function rollUp<T extends { key: string }, C extends Lower>(
  q: { prefix: string; delimiter: string | null },
  marker: string | null,
  start: C,
  limit: number,
  read: (lower: C | Lower, want: number) => Iterable<T>,
  entries: Entry<T>[] = [],
): Entry<T>[] {
  let lower: C | Lower | null = start;
  while (lower !== null && entries.length < limit) {
    let next: Lower | null = null;
    for (const item of read(lower, limit - entries.length)) {
      const common = commonPrefixOf(item.key, q.prefix, q.delimiter);
      if (common === null) {
        entries.push({ kind: "item", item });
        continue;
      }
      if (marker === null || compareKeys(common, marker) > 0) entries.push({ kind: "prefix", prefix: common });
      const past = prefixEnd(common);
      next = past === null ? null : { key: past, inclusive: true };
      break;
    }
    lower = next;
  }
  return entries;
}

/**
 * The page of the first `max` of `entries` (one more tells that the listing goes on): its items,
 * its common prefixes, whether it is truncated, and then where it ended (a key or a common
 * prefix) and its last item when it ended on one.
 */
export function pageOf<T extends { key: string }>(
  entries: readonly Entry<T>[],
  max: number,
): { items: T[]; commonPrefixes: string[]; isTruncated: boolean; nextMarker: string | null; lastItem: T | null } {
  const page = entries.slice(0, max);
  const last = entries.length > max ? page[page.length - 1] : undefined;
  return {
    items: page.flatMap((e) => (e.kind === "item" ? [e.item] : [])),
    commonPrefixes: page.flatMap((e) => (e.kind === "prefix" ? [e.prefix] : [])),
    isTruncated: entries.length > max,
    nextMarker: last === undefined ? null : last.kind === "item" ? last.item.key : last.prefix,
    lastItem: last?.kind === "item" ? last.item : null,
  };
}

/** The SQL condition of keys from `lower` up to `end` (exclusive; null: no bound), and its bindings. */
export function keyRange(lower: Lower, end: string | null): { where: string; bindings: string[] } {
  const from = lower.inclusive ? "key >= ?" : "key > ?";
  return end === null ? { where: from, bindings: [lower.key] } : { where: `${from} AND key < ?`, bindings: [lower.key, end] };
}
