// GET /_shardgate/metrics: the gateway-wide counters in Prometheus text format. Signed with the
// gateway's credentials like any S3 request, or `Authorization: Bearer <SHARDGATE_METRICS_TOKEN>`
// when that secret is set (what a Prometheus scraper can send).
import { constantTimeEqual } from "../../auth/crypto";
import type { Env } from "../../config";
import { textResponse } from "../../errors";
import { S3Error } from "../../s3-error";
import { metricsStore } from "../../meta/stubs";
import { metrics, renderPrometheus } from "../../observability/metrics";

/** True for `Authorization: Bearer <SHARDGATE_METRICS_TOKEN>`, false without a bearer token (the
 *  request must then be SigV4-signed); AccessDenied for a wrong one or when no token is set. */
export function bearerAuthorized(request: Request, env: Env): boolean {
  const header = request.headers.get("authorization");
  if (!header?.startsWith("Bearer ")) return false;
  const token = env.SHARDGATE_METRICS_TOKEN;
  if (token && constantTimeEqual(token, header.slice("Bearer ".length))) return true;
  throw new S3Error("AccessDenied", "The bearer token is not valid for the metrics endpoint.");
}

export async function getMetrics(env: Env): Promise<Response> {
  const store = metricsStore(env);
  await metrics.flush(store); // this isolate's pending counts first, so they are in the totals
  const body = renderPrometheus(await store.snapshot());
  return textResponse(body, { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" } });
}
