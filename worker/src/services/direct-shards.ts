// Shard files moved by the client itself (docs/direct-path.md), through the gateway for nodes
// only it can reach (disk nodes, R2 bindings): stored as they come, never decoded or re-encoded,
// and served as byte ranges. A shard ticket, signed by the gateway, says which file of which node
// and whether it may be written, and who obtained it: each use checks again that this key still
// may read (or write) the object (api/s3/direct.ts). Its URL names the bucket too
// (SHARD_PATH/bucket/ticket), so browsers on other origins get that bucket's CORS rules, as for its
// objects.
//
// A write never changes a committed object: its file goes live on the node only with its last
// bytes, and those are sent only under a lease of the bucket's index, which a commit's seal waits
// for and which is refused once the session is sealed (its commit began), committed or aborted.
import { errorText } from "../errors";
import { type TicketBase, openTicket, signTicket } from "../auth/ticket";
import { type DirectGeometry, SHARD_PATH } from "../shared/direct-protocol";
import { SHARD_WRITE_LEASE_MS } from "../meta/direct-sessions";
import { bucketIndex } from "../meta/stubs";
import { S3Error } from "../s3-error";
import { CodedShardLate, CodedShardRefused, storeCodedShard } from "../storage/coded-shard";
import { shardFileBytes } from "../storage/layout";
import { nodesById, shardKey, type StorageNode } from "../shared/nodes";
import type { DirectContext } from "./direct-context";

interface ShardTicket extends TicketBase {
  kind: "shard";
  bucket: string;
  /** The object the file is of: what a bucket policy is evaluated on when the ticket is used. */
  key: string;
  /** The version a read plan named (a policy's s3:GetObjectVersion), if it named one. */
  versioned?: true;
  /** The access key that obtained the ticket (null: an anonymous request a bucket policy allowed). */
  holder: string | null;
  /** The session a write ticket belongs to (its once-id): no shard file is written once it committed or was aborted. */
  session?: string;
  /** A write ticket stores the file (once, before the commit); a read ticket serves ranges of it. */
  write: boolean;
  storageId: string;
  shard: number;
  node: string;
  /** The part's size: with the geometry, the file's length and chunking. */
  size: number;
  geometry: DirectGeometry;
}

export interface ShardTicketSpec {
  bucket: string;
  key: string;
  versioned?: boolean;
  session?: string;
  layout: DirectGeometry & { storageId: string };
  size: number;
  shard: number;
  node: string;
  write: boolean;
  expires: number;
}

/** How long a presigned PUT of a shard file stays valid (the session itself may last longer). */
export const PRESIGNED_PUT_MS = 3600 * 1000;

/**
 * Where a client moves one shard file: straight to its node when the node gives clients URLs of
 * their own (a presigned S3 URL) and `presigned` allows it, otherwise through the gateway
 * (SHARD_PATH and a shard ticket, which stops writing once its session is committed or aborted).
 */
export async function shardUrl(ctx: DirectContext, spec: ShardTicketSpec, now = Date.now(), presigned = true): Promise<string> {
  const node = nodesById(ctx.config.nodes).get(spec.node);
  if (presigned && node?.presign) {
    // A presigned PUT cannot be taken back: it is kept short (a commit does not end it).
    const until = spec.write ? Math.min(spec.expires, now + PRESIGNED_PUT_MS) : spec.expires;
    return node.presign(shardKey(spec.layout.storageId, spec.shard), spec.write ? "PUT" : "GET", (until - now) / 1000);
  }
  return `${SHARD_PATH}${encodeURIComponent(spec.bucket)}/${await shardTicket(ctx.rootSecret, ctx.holder, spec)}`;
}

function shardTicket(rootSecret: string, holder: string | null, spec: ShardTicketSpec): Promise<string> {
  const { blockBytes, dataShards, parityShards, chunkBytes, storageId } = spec.layout;
  const geometry = { blockBytes, dataShards, parityShards, chunkBytes };
  const ticket: ShardTicket = {
    kind: "shard",
    bucket: spec.bucket,
    key: spec.key,
    ...(spec.versioned ? { versioned: true } : {}),
    holder,
    ...(spec.session === undefined ? {} : { session: spec.session }),
    expires: spec.expires,
    write: spec.write,
    storageId,
    shard: spec.shard,
    node: spec.node,
    size: spec.size,
    geometry,
  };
  return signTicket(rootSecret, ticket);
}

/** A shard ticket's file: its node, its key, its length; who obtained it, for what. */
export interface TicketedShard {
  node: StorageNode;
  key: string;
  fileBytes: number;
  ticket: ShardTicket;
}

/** Who obtained a shard ticket and what for: the caller checks that they still may (api/s3/direct.ts). */
export interface TicketUse {
  bucket: string;
  /** The object's key. */
  key: string;
  /** The access key id, or null for an anonymous request. */
  holder: string | null;
  write: boolean;
  versioned: boolean;
}

export function useOf(file: TicketedShard): TicketUse {
  const { bucket, key, holder, write, versioned } = file.ticket;
  return { bucket, key, holder, write, versioned: versioned === true };
}

/** The file the ticket `token` opens in `bucket` (for writing when `write`); AccessDenied when it opens none. */
export async function ticketedShard(ctx: DirectContext, bucket: string, token: string, write: boolean, now = Date.now()): Promise<TicketedShard> {
  const ticket = await openTicket<ShardTicket>(ctx.rootSecret, token, "shard", now);
  // A ticket names who obtained it and its object (older ones did not: they open nothing now);
  // a write ticket names its session.
  const named = ticket !== null && typeof ticket.key === "string" && (typeof ticket.holder === "string" || ticket.holder === null);
  if (!ticket || !named || ticket.bucket !== bucket || (write && !(ticket.write && typeof ticket.session === "string")))
    throw new S3Error("AccessDenied", "The shard ticket is not valid for this request, or it has expired.");
  const node = nodesById(ctx.config.nodes).get(ticket.node);
  if (!node) throw new S3Error("ServiceUnavailable", `Storage node ${ticket.node} is no longer configured.`);
  const fileBytes = shardFileBytes(ctx.core, { size: ticket.size, layout: ticket.geometry });
  return { node, key: shardKey(ticket.storageId, ticket.shard), fileBytes, ticket };
}

/**
 * How long a shard write may take to complete on its node once it holds its lease: well within
 * SHARD_WRITE_LEASE_MS, so that it is given up on before a commit could stop waiting for it.
 */
const SHARD_WRITE_FINISH_MS = SHARD_WRITE_LEASE_MS / 2;

const sessionClosed = () => new S3Error("AccessDenied", "The upload session was committed or aborted: its shard files are not written any more.");

/**
 * Stores a coded shard file of exactly `length` bytes, every chunk checked on the way: BadDigest
 * for a chunk that fails its checksum or a body of the wrong length (then nothing is stored).
 * Shard files are never written once their session's commit began, nor after its abort: checked
 * before the body is read, and again, under a lease, before the file goes live (its last bytes).
 */
export async function putShard(ctx: DirectContext, file: TicketedShard, body: ReadableStream<Uint8Array>, length: number): Promise<void> {
  if (length !== file.fileBytes) throw new S3Error("InvalidArgument", `This shard file is ${file.fileBytes} bytes long, not ${length}.`);
  const { ticket } = file;
  const session = ticket.session as string; // ticketedShard: a write ticket names its session
  const index = bucketIndex(ctx.env, ticket.bucket);
  if (!(await index.sessionWritable(session))) throw sessionClosed();
  const geometry = ctx.core.geometry({ size: ticket.size, ...ticket.geometry });
  const verifier = ctx.core.shardVerifier(geometry, ticket.shard);
  const held: { lease: string | null } = { lease: null };
  const publish = async (): Promise<number> => {
    const started = Date.now();
    held.lease = await index.beginShardWrite(session, ticket.expires);
    if (held.lease === null) throw sessionClosed();
    return started + SHARD_WRITE_FINISH_MS;
  };
  // Stored, or never will be: a commit need not wait any more. A node too slow to store the file
  // may still complete it after the abort: its lease is left to run out (if ending one fails, too).
  let settled = true;
  try {
    await storeCodedShard(file.node, file.key, body, verifier, publish);
  } catch (e) {
    if (e instanceof S3Error) throw e;
    if (e instanceof CodedShardRefused) throw new S3Error("BadDigest", e.message);
    settled = !(e instanceof CodedShardLate);
    throw new S3Error("ServiceUnavailable", `Storage node ${file.node.id} did not store the shard file: ${errorText(e)}`);
  } finally {
    verifier.free();
    geometry.free();
    if (held.lease !== null && settled)
      await index.endShardWrite(session, held.lease).catch((e: unknown) => console.error(JSON.stringify({ shardWriteLease: String(e) })));
  }
}

/** Bytes [start, end) of a ticketed shard file as its node serves them (the client verifies them), or null when it is not there. */
export function readShard(file: TicketedShard, start: number, end: number): Promise<ReadableStream<Uint8Array> | null> {
  return file.node.get(file.key, start, end);
}

/** The stored length of a ticketed shard file, or null when it is not there (a resumed upload asks). */
export function storedShardBytes(file: TicketedShard): Promise<number | null> {
  return file.node.head(file.key);
}
