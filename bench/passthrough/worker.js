// The benchmark's baseline: a pass-through Worker on plain workerd over one writable disk service
// (FILES), with no authentication, no erasure coding, no metadata. PUT /bucket/key stores the body
// as a file, GET (with a single Range) and HEAD serve it, GET /bucket lists the directory. What
// shardgate costs beyond this is its own work; what this costs beyond MinIO is the runtime's.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const path = url.pathname.replace(/\/+$/, "");
    const file = new URL(path, "http://files");
    if (request.method === "PUT") {
      if (path.split("/").length === 2) return new Response(null, { status: 200 }); // create bucket
      const length = Number(request.headers.get("content-length"));
      const fixed = new FixedLengthStream(length);
      const [res] = await Promise.all([env.FILES.fetch(file, { method: "PUT", body: fixed.readable }), request.body.pipeTo(fixed.writable)]);
      await res.body?.cancel();
      return new Response(null, { status: res.ok ? 200 : 500 });
    }
    if (request.method === "GET" || request.method === "HEAD") {
      const headers = {};
      const range = request.headers.get("range");
      if (range) headers.range = range;
      const res = await env.FILES.fetch(file, { method: request.method, headers });
      return new Response(res.body, { status: res.status, headers: { "content-length": res.headers.get("content-length") ?? "0" } });
    }
    await request.body?.cancel();
    return new Response(null, { status: 405 });
  },
};
