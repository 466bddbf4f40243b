// IAM's wildcards (`*` any run of characters, `?` one character, everything else literal) matched
// without backtracking and without a RegExp: a pattern is compiled once into the runs between its
// `*`s, and a match anchors the first and last runs and finds each middle one leftmost, which is
// exact because `*` takes any run. A middle run without `?` is found by the engine's string search
// (indexOf: at worst value × run, in practice linear); one with `?`s by counting, per start, the
// literal pieces found there (KMP, linear). So a match scans the value once per middle piece at
// most: O(value × scans + pattern), `scans` counted by compileWildcard, whatever the input (a
// RegExp of `.*` backtracks exponentially: one request froze workerd, issue #29). No I/O.

/** A literal run at a fixed offset in its segment, with its KMP failure table. */
interface Piece {
  offset: number;
  text: string;
  fail: Int32Array;
}

/** The text between two `*`s: a fixed length, `?`s anywhere in it, and its literal runs. */
interface Segment {
  length: number;
  pieces: Piece[];
}

export interface Wildcard {
  /** The pattern as given. */
  source: string;
  /** How many `*` and `?` it has. */
  wildcards: number;
  /** How many times a match may scan the value: the literal pieces of the middle runs. */
  scans: number;
  /** Without a `*`, the whole pattern; else the run before the first `*`. */
  head: Segment;
  /** The runs between `*`s, in order. */
  middle: Segment[];
  /** The run after the last `*`; null when the pattern has no `*`. */
  tail: Segment | null;
}

function failureTable(text: string): Int32Array {
  const fail = new Int32Array(text.length);
  for (let i = 1, k = 0; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== text.charCodeAt(k)) k = fail[k - 1] as number;
    if (text.charCodeAt(i) === text.charCodeAt(k)) k++;
    fail[i] = k;
  }
  return fail;
}

function segment(text: string): Segment {
  const pieces: Piece[] = [];
  let offset = 0;
  for (const run of text.split("?")) {
    if (run !== "") pieces.push({ offset, text: run, fail: failureTable(run) });
    offset += run.length + 1;
  }
  return { length: text.length, pieces };
}

/** Compiles `pattern` (linear in its length). */
export function compileWildcard(pattern: string): Wildcard {
  let wildcards = 0;
  for (let i = 0; i < pattern.length; i++) if (pattern[i] === "*" || pattern[i] === "?") wildcards++;
  const runs = pattern.split("*");
  const head = segment(runs[0] as string);
  if (runs.length === 1) return { source: pattern, wildcards, scans: 0, head, middle: [], tail: null };
  // `**` is `*`: empty runs between stars need no search.
  const middle = runs
    .slice(1, -1)
    .filter((r) => r !== "")
    .map(segment);
  const scans = middle.reduce((n, seg) => n + Math.max(1, seg.pieces.length), 0);
  return { source: pattern, wildcards, scans, head, middle, tail: segment(runs[runs.length - 1] as string) };
}

/** Whether `seg` matches `value` at `at` (which leaves room for it). */
function matchesAt(seg: Segment, value: string, at: number): boolean {
  return seg.pieces.every((p) => value.startsWith(p.text, at + p.offset));
}

/** Adds 1 to counts[i - shift] for each i in [from, to) where `p` occurs within value[from, to): KMP, O(to - from + |p|). */
function countOccurrences(p: Piece, value: string, from: number, to: number, counts: Uint32Array, shift: number): void {
  const { text, fail } = p;
  const n = text.length;
  for (let i = from, k = 0; i < to; i++) {
    const c = value.charCodeAt(i);
    while (k > 0 && c !== text.charCodeAt(k)) k = fail[k - 1] as number;
    if (c === text.charCodeAt(k)) k++;
    if (k === n) {
      counts[i - n + 1 - shift]++;
      k = fail[k - 1] as number;
    }
  }
}

/** The first start s in [from, last] where `seg` matches `value`, or -1. */
function leftmost(seg: Segment, value: string, from: number, last: number): number {
  if (last < from) return -1;
  const [only] = seg.pieces;
  if (only === undefined) return from;
  if (seg.pieces.length === 1) {
    const at = value.indexOf(only.text, from + only.offset) - only.offset;
    return at >= from && at <= last ? at : -1;
  }
  // Several pieces split by `?`s: count, per start, the pieces found at their offsets from it.
  const counts = new Uint32Array(last - from + 1);
  for (const p of seg.pieces) countOccurrences(p, value, from + p.offset, last + p.offset + p.text.length, counts, from + p.offset);
  const index = counts.indexOf(seg.pieces.length);
  return index < 0 ? -1 : from + index;
}

/** Whether `value` matches the compiled pattern as a whole. */
export function wildcardMatch(w: Wildcard, value: string): boolean {
  const { head, tail } = w;
  if (tail === null) return value.length === head.length && matchesAt(head, value, 0);
  const end = value.length - tail.length;
  if (end < head.length || !matchesAt(head, value, 0) || !matchesAt(tail, value, end)) return false;
  // Each middle run leftmost after the previous one: any later choice leaves less room for the rest.
  let at = head.length;
  for (const seg of w.middle) {
    const found = leftmost(seg, value, at, end - seg.length);
    if (found < 0) return false;
    at = found + seg.length;
  }
  return true;
}
