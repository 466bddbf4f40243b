// What the storage layer throws when it cannot do its part; api/common/error-map.ts answers each with
// its S3 error (the storage layer knows nothing of S3's codes). In shared/ (docs/architecture.md,
// "Shared code") because the range reader and the node breaker, which the client library runs too,
// throw and recognize them.

/** More of a part's shard files are unavailable than its parity covers: it cannot be read now. */
export class NodesUnavailableError extends Error {
  override name = "NodesUnavailableError";
}

/** Fewer nodes than the write quorum took a part's shard files: nothing was stored. */
export class WriteQuorumError extends Error {
  override name = "WriteQuorumError";
}

/** The client's body ended before, or went on past, the length it declared (or broke off). */
export class BodyLengthError extends Error {
  override name = "BodyLengthError";
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
