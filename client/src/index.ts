// @shardgate/client: upload to and download from a shardgate gateway with the erasure coding done
// here, in a browser or in Node (docs/direct-path.md, client/README.md).
export { type CoreSource, loadCore } from "./core";
export {
  type CallOptions,
  type ClientOptions,
  type Declined,
  type Download,
  type DownloadOptions,
  ShardgateClient,
  ShardgateError,
  type ShardState,
  type UploadOptions,
  type UploadProgress,
  type UploadResult,
} from "./client";
export {
  CorruptObjectError,
  DEFAULT_KDF,
  type Encryption,
  type Opening,
  SEALED_METADATA,
  type SealedHeader,
  decodeHeader as decodeSealedHeader,
  WrongPassphraseError,
  // For apps that move a sealed object's bytes themselves (the console's classic path and share
  // links): sealing a Blob, opening the data key, and decrypting stored bytes.
  Sealer,
  openDataKey as openSealedDataKey,
  cipherRange as sealedCipherRange,
  openingStream as openSealedStream,
  storedSize as sealedStoredSize,
} from "./sealed";
export type { Argon2Params } from "../../worker/src/shared/core-api";
export type { DirectReadPlan, DirectUploadSession } from "../../worker/src/shared/direct-protocol";
export { Core } from "../../worker/src/shared/core-api";
