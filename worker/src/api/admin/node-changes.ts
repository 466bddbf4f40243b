// Changing the node set while the gateway runs (services/node-overlay.ts; docs/operations.md):
//   POST   /_shardgate/admin/nodes              {"id", "kind": "s3", "endpoint", "bucket", "region"?,
//                                                "accessKeyId", "secretAccessKey", "clientUrls"?}
//                                                → the node (probed first; its secret is never shown)
//   PATCH  /_shardgate/admin/nodes/ID           {"state": "draining" | "active"}
//   DELETE /_shardgate/admin/nodes/ID           an added node that is draining and was drained clean
import { freshGatewayConfig, installOverlay } from "../../config";
import { S3Error, invalidArgument } from "../../s3-error";
import { addS3Node, checkNodeId, overlaySource, removeNode, type S3NodeInput, setNodeState } from "../../services/node-overlay";
import type { RequestContext } from "../http/context";
import { json, jsonObjectBody } from "../http/json";

const S3_FIELDS = new Set(["id", "kind", "endpoint", "bucket", "region", "accessKeyId", "secretAccessKey", "clientUrls"]);
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z0-9][a-z0-9-]{0,31}$/;
const KEY_ID = /^[\x21-\x7e]{1,128}$/;

function text(body: Record<string, unknown>, name: string, pattern: RegExp, what: string): string {
  const v = body[name];
  if (typeof v !== "string" || !pattern.test(v)) throw invalidArgument(`${name} must be ${what}.`);
  return v;
}

/** An http(s) URL with no credentials, query or fragment in it. */
function endpointOf(v: unknown): string {
  let url: URL;
  try {
    if (typeof v !== "string" || v.length > 2048) throw new Error();
    url = new URL(v);
  } catch {
    throw invalidArgument("endpoint must be an http:// or https:// URL.");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalidArgument("endpoint must be an http:// or https:// URL.");
  // Never echoed: what is in a URL's user part may be a secret.
  if (url.username || url.password) throw invalidArgument("endpoint must not hold credentials: give them as accessKeyId and secretAccessKey.");
  if (url.search || url.hash || (v as string).includes("#")) throw invalidArgument("endpoint must have no query or fragment.");
  return url.href.replace(/\/+$/, "");
}

/** The body of an added S3 node, every field checked; unknown fields refused (a typo is not ignored). */
function s3NodeInput(body: Record<string, unknown>): S3NodeInput {
  const unknown = Object.keys(body).filter((k) => !S3_FIELDS.has(k));
  if (unknown.length) throw invalidArgument(`Unknown field ${unknown[0].slice(0, 40)}: a node has ${[...S3_FIELDS].join(", ")}.`);
  const id = checkNodeId(body.id);
  if (body.kind === "disk") {
    throw new S3Error(
      "InvalidRequest",
      "A disk node needs its own workerd binding: add it to shardgate.json (nodes) and restart. Only S3 nodes are added at runtime.",
    );
  }
  if (body.kind !== undefined && body.kind !== "s3") throw invalidArgument("kind must be s3 (disk nodes take a restart).");
  if (body.clientUrls !== undefined && typeof body.clientUrls !== "boolean") throw invalidArgument("clientUrls must be true or false.");
  const secret = body.secretAccessKey;
  if (typeof secret !== "string" || secret.length === 0 || secret.length > 256)
    throw invalidArgument("secretAccessKey must be a string of 1 to 256 characters.");
  return {
    id,
    endpoint: endpointOf(body.endpoint),
    bucket: text(body, "bucket", BUCKET, "an S3 bucket name (3 to 63 lower-case letters, digits, . and -)"),
    region: body.region === undefined ? "us-east-1" : text(body, "region", REGION, "a region name such as us-east-1"),
    accessKeyId: text(body, "accessKeyId", KEY_ID, "1 to 128 printable characters without spaces"),
    secretAccessKey: secret,
    clientUrls: body.clientUrls === true,
  };
}

export async function adminAddNode(ctx: RequestContext): Promise<Response> {
  const input = s3NodeInput(await jsonObjectBody(ctx));
  // The gateway as its own node would store each object's shard files in itself.
  if (new URL(input.endpoint).host === new URL(ctx.request.url).host) throw invalidArgument("endpoint is this gateway: a node must be another S3 service.");
  const source = overlaySource(ctx.env);
  await installOverlay(ctx.env, source, await addS3Node(ctx.env, await freshGatewayConfig(ctx.env, source), input));
  const { id, endpoint, bucket, region, clientUrls } = input;
  return json({ id, kind: "s3", endpoint, bucket, region, clientUrls, state: "active", source: "added" }, 201);
}

export async function adminSetNodeState(ctx: RequestContext, id: string): Promise<Response> {
  const body = await jsonObjectBody(ctx);
  const state = body.state;
  if (state !== "draining" && state !== "active") throw invalidArgument('state must be "draining" or "active".');
  if (Object.keys(body).length !== 1) throw invalidArgument("The body has one field: state.");
  const source = overlaySource(ctx.env);
  const config = await installOverlay(ctx.env, source, await setNodeState(ctx.env, await freshGatewayConfig(ctx.env, source), id, state));
  const draining = !config.writableNodes.some((n) => n.id === id);
  return json({ id, state: draining ? "draining" : "active", writableNodes: config.writableNodes.length });
}

export async function adminRemoveNode(ctx: RequestContext, id: string): Promise<Response> {
  const source = overlaySource(ctx.env);
  const config = await installOverlay(ctx.env, source, await removeNode(ctx.env, ctx.core, await freshGatewayConfig(ctx.env, source), id));
  return json({ id, removed: true, nodes: config.nodes.length });
}
