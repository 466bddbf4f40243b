// GET /_shardgate/metrics: the gateway-wide counters and histogram, and this isolate's gauges (its
// readiness check and node health, the heal queues' size, the bytes per node the last scrub pass
// counted, the build), in Prometheus text format. Signed with the
// gateway's credentials like any S3 request, or `Authorization: Bearer <SHARDGATE_METRICS_TOKEN>`
// when that secret is set (what a Prometheus scraper can send).
import { constantTimeEqual } from "../../auth/crypto";
import pkg from "../../../package.json";
import { type Env, gatewayConfig } from "../../config";
import { coreVersion } from "../../core";
import { textResponse } from "../../errors";
import { S3Error } from "../../s3-error";
import { metricsStore } from "../../meta/stubs";
import { type GaugeSample, metrics, renderPrometheus } from "../../observability/metrics";
import { cacheStore } from "../../services/cache-status";
import { healQueueDepth, notificationDepth } from "../../services/queue-depths";
import { overlaySource } from "../../services/node-overlay";
import { readiness } from "../../services/readiness";
import { scrubStatus } from "../../services/scrub";
import { GuardedNode, nodeHealth } from "../../shared/node-health";

/** True for `Authorization: Bearer <token>` (GatewayConfig.metricsToken), false without a bearer token (the
 *  request must then be SigV4-signed); AccessDenied for a wrong one or when no token is set. */
export function bearerAuthorized(request: Request, token: string | undefined): boolean {
  const header = request.headers.get("authorization");
  if (!header?.startsWith("Bearer ")) return false;
  if (token && constantTimeEqual(token, header.slice("Bearer ".length))) return true;
  throw new S3Error("AccessDenied", "The bearer token is not valid for the metrics endpoint.");
}

export async function getMetrics(env: Env, waitUntil: (promise: Promise<unknown>) => void): Promise<Response> {
  const store = metricsStore(env);
  await metrics.flush(store); // this isolate's pending counts first, so they are in the totals
  const [totals, gauges] = await Promise.all([store.snapshot(), scrapeGauges(env, waitUntil)]);
  const body = renderPrometheus(totals, gauges);
  return textResponse(body, { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" } });
}

/** The gauges as of now: each from what is kept or cheap (readiness and heal counts are cached). */
async function scrapeGauges(env: Env, waitUntil: (promise: Promise<unknown>) => void): Promise<GaugeSample[]> {
  const config = await gatewayConfig(env, overlaySource(env), waitUntil);
  const [ready, heal, scrub, notify] = await Promise.all([
    readiness(env, config, waitUntil),
    healQueueDepth(env),
    scrubStatus(env).catch(() => null),
    notificationDepth(env),
  ]);
  const gauges: GaugeSample[] = [
    { name: "shardgate_build_info", labels: { version: pkg.version, core: coreVersion() }, value: 1 },
    { name: "shardgate_ready", value: ready.ready ? 1 : 0 },
  ];
  gauges.push(...(await cacheGauges(env)));
  for (const probe of ready.nodes) gauges.push({ name: "shardgate_node_up", labels: { node: probe.id }, value: probe.up ? 1 : 0 });
  for (const node of config.nodes) {
    const health = node instanceof GuardedNode ? node.health : nodeHealth(node.id);
    gauges.push({ name: "shardgate_node_breaker_open", labels: { node: node.id }, value: health.refusing ? 1 : 0 });
    if (health.latencyMs !== null) gauges.push({ name: "shardgate_node_latency_seconds", labels: { node: node.id }, value: health.latencyMs / 1000 });
  }
  // Bytes per node: what the scrub's last complete pass counted (one registry call); no cheaper source knows them.
  const pass = scrub?.state.lastPass;
  if (pass) {
    for (const [node, usage] of Object.entries(pass.usage ?? {})) {
      gauges.push({ name: "shardgate_node_stored_bytes", labels: { node }, value: usage.bytes });
      gauges.push({ name: "shardgate_node_stored_files", labels: { node }, value: usage.files });
    }
    const finished = Date.parse(pass.finished);
    if (Number.isFinite(finished)) gauges.push({ name: "shardgate_scrub_last_pass_finished_timestamp_seconds", value: finished / 1000 });
  }
  if (heal) {
    gauges.push({ name: "shardgate_heal_queue_objects", value: heal.objects });
    gauges.push({ name: "shardgate_heal_queue_age_seconds", value: Math.max(0, (Date.now() - heal.at) / 1000) });
  }
  if (notify) {
    gauges.push({ name: "shardgate_notification_outbox_events", value: notify.pending });
    gauges.push({ name: "shardgate_notification_dead_letters", value: notify.dead });
    gauges.push({ name: "shardgate_replication_pending", value: notify.replicationPending });
    gauges.push({ name: "shardgate_replication_failed", value: notify.replicationDead });
  }
  return gauges;
}

async function cacheGauges(env: Env): Promise<GaugeSample[]> {
  const store = await cacheStore(env);
  if (!store) return [];
  return [
    { name: "shardgate_block_cache_bytes", value: store.bytes },
    { name: "shardgate_block_cache_entries", value: store.entries },
    { name: "shardgate_block_cache_capacity_bytes", value: store.capacity },
    { name: "shardgate_block_cache_evictions", value: store.evictions },
  ];
}
