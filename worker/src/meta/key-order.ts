// S3's key order and the prefix arithmetic listings are built on. Pure functions.

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
