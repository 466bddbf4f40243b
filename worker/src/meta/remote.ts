// Metadata held by another process. `npm start -- --processes N` runs N workerd processes on one
// listening socket (scripts/serve.mjs); the first, the home process, hosts every Durable Object and
// serves them to the others through MetaGate, a Worker entrypoint reached over HTTP on a Unix
// socket in the data directory (only its owner can open it: scripts/lib/workerd-config.mjs).
// In the other processes env.SHARDGATE_META is bound to it, and meta/stubs.ts hands out stand-ins
// that forward each method call there: one HTTP request to the home process, which calls the object.
import { WorkerEntrypoint } from "cloudflare:workers";
import type { Env } from "../config";

/** The Durable Object namespaces the home process serves. */
export const REMOTE_NAMESPACES = ["BUCKET_INDEX", "BUCKET_REGISTRY", "METRICS_STORE", "KEY_STORE"] as const;
export type RemoteNamespace = (typeof REMOTE_NAMESPACES)[number];

/** An object's own RPC methods: a lower-case name, never what the runtime itself calls. */
const METHOD = /^[a-z][A-Za-z0-9]{0,63}$/;
const RUNTIME_METHODS = new Set(["fetch", "alarm", "constructor", "webSocketMessage", "webSocketClose", "webSocketError"]);

type Callable = Record<string, (...args: unknown[]) => Promise<unknown>>;
interface Call {
  namespace: RemoteNamespace;
  name: string;
  method: string;
  args: unknown[];
}

/**
 * The home process's entrypoint for the other processes (bound to its Unix socket only): one call
 * per HTTP request, a JSON body in and out (`encode`). Plain HTTP over a kept-alive connection,
 * not JS RPC: a JS RPC call between processes cost ~0.8 ms of CPU, this a fraction of it
 * (docs/benchmarks.md, "More processes").
 */
export class MetaGate extends WorkerEntrypoint<Env> {
  override async fetch(request: Request): Promise<Response> {
    try {
      const { namespace, name, method, args } = decode(await request.text()) as Call;
      if (!REMOTE_NAMESPACES.includes(namespace)) throw new Error(`MetaGate: no namespace ${String(namespace)}`);
      if (typeof method !== "string" || !METHOD.test(method) || RUNTIME_METHODS.has(method)) throw new Error(`MetaGate: no method ${String(method)}`);
      if (typeof name !== "string" || !Array.isArray(args)) throw new Error("MetaGate: malformed call");
      const ns = this.env[namespace] as unknown as DurableObjectNamespace;
      const stub = ns.get(ns.idFromName(name)) as unknown as Callable;
      return new Response(encode(await stub[method](...args)));
    } catch (e) {
      const { name = "Error", message = String(e) } = e instanceof Error ? e : {};
      return new Response(JSON.stringify({ name, message }), { status: 500 });
    }
  }
}

/**
 * A stand-in for the stub of object `name` in `namespace`, calling it through the home process.
 * Only method calls are forwarded: it is not thenable, and has no other properties.
 */
export function remoteStub<T>(gate: Fetcher, namespace: RemoteNamespace, name: string): T {
  const call = async (method: string, args: unknown[]) => {
    const response = await gate.fetch("http://meta/", { method: "POST", body: encode({ namespace, name, method, args } satisfies Call) });
    const text = await response.text();
    if (response.ok) return decode(text);
    const failure = JSON.parse(text) as { name: string; message: string };
    throw Object.assign(new Error(failure.message), { name: failure.name });
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
    if (raw instanceof Uint8Array) return `${TAG}b${bytesToBase64(raw)}`;
    // Anything else that is not plain JSON (a Map, a Date, a stream) would arrive as something
    // else: refused, so that a call carrying one fails where it is made.
    if (raw !== null && typeof raw === "object" && !Array.isArray(raw) && !isPlain(raw))
      throw new TypeError(`MetaGate: cannot send ${raw.constructor?.name ?? "this object"}`);
    if (typeof raw === "bigint" || typeof raw === "function" || typeof raw === "symbol") throw new TypeError(`MetaGate: cannot send a ${typeof raw}`);
    if (v === undefined) return `${TAG}u`;
    if (typeof v === "string" && v.startsWith(TAG)) return TAG + v;
    return v;
  }) as string;
}

export function decode(text: string): unknown {
  return JSON.parse(text, (_key, v: unknown) => {
    if (typeof v !== "string" || !v.startsWith(TAG)) return v;
    const tag = v[1];
    if (tag === TAG) return v.slice(1);
    if (tag === "u") return undefined;
    if (tag === "b") return base64ToBytes(v.slice(2));
    throw new Error("MetaGate: malformed value");
  });
}

function isPlain(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
  return btoa(binary);
}

function base64ToBytes(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
