// Where the gateway is: the console is served on an origin of its own (docs/console.md), and that
// server says which gateway it belongs to in /config.json (scripts/workerd/console-assets.js under
// `npm start` and `npm run dev`, worker/src/console.ts on Cloudflare).

/** The gateway's endpoint, e.g. "http://127.0.0.1:8787" (no trailing slash). */
export async function gatewayEndpoint(): Promise<string> {
  const res = await fetch("/config.json", { cache: "no-store" });
  if (!res.ok) throw new Error(`The console's configuration could not be read (HTTP ${res.status}).`);
  const { gateway } = (await res.json()) as { gateway?: unknown };
  if (typeof gateway !== "string" || !/^https?:\/\/[^/]+/.test(gateway))
    throw new Error("The console's configuration names no gateway (SHARDGATE_GATEWAY_URL on Cloudflare).");
  return gateway.replace(/\/+$/, "");
}
