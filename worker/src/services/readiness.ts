// Whether the gateway can serve (GET /_shardgate/ready, for load balancers and orchestrators):
// metadata answers (one primary-key lookup in the bucket registry) and at least k + 1 nodes are
// reachable (a HEAD of a key that never exists on every node, through its circuit breaker, so an
// open breaker answers at once without I/O). The endpoint is unauthenticated, so the work is
// bounded whoever polls: one check per configuration per isolate at a time, its result kept for
// READY_CACHE_MS; requests meanwhile answer the last result (or wait, on their own timers, for the
// first one); every probe is timed out; at most PROBES_AT_ONCE nodes are probed at once. What the
// answer names is counts and kinds of problems, never a node's endpoint or an error's text.
import type { Env, GatewayConfig } from "../config";
import { bucketRegistry } from "../meta/stubs";
import { keptResult, mapBounded, withinStall } from "../shared/bounded";
import type { StorageNode } from "../shared/nodes";

/** How long a check's result answers every request (ms). */
export const READY_CACHE_MS = 2_000;
/** How long a probe (metadata or a node) may take before it counts as failed (ms). */
export const PROBE_TIMEOUT_MS = 2_000;
/** Nodes probed at once. */
const PROBES_AT_ONCE = 8;
/** The key a node probe HEADs: no shard key looks like it (shared/nodes.ts shardKey), so no node has it. */
const PROBE_KEY = "_shardgate-ready-probe";

export interface NodeProbe {
  id: string;
  up: boolean;
}

export interface Readiness {
  ready: boolean;
  /** What is missing, for people: e.g. "metadata", "nodes: 2 of 6 reachable, 5 needed". */
  missing: string[];
  nodes: NodeProbe[];
  /** When the check started (ms since the epoch). */
  at: number;
}

/** Per configuration (one per isolate in production; tests make several). */
const states = new WeakMap<GatewayConfig, ReturnType<typeof keptResult<Readiness>>>();
/** Checks started in this isolate (tests: polling must not multiply them). */
let checks = 0;

export function readinessChecks(): number {
  return checks;
}

/**
 * The gateway's readiness, at most READY_CACHE_MS old (shared/bounded.ts keptResult: a client that
 * disconnects cannot leave a stale result in place); before the first result, a request that finds
 * a check in progress polls for it on its own timer.
 */
export async function readiness(env: Env, config: GatewayConfig, waitUntil: (promise: Promise<unknown>) => void): Promise<Readiness> {
  let kept = states.get(config);
  if (!kept) {
    // A check still running after the longest it can take was abandoned (its request cancelled).
    kept = keptResult("readiness", READY_CACHE_MS, 3 * PROBE_TIMEOUT_MS, (at) => {
      checks++;
      return check(env, config, at);
    });
    states.set(config, kept);
  }
  while (kept.last() === null && kept.running()) await new Promise((r) => setTimeout(r, 50));
  return (await kept.get(waitUntil)) as Readiness;
}

async function check(env: Env, config: GatewayConfig, at: number): Promise<Readiness> {
  const [metadata, nodes] = await Promise.all([answers(() => bucketRegistry(env).get("")), probeNodes(config.nodes)]);
  const missing: string[] = [];
  if (!metadata) missing.push("metadata");
  const up = nodes.filter((n) => n.up).length;
  const needed = config.dataShards + 1;
  if (up < needed) missing.push(`nodes: ${up} of ${nodes.length} reachable, ${needed} needed`);
  return { ready: missing.length === 0, missing, nodes, at };
}

/** Every node probed, PROBES_AT_ONCE at a time, in configuration order. */
function probeNodes(nodes: readonly StorageNode[]): Promise<NodeProbe[]> {
  return mapBounded(nodes, PROBES_AT_ONCE, async (n) => ({ id: n.id, up: await answers(() => n.head(PROBE_KEY)) }));
}

/** Whether `call` answers (anything, null included) within PROBE_TIMEOUT_MS. */
async function answers(call: () => Promise<unknown>): Promise<boolean> {
  try {
    const answered = call().then(() => true);
    return (await withinStall(answered, PROBE_TIMEOUT_MS)) === true;
  } catch {
    return false;
  }
}
