import { SHARD_PATH } from "../../shared/direct-protocol";

// Turns a request into the operation it names (Garage's design: one name per operation, so dispatch
// is exhaustive and an operation we do not implement is refused by name). The routes themselves are
// declared with each operation in api/operations.ts; this module compiles them into a matcher and
// knows how a URL names a bucket and a key.

/** Where a request acts: S3's service, bucket and object; the gateway's shard URLs, metrics and admin API. */
export type Scope = "service" | "bucket" | "object" | "shard" | "metrics" | "admin";

export type Method = "GET" | "HEAD" | "PUT" | "POST" | "DELETE" | "OPTIONS";

/** What a route may look at besides its scope, method and sub-resource. */
export interface RouteRequest {
  method: string;
  query: URLSearchParams;
  headers: Headers;
}

/** One way a request reaches an operation. */
export interface Route {
  on: Scope;
  /** The method; absent: any. */
  method?: Method;
  /** The sub-resource (a query parameter, e.g. `tagging`) the request names; absent: none. */
  sub?: string;
  /** Whatever sub-resources the query names (a CORS preflight). */
  anyQuery?: true;
  /** A further condition (a header, a parameter's value); a route with one is tried first. */
  when?: (request: RouteRequest) => boolean;
}

/** A request routed: the operation's name and where it acts (`rest`: the path after a gateway prefix). */
export interface Routed<Op extends string> {
  op: Op;
  scope: Scope;
  bucket: string | null;
  key: string | null;
  rest: string | null;
}

/** A request naming nothing we implement: refused with NotImplemented, by `name`, once authenticated. */
export interface Unrouted {
  op: "NotImplemented";
  name: string;
}

export type Endpoint<Op extends string> = Routed<Op> | Unrouted;

export interface Target {
  bucket: string | null;
  key: string | null;
}

/**
 * Splits host and path into bucket and key: virtual-hosted style (`bucket.<suffix>`) or path
 * style (`/bucket/key`). Keys keep every character, including leading, doubled and trailing
 * slashes.
 */
export function resolveTarget(url: URL, virtualHostSuffix: string): Target {
  const path = decodePath(url.pathname);
  const host = url.hostname.toLowerCase();
  const suffix = `.${virtualHostSuffix.toLowerCase()}`;
  if (host.endsWith(suffix) && host.length > suffix.length) {
    const key = path.slice(1);
    return { bucket: host.slice(0, -suffix.length), key: key === "" ? null : key };
  }
  const rest = path.slice(1);
  if (rest === "") return { bucket: null, key: null };
  const slash = rest.indexOf("/");
  if (slash < 0) return { bucket: rest, key: null };
  const key = rest.slice(slash + 1);
  return { bucket: rest.slice(0, slash), key: key === "" ? null : key };
}

/** A path with its %-escapes decoded; as it came when they do not decode (a lone "%", bad UTF-8). */
export function decodePath(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
}

/** The gateway's own signed endpoint (no bucket may start with "_", so it cannot shadow one). */
export const METRICS_PATH = "/_shardgate/metrics";
/** The admin API's paths: api/admin-app.ts routes within them. */
const ADMIN_PATHS = "/_shardgate/admin/";

const VERB: Record<string, string> = { GET: "Get", HEAD: "Get", PUT: "Put", DELETE: "Delete", POST: "Post" };
const SCOPE_NAMES: Record<Scope, string> = {
  service: "the service",
  bucket: "a bucket",
  object: "an object",
  shard: "a shard URL",
  metrics: "the metrics endpoint",
  admin: "the admin API",
};

/** Sub-resources by scope, with the name S3 gives their operations (`Get` + name …), implemented or not. */
export type SubresourceNames = Partial<Record<Scope, Record<string, string>>>;

/** One scope's routes: by sub-resource, in the order they are tried, and those that name none. */
interface ScopeRoutes<Op extends string> {
  anyQuery: [Op, Route][];
  subs: [string, [Op, Route][]][];
  plain: [Op, Route][];
}

/**
 * The matcher for `routes`: a request names its scope by path (and host), then the first
 * sub-resource its query names (in the order the routes declare them, then the names S3 has that
 * no route takes), then its method and any condition. A request that names a sub-resource no
 * route of its method takes is refused by S3's name for it (`DeleteBucketVersioning`).
 */
export function compileRouter<Op extends string>(routes: readonly [Op, Route][], names: SubresourceNames) {
  const scopes = new Map<Scope, ScopeRoutes<Op>>();
  // Routes with a condition first, then those for one method, then those for any.
  const rank = ([, r]: [Op, Route]) => (r.when ? 0 : r.method ? 1 : 2);
  const sorted = [...routes].sort((a, b) => rank(a) - rank(b));
  for (const scope of Object.keys(SCOPE_NAMES) as Scope[]) {
    const mine = sorted.filter(([, r]) => r.on === scope);
    // Sub-resources in the order the routes declare them (not the order they are tried in within one).
    const declared = routes.flatMap(([, r]) => (r.on === scope && r.sub ? [r.sub] : []));
    const subs = [...new Set([...declared, ...Object.keys(names[scope] ?? {})])];
    scopes.set(scope, {
      anyQuery: mine.filter(([, r]) => r.anyQuery),
      subs: subs.map((sub) => [sub, mine.filter(([, r]) => r.sub === sub)]),
      plain: mine.filter(([, r]) => !r.sub && !r.anyQuery),
    });
  }

  const pick = (candidates: [Op, Route][], request: RouteRequest): Op | null => {
    for (const [op, r] of candidates) if ((!r.method || r.method === request.method) && (!r.when || r.when(request))) return op;
    return null;
  };

  function match(scope: Scope, target: Target, rest: string | null, request: RouteRequest): Endpoint<Op> {
    const routed = (op: Op | null, name: () => string): Endpoint<Op> =>
      op === null ? { op: "NotImplemented", name: name() } : { op, scope, bucket: target.bucket, key: target.key, rest };
    const { anyQuery, subs, plain } = scopes.get(scope) as ScopeRoutes<Op>;
    const any = pick(anyQuery, request);
    if (any !== null) return routed(any, () => "");
    for (const [sub, candidates] of subs) {
      if (!request.query.has(sub)) continue;
      const family = names[scope]?.[sub];
      return routed(pick(candidates, request), () => (family ? `${VERB[request.method] ?? request.method}${family}` : `${request.method} on ?${sub}`));
    }
    return routed(pick(plain, request), () => `${request.method} on ${SCOPE_NAMES[scope]}`);
  }

  /** The operation a request names: the gateway's own endpoints first, then S3's. */
  return function route(method: string, url: URL, virtualHostSuffix: string, headers: Headers): Endpoint<Op> {
    const request = { method, query: url.searchParams, headers };
    const none = { bucket: null, key: null };
    if (url.pathname === METRICS_PATH) return match("metrics", none, null, request);
    if (url.pathname.startsWith(ADMIN_PATHS)) return match("admin", none, url.pathname.slice(ADMIN_PATHS.length), request);
    if (url.pathname.startsWith(SHARD_PATH)) {
      // A shard file's URL: SHARD_PATH, the bucket, the ticket (docs/direct-path.md).
      const rest = url.pathname.slice(SHARD_PATH.length);
      const slash = rest.indexOf("/");
      if (slash <= 0) return { op: "NotImplemented", name: `${method} on a shard URL without a bucket` };
      return match("shard", { bucket: decodePath(rest.slice(0, slash)), key: null }, rest.slice(slash + 1), request);
    }
    const target = resolveTarget(url, virtualHostSuffix);
    return match(target.bucket === null ? "service" : target.key === null ? "bucket" : "object", target, null, request);
  };
}
