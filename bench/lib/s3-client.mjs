// A minimal S3 client for the benchmark: node:http with a keep-alive agent and SigV4 signing with
// node:crypto (UNSIGNED-PAYLOAD, so bodies are never hashed by the client). Cheap enough that the
// client is not what a run measures: the pass-through row shows its ceiling.
import { createHash, createHmac } from "node:crypto";
import http from "node:http";

const hmac = (key, s) => createHmac("sha256", key).update(s).digest();

export class S3Client {
  /** @param {{ endpoint: string, accessKeyId: string, secretAccessKey: string, region?: string }} opts */
  constructor({ endpoint, accessKeyId, secretAccessKey, region = "us-east-1" }) {
    this.url = new URL(endpoint);
    this.accessKeyId = accessKeyId;
    this.secretAccessKey = secretAccessKey;
    this.region = region;
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    this.keys = new Map(); // signing key per day
  }

  /**
   * One request. Resolves when the response has ended, with its status, body length, time to
   * the first body byte and to the end (ms, from sending), and the body if `keep` is set.
   * @param {string} method @param {string} path (with a query, already encoded)
   * @param {{ body?: Buffer, headers?: Record<string, string>, keep?: boolean }} [opts]
   */
  request(method, path, opts = {}) {
    // A kept-alive socket the server closed while idle fails the next request written on it
    // (EPIPE, ECONNRESET; Node's req.reusedSocket): the idle sockets are dropped and the request
    // is sent once more, on a new one. The body is a Buffer, so it can be sent again.
    return this.once(method, path, opts).catch((e) => {
      if (!e.reusedSocket || (e.code !== "EPIPE" && e.code !== "ECONNRESET")) throw e;
      this.agent.destroy();
      this.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
      return this.once(method, path, opts);
    });
  }

  once(method, path, { body, headers = {}, keep = false } = {}) {
    const started = performance.now();
    const [pathname, query = ""] = path.split("?");
    const signed = { ...this.sign(method, pathname, canonicalQuery(query)), ...headers, "content-length": String(body?.length ?? 0) };
    return new Promise((resolve, reject) => {
      const req = http.request({ host: this.url.hostname, port: this.url.port, method, path, headers: signed, agent: this.agent }, (res) => {
        let bytes = 0;
        let ttfb = null;
        const chunks = [];
        res.on("data", (d) => {
          ttfb ??= performance.now() - started;
          bytes += d.length;
          if (keep) chunks.push(d);
        });
        res.on("end", () =>
          resolve({
            status: res.statusCode,
            headers: res.headers,
            bytes,
            ttfb: ttfb ?? performance.now() - started,
            ms: performance.now() - started,
            body: keep ? Buffer.concat(chunks) : null,
          }),
        );
        res.on("error", reject);
      });
      req.on("error", (e) => reject(Object.assign(e, { reusedSocket: req.reusedSocket })));
      // A server that never answers (wrangler dev reloading mid-request does that) fails the
      // request instead of stalling the run.
      req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${path}: no response for 60 s`)));
      req.end(body);
    });
  }

  sign(method, pathname, query) {
    const amzDate = new Date().toISOString().replace(/[-:]|\.\d{3}/g, "");
    const day = amzDate.slice(0, 8);
    const headers = { host: this.url.host, "x-amz-content-sha256": "UNSIGNED-PAYLOAD", "x-amz-date": amzDate };
    const names = Object.keys(headers).sort();
    const canonical = [method, pathname, query, names.map((n) => `${n}:${headers[n]}\n`).join(""), names.join(";"), "UNSIGNED-PAYLOAD"].join("\n");
    const scope = `${day}/${this.region}/s3/aws4_request`;
    const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, createHash("sha256").update(canonical).digest("hex")].join("\n");
    let key = this.keys.get(day);
    if (!key) {
      key = hmac(hmac(hmac(hmac(`AWS4${this.secretAccessKey}`, day), this.region), "s3"), "aws4_request");
      this.keys.set(day, key);
    }
    const signature = hmac(key, toSign).toString("hex");
    return { ...headers, authorization: `AWS4-HMAC-SHA256 Credential=${this.accessKeyId}/${scope}, SignedHeaders=${names.join(";")}, Signature=${signature}` };
  }

  close() {
    this.agent.destroy();
  }
}

/** SigV4's canonical query: parameters sorted, `k=v` (values already URI-encoded by the caller). */
function canonicalQuery(query) {
  if (!query) return "";
  return query
    .split("&")
    .map((p) => (p.includes("=") ? p : `${p}=`))
    .sort()
    .join("&");
}
