// Uploads that the client codes itself (docs/browser-path.md). The gateway places the parts and
// hands out grants; the client erasure-codes the object with the same core and sends every shard
// file on its own (services/direct-shards.ts); the commit checks what it can without trusting the
// client and without reading the object back, then commits the manifest like a PUT.
//
// Nothing is stored about a session: its grant carries the bucket, key, size and geometry, and a
// digest of the parts' places that the commit must echo. Shard files of a session never committed
// are removed by an abort, or else by the orphan sweep (the session expires well before its grace).
import { digestOf, type GrantBase, openGrant, signGrant } from "../auth/grant";
import type { GatewayConfig } from "../config";
import type { DirectAbort, DirectCommit, DirectGeometry, DirectPartPlace, DirectUploadSession } from "../shared/direct-protocol";
import { bucketIndex, bucketRegistry } from "../meta/stubs";
import type { WriteCondition } from "../meta/types";
import { noSuchBucket, S3Error } from "../s3-error";
import type { ShardedPart } from "../storage/layout";
import { removeParts } from "../storage/remove";
import { newStorageId, preferAvailable } from "../storage/write-part";
import { placeShards } from "../storage/placement";
import { shardUrl } from "./direct-shards";
import { verifyCodedParts } from "./direct-verify";
import { encryptsByDefault } from "./encryption";
import type { DirectContext } from "./direct-context";
import { commitObject, multipartEtag } from "./objects";

/** The largest object a session takes (PutObject's limit: bigger objects are multipart uploads). */
export const MAX_DIRECT_BYTES = 5 * 1024 ** 3;

interface UploadGrant extends GrantBase {
  kind: "upload";
  /** The session's id: its commit (or abort) is recorded under it in the bucket's index, once. */
  session: string;
  bucket: string;
  key: string;
  size: number;
  partBytes: number;
  geometry: DirectGeometry;
  /** digestOf the parts' places (DirectPartPlace[]), which the commit and the abort echo. */
  places: string;
  /** Some shard URL is a presigned node URL (it cannot be taken back): no commit once the bucket has object lock. */
  presigned: boolean;
}

export function geometryOf(config: GatewayConfig): DirectGeometry {
  return { blockBytes: config.blockBytes, dataShards: config.dataShards, parityShards: config.parityShards, chunkBytes: config.chunkBytes };
}

/** A new session for `size` bytes under bucket/key: the parts' places and a grant per shard file. */
export async function openUploadSession(ctx: DirectContext, bucket: string, key: string, size: number, now = Date.now()): Promise<DirectUploadSession> {
  if (!Number.isSafeInteger(size) || size < 0) throw new S3Error("InvalidArgument", "size must be a whole number of bytes.");
  if (size > MAX_DIRECT_BYTES) throw new S3Error("EntityTooLarge", `An upload session takes at most ${MAX_DIRECT_BYTES} bytes; use a multipart upload.`);
  if (!(await bucketRegistry(ctx.env).get(bucket))) throw noSuchBucket(bucket);
  const { config } = ctx;
  if (size <= config.inlineBytes) return { mode: "classic", reason: "small objects are stored in their manifest: send it with PutObject" };
  if (await encryptsByDefault(ctx.env, bucket)) return { mode: "classic", reason: "the bucket encrypts what it stores: the gateway must see the bytes" };
  // A presigned node URL cannot be taken back: a bucket with object lock only gets shard URLs of
  // the gateway's, which stop writing when the session commits.
  const presigned = !(await bucketIndex(ctx.env, bucket).objectLock());
  const session = crypto.randomUUID();
  const geometry = geometryOf(config);
  const partBytes = config.direct.partBytes;
  const expires = Math.min(now + config.direct.sessionMs, ctx.until);
  const count = Math.max(1, Math.ceil(size / partBytes));
  const width = config.dataShards + config.parityShards;
  const nodes = preferAvailable(config.writableNodes, width);
  const parts = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const partSize = Math.min(partBytes, size - i * partBytes);
      const storageId = newStorageId();
      const placed = await placeShards(nodes, storageId, width);
      const placement = placed.map((n) => n.id);
      const layout = { ...geometry, storageId, placement };
      const shardFileBytes = shardFileBytesOf(ctx, partSize, geometry);
      const urls = await Promise.all(
        placement.map((node, shard) => shardUrl(ctx, { bucket, key, session, layout, size: partSize, shard, node, write: true, expires }, now, presigned)),
      );
      return { size: partSize, storageId, placement, shardFileBytes, urls, presigned: presigned && placed.some((n) => n.presign) };
    }),
  );
  const places = await digestOf(parts.map(placeOf));
  const signed = parts.some((p) => p.presigned);
  const grant = { kind: "upload", expires, session, bucket, key, size, partBytes, geometry, places, presigned: signed } satisfies UploadGrant;
  const upload = await signGrant(ctx.rootSecret, grant);
  return { mode: "direct", upload, expires, geometry, partBytes, parts: parts.map(({ presigned: _, ...part }) => part) };
}

/**
 * Commits a session, once: checks its grant and the parts it names, verifies the shard files (see
 * direct-verify.ts), and commits the manifest as a PUT does (conditions, versioning, lock rules of
 * the bucket). Refused: nothing becomes visible, and the session's shard files stay for its abort
 * (or the orphan sweep).
 */
export async function commitUpload(
  ctx: DirectContext,
  bucket: string,
  key: string,
  commit: DirectCommit,
  condition: WriteCondition | undefined,
  fields: { headers: [string, string][]; userMetadata: [string, string][] },
  now = Date.now(),
): Promise<{ etag: string; versionId?: string }> {
  const grant = await openSession(ctx, bucket, key, commit, now);
  const md5s = commit.partMd5s;
  if (!Array.isArray(md5s) || md5s.length !== commit.parts.length || !md5s.every((m) => typeof m === "string" && /^[0-9a-f]{32}$/.test(m))) {
    throw new S3Error("InvalidRequest", `partMd5s must be one hex MD5 per part (${commit.parts.length}).`);
  }
  const parts = manifestParts(grant, commit.parts, md5s);
  // Sealed first: no shard file of the session goes live from now on, so what is checked below is
  // what is committed, and stays so.
  await sealSession(ctx, bucket, grant);
  // A refused commit removes nothing: the files may be a committed version's (a replay, or two
  // commits of one session at once). The session's abort or the orphan sweep removes them.
  const missed = await verifyCodedParts(ctx, parts);
  const etag = parts.length === 1 ? parts[0].etag : await multipartEtag(commit.partMd5s);
  const object = { key, size: grant.size, etag, ...fields, tags: [], checksums: [], parts };
  const written = parts.map((p, i) => ({ size: p.size, md5: new Uint8Array(0), layout: p.layout, missedShards: missed[i] }));
  // Once per session (a replay would make two versions share these shard files). The parts' MD5s
  // stand for the body's integrity that object lock asks of a retained write (checked on the sample).
  // Parts with missing shard files go to the heal queue with the commit, as after a PUT.
  const committed = await commitObject(ctx, bucket, object, { ...condition, integrity: true, once: onceOf(grant) }, written, "keep");
  return { etag, versionId: committed.versionId };
}

/**
 * Removes an abandoned session's shard files now (the orphan sweep would, after its grace period).
 * The session is spent first, in the bucket's index: a commit after it is refused, and a session
 * already committed is not aborted (NoSuchUpload, as S3 answers an abort after a completion).
 */
export async function abortUpload(ctx: DirectContext, bucket: string, key: string, abort: DirectAbort, now = Date.now()): Promise<void> {
  const grant = await openSession(ctx, bucket, key, abort, now);
  const index = bucketIndex(ctx.env, bucket);
  // A shard file completing now is waited for, so that it is removed with the others.
  const claimed = await whileWriting(() => index.claimOnce(onceOf(grant)));
  if (claimed === "spent") throw new S3Error("NoSuchUpload", "The upload session was committed or aborted already.");
  await removeParts(ctx.config.nodes, manifestParts(grant, abort.parts, []));
}

/** How long a commit or an abort waits for the session's shard writes that are completing (each holds a lease of the index). */
const SHARD_WRITES_WAIT_MS = 2_000;

/**
 * `attempt` again while it answers "writing" (a shard file of the session is completing, which
 * takes milliseconds), for SHARD_WRITES_WAIT_MS at most: then 503, which clients send again.
 */
async function whileWriting<T extends string>(attempt: () => Promise<T | "writing">): Promise<T> {
  const deadline = Date.now() + SHARD_WRITES_WAIT_MS;
  for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
    const answer = await attempt();
    if (answer !== "writing") return answer;
    if (Date.now() + pause > deadline)
      throw new S3Error("ServiceUnavailable", "A shard file of this upload session is still being written: send the request again.");
    await new Promise((resolve) => setTimeout(resolve, pause));
  }
}

/** Seals the session for its commit (bucket-index.ts sealSession), or answers why it cannot commit. */
async function sealSession(ctx: DirectContext, bucket: string, grant: UploadGrant): Promise<void> {
  const index = bucketIndex(ctx.env, bucket);
  // Grants from before `presigned` was recorded count as having handed out presigned URLs.
  const sealed = await whileWriting(() => index.sealSession(onceOf(grant), grant.presigned !== false));
  if (sealed === "spent") throw new S3Error("InvalidRequest", "This upload session was committed already: open a new one.");
  if (sealed === "locked") {
    throw new S3Error("InvalidRequest", "The bucket has object lock now, and this session handed out node URLs that cannot be taken back: open a new one.");
  }
}

/** What makes a session's commit (or abort) happen once: its id, until it expires. */
function onceOf(grant: UploadGrant): { id: string; until: number } {
  return { id: grant.session, until: grant.expires };
}

/** The session's grant, if it is valid for bucket/key and `echo.parts` are the parts it placed. */
async function openSession(
  ctx: DirectContext,
  bucket: string,
  key: string,
  echo: { upload: string; parts: DirectPartPlace[] },
  now: number,
): Promise<UploadGrant> {
  const grant = typeof echo.upload === "string" ? await openGrant<UploadGrant>(ctx.rootSecret, echo.upload, "upload", now) : null;
  if (!grant || grant.bucket !== bucket || grant.key !== key) {
    throw new S3Error("AccessDenied", "The upload session is not valid for this object, or it has expired.");
  }
  const wellFormed = Array.isArray(echo.parts) && echo.parts.every((p) => typeof p?.storageId === "string" && Array.isArray(p.placement));
  if (!wellFormed || (await digestOf(echo.parts.map(placeOf))) !== grant.places) {
    throw new S3Error("InvalidRequest", "The parts are not the ones the upload session placed.");
  }
  return grant;
}

/** The manifest's parts of a session, with their MD5s as ETags (none for an abort). */
function manifestParts(grant: UploadGrant, places: DirectPartPlace[], md5s: string[]): ShardedPart[] {
  return places.map((place, i) => {
    const layout = { type: "sharded" as const, ...grant.geometry, storageId: place.storageId, placement: place.placement, partChecksums: [] };
    return { size: Math.min(grant.partBytes, grant.size - i * grant.partBytes), etag: md5s[i] ?? "", layout };
  });
}

function placeOf(p: DirectPartPlace): DirectPartPlace {
  return { storageId: String(p.storageId), placement: Array.from(p.placement, String) };
}

function shardFileBytesOf(ctx: DirectContext, size: number, geometry: DirectGeometry): number {
  const g = ctx.core.geometry({ size, ...geometry });
  try {
    return g.shardFileBytes;
  } finally {
    g.free();
  }
}
