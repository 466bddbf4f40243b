// Work kept within bounds: how much runs at once (mapBounded), how long a step is waited for
// (withinStall), how often a result is computed (keptResult), and how much is remembered (Lru).

/** Runs `work` over `items` with at most `limit` at once; the results in order. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Waits for `step`, at most `stallMs` (one timer): then resolves with undefined or, given `late`, rejects with its error. */
export async function withinStall<T>(step: Promise<T>, stallMs: number, late?: () => Error): Promise<T | undefined> {
  let timer!: ReturnType<typeof setTimeout>; // set by the executor, which runs at once
  const stalled = new Promise<undefined>((resolve, reject) => {
    timer = setTimeout(() => (late ? reject(late()) : resolve(undefined)), stallMs);
  });
  try {
    return await Promise.race([step, stalled]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A result computed at most once per `freshMs`, never awaited by a request that did not start it
 * (the runtime cancels a request that waits on another's I/O as hung): a caller that finds the last
 * result fresh, or a computation in progress, gets the last result (null before the first). The
 * computation a caller starts (`compute(at)`, `at` when it started) runs to its end under
 * `waitUntil` when given, even if that caller is cancelled; one still running after `abandonMs`
 * was abandoned (its request cancelled), and the next caller starts another. An older computation
 * that ends later never replaces a newer result; a failed one is logged under `name` and answers
 * the last result.
 */
export function keptResult<T extends { at: number }>(name: string, freshMs: number, abandonMs: number, compute: (at: number) => Promise<T>) {
  let last: T | null = null;
  let since = 0;
  const running = () => since !== 0 && Date.now() - since < abandonMs;
  return {
    last: () => last,
    running,
    async get(waitUntil?: (promise: Promise<unknown>) => void): Promise<T | null> {
      const at = Date.now();
      if ((last && at - last.at < freshMs) || running()) return last;
      since = at;
      const done = compute(at)
        .then((result) => {
          if (last === null || last.at <= result.at) last = result;
          return result;
        })
        .finally(() => {
          if (since === at) since = 0;
        });
      waitUntil?.(done.catch(() => {}));
      try {
        return await done;
      } catch (e) {
        console.error(JSON.stringify({ [name]: String(e) }));
        return last;
      }
    },
  };
}

/**
 * A Map of at most `limit.entries` entries whose weights (given to `set`, 1 by default) add up to at
 * most `limit.weight`: `set` makes its entry the newest, then drops the oldest until both hold (an
 * entry heavier than the whole budget is not kept). `get` makes the entry it finds the newest too;
 * `peek` does not. A Map keeps its entries in insertion order: every operation is O(1) (amortized).
 */
export class Lru<K, V> {
  private readonly map = new Map<K, { value: V; weight: number }>();
  private total = 0;

  constructor(private readonly limit: { entries: number; weight?: number } | { entries?: number; weight: number }) {}

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const entry = this.map.get(key);
    if (entry && this.map.delete(key)) this.map.set(key, entry); // set again: the newest
    return entry?.value;
  }

  peek(key: K): V | undefined {
    return this.map.get(key)?.value;
  }

  set(key: K, value: V, weight = 1): void {
    if (!(weight >= 0 && weight < Infinity)) throw new RangeError(`an entry's weight must be a finite number ≥ 0, got ${weight}`);
    this.delete(key);
    if (weight > (this.limit.weight ?? Infinity)) return;
    this.map.set(key, { value, weight });
    this.total += weight;
    for (const oldest of this.map.keys()) {
      if (this.map.size <= (this.limit.entries ?? Infinity) && this.total <= (this.limit.weight ?? Infinity)) break;
      this.delete(oldest);
    }
  }

  delete(key: K): boolean {
    this.total -= this.map.get(key)?.weight ?? 0;
    return this.map.delete(key);
  }

  /** The keys, oldest first, as they are now (changing the map while walking them is safe). */
  keys(): K[] {
    return [...this.map.keys()];
  }
}
