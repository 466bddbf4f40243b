// S3's own size limits, one place for every layer that meets them: requests (api/), and what the
// gateway sends on to other S3 endpoints (services/replication.ts).

/** The most bytes one PUT takes (a single PUT, a part, a CopyObject's source). */
export const MAX_PUT_BYTES = 5 * 1024 ** 3;

/** A multipart upload's highest part number, and so its most parts. */
export const MAX_PART_NUMBER = 10_000;

/** The least size of a multipart upload's part, but the last. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
