// Helpers of the admin endpoints (/_shardgate/admin/*): their JSON answers and batch sizes.

const DEFAULT_BATCH = 100;
const MAX_BATCH = 1000;

/** `max-objects` of an admin walk: `fallback` when absent or not a number, within 1..MAX_BATCH. */
export function batchSize(params: URLSearchParams, fallback = DEFAULT_BATCH): number {
  return Math.min(Math.max(Number(params.get("max-objects") ?? fallback) || fallback, 1), MAX_BATCH);
}

/** The admin endpoints' answers: JSON, never cached (they show live state). */
export function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value, null, 2), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } });
}
