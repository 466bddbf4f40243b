// What the write path throws when it cannot do its part; api/http/error-map.ts answers each with
// its S3 error, in one table with the shared ones (shared/storage-errors.ts: those the range reader
// and the node breaker, which the client library runs too, throw and recognize).

/** Fewer nodes than the write quorum took a part's shard files: nothing was stored. */
export class WriteQuorumError extends Error {
  override name = "WriteQuorumError";
}

/** The client's body ended before, or went on past, the length it declared (or broke off). */
export class BodyLengthError extends Error {
  override name = "BodyLengthError";
}
