// The baseline for `npm run bench` (bench/gateway-bench.mjs): the least a Worker can do to store
// and serve objects in R2. `PUT /<key>` streams the body into one R2 bucket, `GET /<key>` streams
// the object back (206 for `Range: bytes=a-b`). No authentication, no erasure coding, no metadata
// store: what is left of the gateway's time is workerd, R2 (miniflare locally) and the network.

interface Env {
  BUCKET: R2Bucket;
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const key = decodeURIComponent(new URL(request.url).pathname.slice(1));
    // Lets scripts/serve.mjs and the bench wait for it as they wait for the gateway.
    if (key === "_shardgate/health") return new Response("ok");
    if (request.method === "PUT") return put(env.BUCKET, key, request);
    if (request.method === "GET") return get(env.BUCKET, key, request);
    return new Response(null, { status: 405 });
  },
};

async function put(bucket: R2Bucket, key: string, request: Request): Promise<Response> {
  const length = request.headers.get("content-length");
  if (!request.body || length === null) return new Response("content-length required\n", { status: 411 });
  // R2 needs a stream's length up front; FixedLengthStream carries it (as the gateway's nodes do).
  const fixed = new FixedLengthStream(Number(length));
  await Promise.all([bucket.put(key, fixed.readable), request.body.pipeTo(fixed.writable)]);
  return new Response(null);
}

async function get(bucket: R2Bucket, key: string, request: Request): Promise<Response> {
  // R2 parses the Range header itself.
  const object = await bucket.get(key, { range: request.headers });
  if (!object) return new Response("not found\n", { status: 404 });
  // S3's default type, as the gateway sends. Without a Content-Type, Cloudflare's edge, and
  // miniflare imitating it, would gzip the body for any client that accepts gzip (fetch does).
  const headers = new Headers({ "content-type": "binary/octet-stream", etag: object.httpEtag, "accept-ranges": "bytes" });
  const range = object.range as { offset: number; length: number } | undefined;
  if (!request.headers.has("range") || !range) return new Response(object.body, { headers });
  headers.set("content-range", `bytes ${range.offset}-${range.offset + range.length - 1}/${object.size}`);
  return new Response(object.body, { status: 206, headers });
}
