// Where the gateway is: the console is served on an origin of its own (docs/console.md), and that
// server says which gateway it belongs to in /config.json (scripts/workerd/console-assets.js under
// `npm start` and `npm run dev`, worker/src/console.ts on Cloudflare), and the region the gateway
// is configured with (SHARDGATE_REGION, shardgate.json's "region"), which the console signs with.
import { setRegion } from "./s3";

/** The gateway's endpoint, e.g. "http://127.0.0.1:8787" (no trailing slash); the region is handed to the S3 client (setRegion). */
export async function gatewayEndpoint(): Promise<string> {
  const res = await fetch("/config.json", { cache: "no-store" });
  if (!res.ok) throw new Error(`The console's configuration could not be read (HTTP ${res.status}).`);
  const { gateway, region } = (await res.json()) as { gateway?: unknown; region?: unknown };
  if (typeof gateway !== "string" || !/^https?:\/\/[^/]+/.test(gateway))
    throw new Error("The console's configuration names no gateway (SHARDGATE_GATEWAY_URL on Cloudflare).");
  if (region !== undefined && (typeof region !== "string" || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(region)))
    throw new Error("The console's configuration names no valid region (SHARDGATE_REGION).");
  // An older server says none: the gateway's default.
  setRegion(typeof region === "string" ? region : "us-east-1");
  return gateway.replace(/\/+$/, "");
}
