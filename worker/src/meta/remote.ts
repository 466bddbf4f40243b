// Metadata held by another process. `npm start -- --processes N` runs N workerd processes on one
// listening socket (scripts/serve.mjs); the first, the home process, hosts every Durable Object and
// serves them to the others through MetaGate, a Worker entrypoint reached over HTTP on a Unix
// socket in the data directory (its owner's only: scripts/serve.mjs runs with umask 0077 and keeps
// the directory 0700). In the other processes env.SHARDGATE_META is bound to it, and meta/stubs.ts
// hands out stand-ins that forward each method call there: one HTTP request to the home process,
// which calls the object.
import { type DurableObject, WorkerEntrypoint } from "cloudflare:workers";
import type { Env } from "../config";
import { fromBase64, toBase64 } from "../shared/bytes";
import type { BucketIndex } from "./bucket-index";
import type { KeyStore } from "./key-store";
import type { MetricsStore } from "./metrics-store";
import type { BucketRegistry } from "./registry";

/** An object's own public methods: not what the runtime calls (fetch, alarm, …), not its helpers. */
type OwnMethods<T> = Exclude<{ [K in keyof T]-?: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T], keyof DurableObject>;
type Complete<T, Listed extends readonly unknown[]> = [Exclude<OwnMethods<T>, Listed[number]>] extends [never] ? true : false;

/**
 * What MetaGate calls, per namespace: every public method of each class (the compiler checks both
 * ways below), nothing else — no private helper, nothing inherited.
 */
const METHODS = {
  BUCKET_INDEX: [
    "abortUpload",
    "beginShardWrite",
    "claimOnce",
    "completeUpload",
    "createUpload",
    "delete",
    "deleteMany",
    "drop",
    "endShardWrite",
    "garbage",
    "garbageDone",
    "head",
    "healQueue",
    "healStarted",
    "healed",
    "info",
    "init",
    "isEmpty",
    "list",
    "listParts",
    "listUploads",
    "listVersions",
    "notificationConfiguration",
    "notificationStatus",
    "objectLock",
    "openSession",
    "put",
    "putPart",
    "queueHeal",
    "quota",
    "replace",
    "replicationConfiguration",
    "retryDeadLetters",
    "runLifecycle",
    "sealSession",
    "sessionWritable",
    "setNotificationConfiguration",
    "setObjectLock",
    "setQuota",
    "setReplicationConfiguration",
    "setSetting",
    "setVersionLock",
    "setVersioning",
    "setting",
    "storageRefs",
    "upload",
    "versioning",
  ],
  BUCKET_REGISTRY: [
    "add",
    "get",
    "list",
    "nodeAdd",
    "nodeDrainBatch",
    "nodeOverlay",
    "nodeRemove",
    "nodeSetState",
    "remove",
    "scrubBegin",
    "scrubSave",
    "scrubStatus",
  ],
  METRICS_STORE: ["add", "snapshot"],
  KEY_STORE: ["bucketGrants", "create", "dropBucket", "grant", "list", "lookup", "remove", "update"],
} as const satisfies {
  BUCKET_INDEX: readonly OwnMethods<BucketIndex>[];
  BUCKET_REGISTRY: readonly OwnMethods<BucketRegistry>[];
  METRICS_STORE: readonly OwnMethods<MetricsStore>[];
  KEY_STORE: readonly OwnMethods<KeyStore>[];
};
// Every public method is listed: a new one fails to compile here until it is.
const _complete: [
  Complete<BucketIndex, typeof METHODS.BUCKET_INDEX>,
  Complete<BucketRegistry, typeof METHODS.BUCKET_REGISTRY>,
  Complete<MetricsStore, typeof METHODS.METRICS_STORE>,
  Complete<KeyStore, typeof METHODS.KEY_STORE>,
] = [true, true, true, true];

/** The Durable Object namespaces the home process serves. */
export type RemoteNamespace = keyof typeof METHODS;
const ALLOWED = new Map(Object.entries(METHODS).map(([ns, methods]) => [ns, new Set<string>(methods)]));

type Callable = Record<string, (...args: unknown[]) => Promise<unknown>>;
interface Call {
  namespace: RemoteNamespace;
  name: string;
  method: string;
  args: unknown[];
}

/** A call MetaGate refuses to make (400), apart from what the object itself throws (500). */
class Refused extends Error {}

/**
 * The home process's entrypoint for the other processes (bound to its Unix socket only): one call
 * per HTTP request, a JSON body in and out (`encode`). Plain HTTP over a kept-alive connection,
 * not JS RPC, which cost more CPU per call (docs/benchmarks.md, "More than one process").
 */
export class MetaGate extends WorkerEntrypoint<Env> {
  override async fetch(request: Request): Promise<Response> {
    try {
      const call = decodeCall(await request.text());
      const ns = this.env[call.namespace] as unknown as DurableObjectNamespace;
      const stub = ns.get(ns.idFromName(call.name)) as unknown as Callable;
      return new Response(encode(await stub[call.method](...call.args)));
    } catch (e) {
      const { name = "Error", message = String(e) } = e instanceof Error ? e : {};
      return new Response(JSON.stringify({ name, message }), { status: e instanceof Refused ? 400 : 500 });
    }
  }
}

function decodeCall(text: string): Call {
  let call: Partial<Call> | null;
  try {
    call = decode(text) as Partial<Call> | null;
  } catch {
    throw new Refused("MetaGate: malformed call");
  }
  if (call === null || typeof call !== "object") throw new Refused("MetaGate: malformed call");
  const { namespace, name, method, args } = call;
  const methods = typeof namespace === "string" ? ALLOWED.get(namespace) : undefined;
  if (!methods) throw new Refused(`MetaGate: no namespace ${String(namespace)}`);
  if (typeof method !== "string" || !methods.has(method)) throw new Refused(`MetaGate: no method ${String(method)}`);
  if (typeof name !== "string" || !Array.isArray(args)) throw new Refused("MetaGate: malformed call");
  return { namespace: namespace as RemoteNamespace, name, method, args };
}

/**
 * A stand-in for the stub of object `name` in `namespace`, calling it through the home process.
 * Every property but `then` (so that it is not thenable) reads as a method forwarding its call.
 */
export function remoteStub<T>(gate: Fetcher, namespace: RemoteNamespace, name: string): T {
  const call = async (method: string, args: unknown[]) => {
    const response = await gate.fetch("http://meta/", { method: "POST", body: encode({ namespace, name, method, args } satisfies Call) });
    const text = await response.text();
    if (response.ok) return decode(text);
    let failure: { name?: unknown; message?: unknown } = {};
    try {
      failure = JSON.parse(text);
    } catch {
      // not MetaGate's answer (the runtime's own error page): said below as it came
    }
    const message = typeof failure.message === "string" ? failure.message : `metadata call ${namespace}.${method}: ${response.status} ${text.slice(0, 200)}`;
    throw Object.assign(new Error(message), { name: typeof failure.name === "string" ? failure.name : "Error" });
  };
  return new Proxy(Object.create(null) as object, {
    get: (_, method) => (typeof method === "string" && method !== "then" ? (...args: unknown[]) => call(method, args) : undefined),
  }) as T;
}

// What crosses between processes: JSON, and what Durable Object calls carry besides (bytes,
// undefined). A string starting with NUL is a tag: NUL NUL escapes a string that started with NUL,
// NUL "u" is undefined, NUL "b" is bytes (base64) — so no stored value can pass for another type.
const TAG = "\u0000";

export function encode(value: unknown): string {
  return JSON.stringify(value, function (this: unknown, key: string, v: unknown) {
    // The replacer sees a value after its toJSON; bytes have none, so they arrive as themselves.
    const raw = (this as Record<string, unknown>)[key];
    if (raw instanceof Uint8Array) return `${TAG}b${toBase64(raw)}`;
    // Anything else that is not plain JSON (a Map, a Date, a stream) would arrive as something
    // else: refused, so that a call carrying one fails where it is made.
    if (raw !== null && typeof raw === "object" && !Array.isArray(raw) && !isPlain(raw))
      throw new TypeError(`MetaGate: cannot send ${raw.constructor?.name ?? "this object"}`);
    if (typeof raw === "bigint" || typeof raw === "function" || typeof raw === "symbol") throw new TypeError(`MetaGate: cannot send a ${typeof raw}`);
    if (typeof raw === "number" && !Number.isFinite(raw)) throw new TypeError(`MetaGate: cannot send ${raw}`);
    if (v === undefined) return `${TAG}u`;
    if (typeof v === "string" && v.startsWith(TAG)) return TAG + v;
    return v;
  }) as string;
}

export function decode(text: string): unknown {
  let holes = false;
  const value = JSON.parse(text, (_key, v: unknown) => {
    if (typeof v !== "string" || !v.startsWith(TAG)) return v;
    const tag = v[1];
    if (tag === TAG) return v.slice(1);
    if (tag === "u") {
      holes = true;
      return undefined;
    }
    if (tag === "b") return fromBase64(v.slice(2));
    throw new Error("MetaGate: malformed value");
  });
  return holes ? dense(value) : value;
}

/** Fills the holes JSON.parse leaves where an array item was undefined (a reviver that returns
 *  undefined deletes the item), so that arrays arrive as they were sent. */
function dense(value: unknown): unknown {
  if (Array.isArray(value)) return Array.from(value, dense);
  if (value !== null && typeof value === "object" && !(value instanceof Uint8Array))
    for (const [k, v] of Object.entries(value)) (value as Record<string, unknown>)[k] = dense(v);
  return value;
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
