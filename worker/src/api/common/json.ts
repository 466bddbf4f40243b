// The answers of the gateway's own endpoints (admin API): JSON.

/** The admin endpoints' answers: JSON, never cached (they show live state). */
export function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value, null, 2), { status, headers: { "content-type": "application/json", "cache-control": "no-store" } });
}
