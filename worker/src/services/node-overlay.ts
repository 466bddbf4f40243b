// Changes to the node set while the gateway runs, kept in the registry's node overlay
// (meta/node-overlay.ts); config.ts applies the overlay to the configured nodes and keeps it per
// isolate. Each change answers the overlay it made, which the caller installs at once
// (config.ts installOverlay): the isolate that made it sees it at once, the others within
// OVERLAY_MAX_AGE_MS. A drain walk proves a node empty only when it begins after that
// (DRAIN_SETTLE_MS): by then no isolate can still be placing new shard files on it.
import { errorText } from "../errors";
import type { Env, GatewayConfig, OverlaySource } from "../config";
import { open, requireMasterKey, seal } from "../auth/secret-box";
import type { NodeOverlay, NodeState, OverlayNode, StoredS3Spec } from "../meta/node-overlay";
import { bucketRegistry } from "../meta/stubs";
import { S3Error } from "../s3-error";
import { withinStall } from "../shared/bounded";
import type { Core } from "../shared/core-api";
import { nodeText } from "../shared/nodes";
import { S3Node, type S3NodeSpec } from "../storage/s3-node";
import { partsOnNode } from "./orphans";

/** What config.ts's OVERLAY_MAX_AGE_MS is (a value, not an import: services import only types from config.ts), plus a second. */
export const DRAIN_SETTLE_MS = 6_000;

/** The overlay as the registry holds it, and its secrets opened under the master key config.ts passes (config.ts applies it). */
export function overlaySource(env: Env): OverlaySource {
  return {
    read: () => bucketRegistry(env).nodeOverlay(),
    openSecret: (id, sealed, master) => {
      if (master === null) return Promise.reject(new Error("SHARDGATE_MASTER_KEY is not set"));
      return open(master, "node secrets v1", id, sealed);
    },
  };
}

// --- changes --------------------------------------------------------------------------------------

export interface S3NodeInput extends S3NodeSpec {
  id: string;
}

const NODE_ID = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/;

/** The request's node id, or the 400 that says what an id may be. */
export function checkNodeId(id: unknown): string {
  if (typeof id !== "string" || !NODE_ID.test(id)) {
    throw new S3Error("InvalidArgument", "id must be 1 to 63 characters: a letter, then letters, digits, _ or -.");
  }
  return id;
}

/**
 * Adds an S3 node after a probe (a small object written, read back and deleted with the given
 * credentials): a node that fails it is refused and nothing is kept. Its secret is stored sealed.
 */
export async function addS3Node(env: Env, current: GatewayConfig, input: S3NodeInput): Promise<NodeOverlay> {
  const master = requireMasterKey(current.masterKey, "Nodes added at runtime");
  if (current.nodes.some((n) => n.id === input.id)) throw new S3Error("NodeAlreadyExists", `There is a node ${input.id} already.`);
  const { id, secretAccessKey, ...spec } = input;
  await probeS3Node(id, { ...spec, secretAccessKey }, Math.min(current.nodeStallMs, PROBE_TIMEOUT_MS));
  const stored: StoredS3Spec = { kind: "s3", ...spec, sealedSecret: await seal(master, "node secrets v1", id, secretAccessKey), added: Date.now() };
  const overlay = await bucketRegistry(env).nodeAdd(id, JSON.stringify(stored), Date.now());
  if (!overlay) throw new S3Error("NodeAlreadyExists", `There is a node ${id} already.`);
  return overlay;
}

const PROBE_TIMEOUT_MS = 10_000;

/** Writes, reads back and deletes a small object on the node within `timeoutMs`; throws NodeProbeFailed saying which step failed. */
async function probeS3Node(id: string, spec: S3NodeSpec, timeoutMs: number): Promise<void> {
  const node = new S3Node(id, spec, timeoutMs);
  const key = `shardgate-probe/${crypto.randomUUID()}`;
  const text = `shardgate probe of node ${id}`;
  const body = new TextEncoder().encode(text);
  let step = "PUT";
  const run = async () => {
    await node.put(key, body);
    step = "GET";
    const stream = await node.get(key, 0, body.length);
    // One byte more than was written is read at most: enough to tell a longer answer.
    const back = stream ? await nodeText(new Response(stream), body.length + 1) : null;
    if (back?.text !== text) throw new Error("the object written did not read back the same");
    step = "DELETE";
    await node.delete([key]);
  };
  try {
    const running = run();
    running.catch(() => {}); // when the timeout wins, the probe's own failure comes later and is not news
    await withinStall(running, timeoutMs, () => new Error(`no answer within ${timeoutMs} ms`));
  } catch (e) {
    const why = errorText(e).replaceAll(spec.secretAccessKey, "…");
    throw new S3Error(
      "NodeProbeFailed",
      `Node ${id} failed its probe (${step} of a small object in bucket ${spec.bucket}): ${why.slice(0, 300)}. Nothing was added.`,
    );
  }
}

/** Marks a node draining or active again, refusing what would leave fewer than k + m writable nodes. */
export async function setNodeState(env: Env, current: GatewayConfig, id: string, state: NodeState): Promise<NodeOverlay> {
  if (!current.nodes.some((n) => n.id === id)) throw noSuchNode(id);
  const fromVars = current.configuredNodes.draining;
  if (state === "active" && fromVars.includes(id)) {
    throw new S3Error(
      "InvalidRequest",
      `Node ${id} is listed in SHARDGATE_DRAINING_NODES: take it out of that list (shardgate.json's vars) and restart to make it active.`,
    );
  }
  const minimum = current.dataShards + current.parityShards;
  const rule = { configured: current.configuredNodes.ids, varsDraining: fromVars, minimum };
  const change = await bucketRegistry(env).nodeSetState(id, state, rule, Date.now());
  if (!change.ok) {
    throw new S3Error(
      "TooFewNodes",
      `Draining ${id} would leave ${change.writable} writable nodes; ${current.dataShards}+${current.parityShards} needs at least ${minimum}. Add a node first.`,
    );
  }
  return change.overlay;
}

/** Records a batch of a drain walk of `id`; the time the node was found drained (empty), or null. */
export async function recordDrainBatch(env: Env, id: string, batch: { first: boolean; failed: boolean; last: boolean }): Promise<number | null> {
  return bucketRegistry(env).nodeDrainBatch(id, batch, DRAIN_SETTLE_MS, Date.now());
}

/** How long a drain walk that begins now must wait before it can prove the node empty (ms, 0: none). */
export async function drainSettleWait(env: Env, id: string, now = Date.now()): Promise<number> {
  const since = (await bucketRegistry(env).nodeOverlay()).nodes.find((n) => n.id === id)?.drainingSince ?? null;
  return since === null ? 0 : Math.max(0, since + DRAIN_SETTLE_MS - now);
}

/** Removes an added node that is draining and that a clean drain walk found empty. */
export async function removeNode(env: Env, core: Core, current: GatewayConfig, id: string): Promise<NodeOverlay> {
  if (current.configuredNodes.ids.includes(id)) {
    throw new S3Error(
      "InvalidRequest",
      `Node ${id} is configured (SHARDGATE_NODES or shardgate.json): drain it, then take it out of the configuration and restart. Only nodes added at runtime are removed here.`,
    );
  }
  const row = (await bucketRegistry(env).nodeOverlay()).nodes.find((n) => n.id === id);
  // Checked again now: no manifest of any version, upload or garbage may still place a shard file on it.
  const left = row?.spec && row.state === "draining" && row.drainedAt !== null ? await partsOnNode(env, core, id) : 0;
  if (left > 0) throw new S3Error("NodeNotEmpty", `Node ${id} still holds shard files of ${left} parts: drain it again (shardgate node drain ${id}).`);
  const { result, overlay } = await bucketRegistry(env).nodeRemove(id);
  if (result === "unknown") throw noSuchNode(id);
  if (result === "not-draining") throw new S3Error("NodeNotDraining", `Node ${id} is not draining: mark it draining and drain it to the end first.`);
  if (result === "not-drained") {
    throw new S3Error(
      "NodeNotEmpty",
      `Node ${id} has not been found empty: run its drain walk to the end (shardgate node drain ${id}) with no failures first.`,
    );
  }
  return overlay;
}

export function noSuchNode(id: string): S3Error {
  return new S3Error("NoSuchNode", `There is no node ${id}.`);
}

/** What the admin API shows of each node's overlay row: where it comes from, its state, never a secret. */
export interface NodeFacts {
  source: "configured" | "added";
  state: NodeState;
  drainedAt: number | null;
  endpoint?: string;
  bucket?: string;
  region?: string;
}

/** The overlay as the registry holds it now, by node id, without secrets. */
export async function nodeFacts(env: Env): Promise<Map<string, NodeFacts>> {
  const overlay = await bucketRegistry(env).nodeOverlay();
  return new Map(overlay.nodes.map((n): [string, NodeFacts] => [n.id, factsOf(n)]));
}

function factsOf(n: OverlayNode): NodeFacts {
  const facts: NodeFacts = { source: n.spec === null ? "configured" : "added", state: n.state, drainedAt: n.drainedAt };
  if (n.spec === null) return facts;
  const { endpoint, bucket, region } = JSON.parse(n.spec) as StoredS3Spec;
  return { ...facts, endpoint, bucket, region };
}
