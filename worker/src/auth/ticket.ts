// Tickets: short-lived, signed permissions the gateway hands out and later takes back without
// storing anything (docs/direct-path.md). A ticket is "base64url(JSON) . base64url(HMAC-SHA-256)"
// under a key derived from the root secret: whoever holds one may do what it says until it
// expires, and nobody can make or change one without the root secret. Like a presigned URL.
import { constantTimeEqual, hmac, importHmacKey } from "./crypto";

/** Every ticket names its kind and when it expires (ms since the epoch). */
export interface TicketBase {
  kind: string;
  expires: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Signing keys by root secret (values, not promises: a key is shared across requests). */
const keys = new Map<string, CryptoKey>();

async function ticketKey(rootSecret: string): Promise<CryptoKey> {
  let key = keys.get(rootSecret);
  if (!key) {
    // "grants": the tickets' old name, kept: another label would void every ticket handed out.
    key = await importHmacKey(`shardgate grants v1\n${rootSecret}`);
    keys.set(rootSecret, key);
  }
  return key;
}

function base64url(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  const s = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

export async function signTicket<T extends TicketBase>(rootSecret: string, ticket: T): Promise<string> {
  const body = base64url(encoder.encode(JSON.stringify(ticket)));
  const mac = new Uint8Array(await hmac(await ticketKey(rootSecret), body));
  return `${body}.${base64url(mac)}`;
}

/**
 * The ticket `token` carries, when it is signed under `rootSecret`, of kind `kind` and not expired
 * at `now`; otherwise null (whatever is wrong with it: the caller answers AccessDenied).
 */
export async function openTicket<T extends TicketBase>(rootSecret: string, token: string, kind: T["kind"], now: number): Promise<T | null> {
  const dot = token.indexOf(".");
  if (dot <= 0) return null;
  const body = token.slice(0, dot);
  const expected = base64url(new Uint8Array(await hmac(await ticketKey(rootSecret), body)));
  if (!constantTimeEqual(expected, token.slice(dot + 1))) return null;
  const bytes = fromBase64url(body);
  if (!bytes) return null;
  let ticket: T;
  try {
    ticket = JSON.parse(decoder.decode(bytes)) as T;
  } catch {
    return null;
  }
  if (ticket.kind !== kind || !(typeof ticket.expires === "number" && ticket.expires > now)) return null;
  return ticket;
}

/** A digest of `value` (JSON), for a ticket to pin what the client must send back unchanged. */
export async function digestOf(value: unknown): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(JSON.stringify(value)))));
}
