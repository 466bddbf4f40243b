// S3 errors: the one table of every error code the gateway answers with and its HTTP status, and
// the error that code below the HTTP layer throws to answer with one (errors.ts turns it into the
// XML <Error> response). Codes S3 does not have are the gateway's own (admin endpoints).
export const S3_ERRORS = {
  AccessDenied: 403,
  AccessForbidden: 403,
  AccessControlListNotSupported: 400,
  AuthorizationHeaderMalformed: 400,
  AuthorizationQueryParametersError: 400,
  BadDigest: 400,
  BadRequest: 400,
  BucketAlreadyOwnedByYou: 409,
  BucketNotEmpty: 409,
  EntityTooLarge: 400,
  EntityTooSmall: 400,
  ExpiredToken: 400,
  IllegalVersioningConfigurationException: 400,
  IncompleteBody: 400,
  InternalError: 500,
  InvalidAccessKeyId: 403,
  InvalidArgument: 400,
  InvalidBucketName: 400,
  InvalidBucketState: 409,
  InvalidChunkSizeError: 400,
  InvalidDigest: 400,
  InvalidLocationConstraint: 400,
  InvalidPart: 400,
  InvalidPolicyDocument: 400,
  InvalidPartNumber: 416,
  InvalidPartOrder: 400,
  InvalidRange: 416,
  InvalidRequest: 400,
  InvalidTag: 400,
  InvalidToken: 400,
  KeyTooLongError: 400,
  MalformedPOSTRequest: 400,
  MalformedPolicy: 400,
  MalformedTrailerError: 400,
  MalformedXML: 400,
  MaxPostPreDataLengthExceeded: 400,
  MetadataTooLarge: 400,
  MethodNotAllowed: 405,
  MissingContentLength: 411,
  NoSuchBucket: 404,
  NoSuchBucketPolicy: 404,
  NoSuchCORSConfiguration: 404,
  NoSuchKey: 404,
  NoSuchLifecycleConfiguration: 404,
  NoSuchObjectLockConfiguration: 404,
  NoSuchTagSet: 404,
  NoSuchUpload: 404,
  NoSuchVersion: 404,
  NoSuchWebsiteConfiguration: 404,
  NotImplemented: 501,
  ObjectLockConfigurationNotFoundError: 404,
  OperationAborted: 409,
  PolicyTooLarge: 400,
  PreconditionFailed: 412,
  // The gateway's own: a write over the bucket's quota (meta/quota.ts), refused as MinIO's hard quota is.
  QuotaExceeded: 403,
  ReplicationConfigurationNotFoundError: 404,
  RequestTimeTooSkewed: 403,
  ServerSideEncryptionConfigurationNotFoundError: 404,
  ServiceUnavailable: 503,
  SignatureDoesNotMatch: 403,
  SlowDown: 503,
  XAmzContentSHA256Mismatch: 400,
  // STS's, from its endpoint (api/s3/sts.ts).
  InvalidAction: 400,
  ValidationError: 400,
  // The gateway's own, from its admin endpoints.
  NoSuchNode: 404,
  NodeNotDraining: 409,
  NodeAlreadyExists: 409,
  NodeNotEmpty: 409,
  NodeProbeFailed: 400,
  TooFewNodes: 409,
} as const satisfies Record<string, number>;

export type S3ErrorCode = keyof typeof S3_ERRORS;

/**
 * An S3 error to answer with: its code (whose status comes from S3_ERRORS), message, and any
 * headers S3 sends with it (a delete marker's x-amz-delete-marker and x-amz-version-id).
 */
export class S3Error extends Error {
  readonly status: number;

  constructor(
    readonly code: S3ErrorCode,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = "S3Error";
    this.status = S3_ERRORS[code];
  }
}

/** The bucket named in the request does not exist (404 NoSuchBucket). */
export function noSuchBucket(bucket: string): S3Error {
  return new S3Error("NoSuchBucket", `The specified bucket does not exist: ${bucket}.`);
}

/** The key named in the request does not exist (404 NoSuchKey). */
export function noSuchKey(headers?: Record<string, string>): S3Error {
  return new S3Error("NoSuchKey", "The specified key does not exist.", headers);
}

/** A condition of the request (If-Match, If-Unmodified-Since, …) did not hold (412). */
export function preconditionFailed(): S3Error {
  return new S3Error("PreconditionFailed", "At least one of the pre-conditions you specified did not hold.");
}

/** A request parameter, header or document field S3 refuses (400 InvalidArgument). */
export function invalidArgument(message: string): S3Error {
  return new S3Error("InvalidArgument", message);
}
