// GET /_shardgate/ready: 200 when the gateway can serve, else 503 with what is missing, as a
// small JSON body: `{"status":"not ready","missing":["metadata","nodes: 2 of 6 reachable, 5 needed"]}`.
// No credentials needed (like /_shardgate/health): it names kinds of problems and counts, never a
// node, an endpoint or an error's text, and its work is bounded and cached (services/readiness.ts).
// An invalid configuration is missing too: the variables it names, not their values.
import { errorText } from "../../errors";
import { type Env, gatewayConfig, loadConfig } from "../../config";
import { overlaySource } from "../../services/node-overlay";
import { readiness } from "../../services/readiness";

const HEADERS = { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" };

export async function getReady(env: Env, exec: { waitUntil(promise: Promise<unknown>): void }): Promise<Response> {
  let missing: string[];
  try {
    const base = loadConfig(env);
    // With the nodes added at runtime; when the overlay cannot be read, the configured nodes (readiness names metadata then).
    const config = await within(
      gatewayConfig(env, overlaySource(env), (p) => exec.waitUntil(p)),
      OVERLAY_WAIT_MS,
    ).catch(() => base);
    missing = (await readiness(env, config, (p) => exec.waitUntil(p))).missing;
  } catch (e) {
    missing = [configurationProblem(e)];
  }
  const body = missing.length === 0 ? { status: "ready" } : { status: "not ready", missing };
  return new Response(JSON.stringify(body), { status: missing.length === 0 ? 200 : 503, headers: HEADERS });
}

/** How long readiness waits for the node overlay before it checks the configured nodes alone. */
const OVERLAY_WAIT_MS = 2_000;

function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timed out")), ms);
  });
  return Promise.race([p, late]).finally(() => {
    if (timer !== undefined) clearTimeout(timer);
  });
}

let loggedAt = 0;

/** An invalid configuration said by the variables it names (values may be secrets: never echoed). */
function configurationProblem(e: unknown): string {
  const message = errorText(e);
  // Logged once a minute at most: a load balancer (or anyone) polling must not flood the log.
  const now = Date.now();
  if (now - loggedAt >= 60_000) {
    loggedAt = now;
    console.error(JSON.stringify({ ready: { configuration: message } }));
  }
  const names = [...new Set(message.match(/\bSHARDGATE_[A-Z0-9_]+\b/g) ?? [])].sort();
  return names.length > 0 ? `configuration: invalid ${names.join(", ")}` : "configuration: invalid (see the gateway's log)";
}
