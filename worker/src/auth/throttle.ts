// Clients that keep failing authentication are answered 503 SlowDown for a while, before their
// requests cost a key lookup or a signature, and without slowing anyone else. Per isolate, in
// bounded memory.
//
// Who a client is: its address, when one can be trusted (a header the client sets never is).
//   - Behind a reverse proxy, the header the operator names in SHARDGATE_CLIENT_IP_HEADER (one the
//     proxy sets, e.g. X-Real-IP; for X-Forwarded-For the address the proxy appended, the last),
//     believed only from a loopback or private peer (the proxy): a client that reaches workerd
//     directly is its peer address, whatever it writes in that header.
//   - Plain workerd (`npm start`): the TCP peer, which workerd puts in `request.cf.clientIp` as
//     "ip:port" (Linux and macOS; it sets no other `cf` field, and a client cannot set it). A
//     loopback or private peer is taken for a proxy or the operator's own tools, which many
//     clients may share: not throttled (name the proxy's header to throttle behind it).
//   - On Cloudflare's edge (`request.cf` without clientIp), CF-Connecting-IP, which the edge sets
//     and a client cannot; wrangler dev sets it from the peer as well.
//   - Otherwise (workerd on Windows gives no `request.cf`) no client is known and none is
//     throttled. The key lookups a flood can cause are bounded anyway (services/access-keys.ts).
// IPv6 addresses count by their /64, which one host usually holds whole.
import { metrics } from "../observability/metrics";
import { S3Error } from "../s3-error";
import { Lru } from "../shared/bounded";

/** Failed authentications a client may have within FAILURE_WINDOW_MS. */
export const MAX_FAILURES = 20;
export const FAILURE_WINDOW_MS = 10_000;
/** How long a client that failed more than that is answered SlowDown. */
export const SLOWDOWN_MS = 10_000;

interface Tally {
  windowStart: number;
  failures: number;
  blockedUntil: number;
}

/** Clients remembered, 10,000 at most: the least recently failing forgotten first. */
const tallies = new Lru<string, Tally>({ entries: 10_000 });

/** The client a request comes from, when it can be told (see above), else null. */
export function clientOf(request: Request, trustedHeader?: string): string | null {
  let address: string | null = null;
  const cf = request.cf as { clientIp?: unknown } | undefined;
  const peer = typeof cf?.clientIp === "string" ? withoutPort(cf.clientIp) : null;
  // The proxy's header is believed only from the proxy: a client that reaches workerd directly (a
  // peer that is not local) is its own address, whatever header it sends.
  const fromProxy = peer === null || isLocal(peer);
  if (trustedHeader && fromProxy) {
    const value = request.headers.get(trustedHeader);
    address = value === null ? null : (value.split(",").pop() ?? "").trim();
  } else if (peer !== null) {
    if (isLocal(peer)) return null;
    address = peer;
  } else if (typeof cf === "object" && cf !== null) {
    address = request.headers.get("cf-connecting-ip")?.trim() ?? null;
  }
  if (!address || address.length > 64) return null;
  address = address.replace(/^\[|\]$/g, "").replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, "");
  return address.includes(":") ? ipv6Prefix(address) : address;
}

/** "1.2.3.4:5678" → "1.2.3.4", "[2001:db8::1]:5678" → "2001:db8::1". */
function withoutPort(peer: string): string | null {
  if (peer.startsWith("[")) {
    const end = peer.indexOf("]");
    return end < 0 ? null : peer.slice(1, end);
  }
  const colon = peer.lastIndexOf(":");
  return colon < 0 ? peer : peer.slice(0, colon);
}

/** Loopback, private (RFC 1918, unique local) and link-local addresses. */
function isLocal(address: string): boolean {
  const a = address.toLowerCase().replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, "");
  const v4 = /^(\d+)\.(\d+)\.\d+\.\d+$/.exec(a);
  if (v4) {
    const [x, y] = [Number(v4[1]), Number(v4[2])];
    return x === 127 || x === 10 || (x === 172 && y >= 16 && y < 32) || (x === 192 && y === 168) || (x === 169 && y === 254);
  }
  return a === "::1" || /^f[cd]/.test(a) || /^fe[89ab]/.test(a);
}

/** The first four groups of an IPv6 address (its /64), or the address as given when it does not parse. */
function ipv6Prefix(address: string): string {
  const bare = address.split("%")[0]!.toLowerCase();
  const halves = bare.split("::");
  if (halves.length > 2) return bare;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const groups = halves.length === 2 ? [...head, ...Array<string>(Math.max(0, 8 - head.length - tail.length)).fill("0"), ...tail] : head;
  return `${groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/**
 * Runs `authenticate` for the client `clientOf` names: refused at once with SlowDown while it is
 * throttled, and a failure (an S3Error it throws) counted against it. The client is told only when
 * a tally exists or a failure is counted (reading `request.cf` is a tenth of a millisecond).
 */
export async function throttled<T>(clientOf: () => string | null, authenticate: () => Promise<T>): Promise<T> {
  let client = tallies.size === 0 ? undefined : clientOf();
  const blockedUntil = client ? (tallies.peek(client)?.blockedUntil ?? 0) : 0;
  const start = Date.now();
  if (blockedUntil > start) {
    metrics.add("shardgate_auth_rejected_total", 1, { reason: "SlowDown" });
    throw new S3Error("SlowDown", "Please reduce your request rate.", { "Retry-After": String(Math.ceil((blockedUntil - start) / 1000)) });
  }
  try {
    return await authenticate();
  } catch (error) {
    const reason = error instanceof S3Error ? error.code : "InternalError";
    metrics.add("shardgate_auth_rejected_total", 1, { reason });
    // A gateway that cannot answer is not the client's failure.
    if (reason === "SlowDown" || !(error instanceof S3Error) || error.status >= 500) throw error;
    client ??= clientOf();
    if (client === null) throw error;
    const now = Date.now();
    let tally = tallies.peek(client);
    if (!tally || now - tally.windowStart > FAILURE_WINDOW_MS) tally = { windowStart: now, failures: 0, blockedUntil: tally?.blockedUntil ?? 0 };
    tally.failures++;
    if (tally.failures > MAX_FAILURES) tally.blockedUntil = now + SLOWDOWN_MS;
    tallies.set(client, tally);
    throw error;
  }
}
