// Uploads that the client codes itself (docs/direct-path.md). The gateway places the parts and
// hands out tickets; the client erasure-codes the object with the same core and sends every shard
// file on its own (services/direct-shards.ts); the commit checks what it can without trusting the
// client and without reading the object back, then commits the manifest like a PUT.
//
// A session's ticket carries the bucket, key, size and geometry, and a digest of the parts' places
// that the commit must echo. The bucket's index keeps it open until it ends (meta/direct-sessions.ts):
// its size reserved against the bucket's quota from its opening, as an upload's parts are, within
// caps on the sessions a key and a bucket hold open. A commit turns the reservation into the
// object's bytes; an abort or a refused commit ends the session and removes its shard files at once;
// a session that expires uncommitted leaves its parts to the garbage job.
import { errorText } from "../errors";
import { digestOf, type TicketBase, openTicket, signTicket } from "../auth/ticket";
import type { GatewayConfig } from "../config";
import type { DirectAbort, DirectCommit, DirectGeometry, DirectPartPlace, DirectUploadSession } from "../shared/direct-protocol";
import { bucketIndex, bucketRegistry } from "../meta/stubs";
import type { QuotaRefusal, WriteCondition } from "../meta/types";
import { noSuchBucket, S3Error } from "../s3-error";
import { type ShardedPart, shardFileBytes } from "../storage/layout";
import { removeParts } from "../storage/remove";
import { newStorageId, preferAvailable } from "../storage/write-part";
import { placeShards } from "../storage/placement";
import { SESSIONS_PER_BUCKET, SESSIONS_PER_KEY, SHARD_WRITE_LEASE_MS, type SessionRefusal } from "../meta/direct-sessions";
import { shardUrl } from "./direct-shards";
import { verifyCodedParts } from "./direct-verify";
import { encryptsByDefault } from "./encryption";
import type { DirectContext } from "./direct-context";
import { commitObject, multipartEtag, writeRefused } from "./objects";

/** The largest object a session takes (PutObject's limit: bigger objects are multipart uploads). */
export const MAX_DIRECT_BYTES = 5 * 1024 ** 3;

interface UploadTicket extends TicketBase {
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
  /** The session reserved its size in the bucket's index: its commit must find it open there. */
  reserved: boolean;
}

export function geometryOf(config: GatewayConfig): DirectGeometry {
  return { blockBytes: config.blockBytes, dataShards: config.dataShards, parityShards: config.parityShards, chunkBytes: config.chunkBytes };
}

/** A new session for `size` bytes under bucket/key: the parts' places and a ticket per shard file. */
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
  const placed = await Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const storageId = newStorageId();
      return { size: Math.min(partBytes, size - i * partBytes), storageId, nodes: await placeShards(nodes, storageId, width) };
    }),
  );
  const places = placed.map((p) => ({ storageId: p.storageId, placement: p.nodes.map((n) => n.id) }));
  const signed = presigned && placed.some((p) => p.nodes.some((n) => n.presign));
  const ticket = {
    kind: "upload",
    expires,
    session,
    bucket,
    key,
    size,
    partBytes,
    geometry,
    places: await digestOf(places),
    presigned: signed,
    reserved: true,
  } satisfies UploadTicket;
  // Reserved before any URL is handed out: over the quota or the caps, nothing can be written.
  const opened = await bucketIndex(ctx.env, bucket).openSession({
    id: session,
    holder: ctx.holder,
    bytes: size,
    until: expires + SHARD_WRITE_LEASE_MS, // a shard write begun before the ticket expired may end a lease later
    parts: manifestParts(ticket, places, []),
  });
  if (!opened.ok) throw sessionRefused(opened.reason);
  const parts = await Promise.all(
    placed.map(async ({ size: partSize, storageId }, i) => {
      const placement = places[i].placement;
      const layout = { ...geometry, storageId, placement };
      const urls = await Promise.all(
        placement.map((node, shard) => shardUrl(ctx, { bucket, key, session, layout, size: partSize, shard, node, write: true, expires }, now, presigned)),
      );
      return { size: partSize, storageId, placement, shardFileBytes: shardFileBytes(ctx.core, { size: partSize, layout: geometry }), urls };
    }),
  );
  const upload = await signTicket(ctx.rootSecret, ticket);
  return { mode: "direct", upload, expires, geometry, partBytes, parts };
}

/** The S3 error for a session the bucket's index would not open. */
function sessionRefused(reason: SessionRefusal | QuotaRefusal): S3Error {
  if (reason === "TooManySessions:key" || reason === "TooManySessions:bucket") {
    const [limit, whose] = reason === "TooManySessions:key" ? [SESSIONS_PER_KEY, "this key holds"] : [SESSIONS_PER_BUCKET, "the bucket holds"];
    return new S3Error("SlowDown", `Too many upload sessions open: ${whose} ${limit}. Commit or abort one, or wait until one expires.`);
  }
  return writeRefused(reason);
}

/**
 * Commits a session, once: checks its ticket and the parts it names, verifies the shard files (see
 * direct-verify.ts), and commits the manifest as a PUT does (conditions, versioning, lock rules and
 * quota of the bucket). Refused once sealed (4xx): nothing becomes visible, the session ends and its
 * shard files are removed (endRefused); a 503 leaves it open for the commit to be sent again.
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
  const ticket = await openSession(ctx, bucket, key, commit, now);
  const md5s = commit.partMd5s;
  if (!Array.isArray(md5s) || md5s.length !== commit.parts.length || !md5s.every((m) => typeof m === "string" && /^[0-9a-f]{32}$/.test(m))) {
    throw new S3Error("InvalidRequest", `partMd5s must be one hex MD5 per part (${commit.parts.length}).`);
  }
  const parts = manifestParts(ticket, commit.parts, md5s);
  // Sealed first: no shard file of the session goes live from now on, so what is checked below is
  // what is committed, and stays so.
  await sealSession(ctx, bucket, ticket);
  try {
    const missed = await verifyCodedParts(ctx, parts);
    const etag = parts.length === 1 ? parts[0].etag : await multipartEtag(commit.partMd5s);
    const object = { key, size: ticket.size, etag, ...fields, tags: [], checksums: [], parts };
    const written = parts.map((p, i) => ({ size: p.size, md5: new Uint8Array(0), layout: p.layout, missedShards: missed[i] }));
    // Once per session (a replay would make two versions share these shard files). The parts' MD5s
    // stand for the body's integrity that object lock asks of a retained write (checked on the sample).
    // Parts with missing shard files go to the heal queue with the commit, as after a PUT.
    const committed = await commitObject(ctx, bucket, object, { ...condition, integrity: true, once: onceOf(ticket) }, written, "keep");
    return { etag, versionId: committed.versionId };
  } catch (e) {
    if (e instanceof S3Error && e.status < 500) await endRefused(ctx, bucket, ticket, parts);
    throw e;
  }
}

/**
 * Ends a session whose commit was refused: claimed in the bucket's index as an abort is (a commit
 * after it is refused), its reservation released, and its shard files removed after the answer.
 * Only the claim removes them: the files of a session committed already (a replay, or two commits
 * of one session at once, the other one won) are a version's, and stay. Best effort: a session
 * not claimed here ends at its expiry, its parts then garbage.
 */
async function endRefused(ctx: DirectContext, bucket: string, ticket: UploadTicket, parts: ShardedPart[]): Promise<void> {
  try {
    if ((await bucketIndex(ctx.env, bucket).claimOnce(onceOf(ticket))) === "claimed") ctx.waitUntil(removeParts(ctx.config.nodes, parts));
  } catch (e) {
    console.error(JSON.stringify({ directCommitRefused: { session: ticket.session, error: errorText(e) } }));
  }
}

/**
 * Removes an abandoned session's shard files now (the orphan sweep would, after its grace period).
 * The session is spent first, in the bucket's index: a commit after it is refused, and a session
 * already committed is not aborted (NoSuchUpload, as S3 answers an abort after a completion).
 */
export async function abortUpload(ctx: DirectContext, bucket: string, key: string, abort: DirectAbort, now = Date.now()): Promise<void> {
  const ticket = await openSession(ctx, bucket, key, abort, now);
  const index = bucketIndex(ctx.env, bucket);
  // A shard file completing now is waited for, so that it is removed with the others.
  const claimed = await whileWriting(() => index.claimOnce(onceOf(ticket)));
  if (claimed === "spent") throw new S3Error("NoSuchUpload", "The upload session was committed or aborted already.");
  await removeParts(ctx.config.nodes, manifestParts(ticket, abort.parts, []));
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
async function sealSession(ctx: DirectContext, bucket: string, ticket: UploadTicket): Promise<void> {
  const index = bucketIndex(ctx.env, bucket);
  // Tickets from before `presigned` was recorded count as having handed out presigned URLs.
  const sealed = await whileWriting(() => index.sealSession(onceOf(ticket), ticket.presigned !== false));
  if (sealed === "spent") throw new S3Error("InvalidRequest", "This upload session was committed, aborted or has expired: open a new one.");
  if (sealed === "locked") {
    throw new S3Error("InvalidRequest", "The bucket has object lock now, and this session handed out node URLs that cannot be taken back: open a new one.");
  }
}

/** What makes a session's commit (or abort) happen once: its id, until it expires, and whether it reserved its size. */
function onceOf(ticket: UploadTicket): { id: string; until: number; reserved: boolean } {
  return { id: ticket.session, until: ticket.expires, reserved: ticket.reserved === true };
}

/** The session's ticket, if it is valid for bucket/key and `echo.parts` are the parts it placed. */
async function openSession(
  ctx: DirectContext,
  bucket: string,
  key: string,
  echo: { upload: string; parts: DirectPartPlace[] },
  now: number,
): Promise<UploadTicket> {
  const ticket = typeof echo.upload === "string" ? await openTicket<UploadTicket>(ctx.rootSecret, echo.upload, "upload", now) : null;
  if (!ticket || ticket.bucket !== bucket || ticket.key !== key) {
    throw new S3Error("AccessDenied", "The upload session is not valid for this object, or it has expired.");
  }
  const wellFormed = Array.isArray(echo.parts) && echo.parts.every((p) => typeof p?.storageId === "string" && Array.isArray(p.placement));
  if (!wellFormed || (await digestOf(echo.parts.map(placeOf))) !== ticket.places) {
    throw new S3Error("InvalidRequest", "The parts are not the ones the upload session placed.");
  }
  return ticket;
}

/** The manifest's parts of a session, with their MD5s as ETags (none for an abort). */
function manifestParts(ticket: UploadTicket, places: DirectPartPlace[], md5s: string[]): ShardedPart[] {
  return places.map((place, i) => {
    const layout = { type: "sharded" as const, ...ticket.geometry, storageId: place.storageId, placement: place.placement, partChecksums: [] };
    return { size: Math.min(ticket.partBytes, ticket.size - i * ticket.partBytes), etag: md5s[i] ?? "", layout };
  });
}

function placeOf(p: DirectPartPlace): DirectPartPlace {
  return { storageId: String(p.storageId), placement: Array.from(p.placement, String) };
}
