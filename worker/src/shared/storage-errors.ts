// What the storage layer throws when it cannot do its part; api/http/error-map.ts answers each with
// its S3 error (the storage layer knows nothing of S3's codes). In shared/ (docs/architecture.md,
// "Shared code") because the range reader and the node breaker, which the client library runs too,
// throw and recognize them; the write path's own, which only the Worker throws, are in storage/errors.ts.

/** More of a part's shard files are unavailable than its parity covers: it cannot be read now. */
export class NodesUnavailableError extends Error {
  override name = "NodesUnavailableError";
}

/**
 * Why a sink is aborted when its node did nothing wrong (the write as a whole failed or was given
 * up): the node's breaker must not count it (node-health.ts).
 */
export class WriteAbandoned extends Error {
  constructor(why: string) {
    super(`write abandoned: ${why}`);
  }
}
