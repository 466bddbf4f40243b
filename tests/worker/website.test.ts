// Static website hosting (issue #33, api/website-endpoint.ts, api/format/website-config.ts): Put/Get/DeleteBucketWebsite
// as S3 checks them, and the website endpoint: host form `<bucket>.website.localhost`, path form
// `/_shardgate/website/<bucket>/` (sandboxed), anonymous GET/HEAD of what the bucket policy lets
// everyone read, index and error documents, folder redirects, routing rules, RedirectAllRequestsTo,
// x-amz-website-redirect-location, ranges and conditional GETs, HTML errors; and hostile input.
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { websiteOf } from "../../worker/src/api/website-endpoint";
import type { Env } from "../../worker/src/config";
import { s3, s3ok } from "./signed";

const SITE = "site-one";
const PRIVATE = "site-private";
const REDIRECTED = "site-redirect";
const host = (bucket: string) => `http://${bucket}.website.localhost`;

const code = (xml: string) => xml.match(/<Code>([^<]+)<\/Code>/)?.[1];
const message = (xml: string) => xml.match(/<Message>([^<]+)<\/Message>/)?.[1];

const web = (body: string) => `<WebsiteConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${body}</WebsiteConfiguration>`;
const INDEX = "<IndexDocument><Suffix>index.html</Suffix></IndexDocument>";
const ERROR = "<ErrorDocument><Key>404.html</Key></ErrorDocument>";
const rule = (condition: string, redirect: string) =>
  `<RoutingRule>${condition ? `<Condition>${condition}</Condition>` : ""}<Redirect>${redirect}</Redirect></RoutingRule>`;

const putWebsite = (bucket: string, body: string) => s3(`/${bucket}?website`, { method: "PUT", body });

/** GET (or `method`) on the website endpoint, anonymous, without following redirects. */
function visit(url: string, init: RequestInit = {}): Promise<Response> {
  return exports.default.fetch(new Request(url, { redirect: "manual", ...init }));
}

async function put(bucket: string, key: string, body: string, type = "text/html", headers: Record<string, string> = {}) {
  await s3ok(`/${bucket}/${key.split("/").map(encodeURIComponent).join("/")}`, { method: "PUT", body, headers: { "content-type": type, ...headers } });
}

function publicRead(bucket: string, resource = "*"): Promise<Response> {
  const policy = {
    Version: "2012-10-17",
    Statement: [{ Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${bucket}/${resource}` }],
  };
  return s3ok(`/${bucket}?policy`, { method: "PUT", body: JSON.stringify(policy) }, 204);
}

beforeAll(async () => {
  for (const b of [SITE, PRIVATE, REDIRECTED]) await s3ok(`/${b}`, { method: "PUT" });
  await put(SITE, "index.html", "<h1>home</h1>");
  await put(SITE, "404.html", "<h1>not here</h1>");
  await put(SITE, "docs/index.html", "<h1>docs</h1>");
  await put(SITE, "style.css", "body{color:red}", "text/css");
  await put(SITE, "big.txt", "0123456789abcdef", "text/plain");
  await put(SITE, "old.html", "", "text/html", { "x-amz-website-redirect-location": "/docs/" });
  await put(SITE, "away.html", "", "text/html", { "x-amz-website-redirect-location": "https://example.com/x" });
  await put(SITE, "secret/index.html", "<h1>secret</h1>");
  await publicRead(SITE);
  const deny = { Effect: "Deny", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${SITE}/secret/*` };
  const allow = { Effect: "Allow", Principal: "*", Action: "s3:GetObject", Resource: `arn:aws:s3:::${SITE}/*` };
  await s3ok(`/${SITE}?policy`, { method: "PUT", body: JSON.stringify({ Version: "2012-10-17", Statement: [allow, deny] }) }, 204);
  await put(PRIVATE, "index.html", "<h1>private</h1>");
});

describe("Put/Get/DeleteBucketWebsite", () => {
  it("stores index, error document and routing rules, answers them back, and deletes them", async () => {
    const rules = `<RoutingRules>${rule("<KeyPrefixEquals>old/</KeyPrefixEquals>", "<ReplaceKeyPrefixWith>docs/</ReplaceKeyPrefixWith>")}${rule(
      "<HttpErrorCodeReturnedEquals>404</HttpErrorCodeReturnedEquals><KeyPrefixEquals>gone/</KeyPrefixEquals>",
      "<HostName>example.com</HostName><Protocol>https</Protocol><HttpRedirectCode>307</HttpRedirectCode>",
    )}</RoutingRules>`;
    expect((await putWebsite(SITE, web(INDEX + ERROR + rules))).status).toBe(200);
    const got = await (await s3ok(`/${SITE}?website`)).text();
    expect(got).toContain("<IndexDocument><Suffix>index.html</Suffix></IndexDocument>");
    expect(got).toContain("<ErrorDocument><Key>404.html</Key></ErrorDocument>");
    expect(got).toContain(
      "<Condition><KeyPrefixEquals>old/</KeyPrefixEquals></Condition><Redirect><ReplaceKeyPrefixWith>docs/</ReplaceKeyPrefixWith></Redirect>",
    );
    expect(got).toContain("<HostName>example.com</HostName><HttpRedirectCode>307</HttpRedirectCode><Protocol>https</Protocol>");
    await s3ok(`/${PRIVATE}?website`, { method: "PUT", body: web(INDEX) });
    await s3ok(`/${PRIVATE}?website`, { method: "DELETE" }, 204);
    const none = await s3(`/${PRIVATE}?website`);
    expect(none.status).toBe(404);
    expect(code(await none.text())).toBe("NoSuchWebsiteConfiguration");
    await s3ok(`/${PRIVATE}?website`, { method: "PUT", body: web(INDEX) });
  });

  it("redirects every request when RedirectAllRequestsTo is set", async () => {
    await s3ok(`/${REDIRECTED}?website`, {
      method: "PUT",
      body: web("<RedirectAllRequestsTo><HostName>example.org</HostName><Protocol>https</Protocol></RedirectAllRequestsTo>"),
    });
    expect(await (await s3ok(`/${REDIRECTED}?website`)).text()).toContain(
      "<RedirectAllRequestsTo><HostName>example.org</HostName><Protocol>https</Protocol></RedirectAllRequestsTo>",
    );
    const res = await visit(`${host(REDIRECTED)}/a%20b/c.html`);
    expect(res.status).toBe(301);
    expect(res.headers.get("location")).toBe("https://example.org/a%20b/c.html");
  });

  const refused: [string, string, "MalformedXML" | "InvalidArgument", string?][] = [
    ["not XML", "<WebsiteConfiguration><IndexDocument>", "MalformedXML"],
    ["another root", "<CORSConfiguration/>", "MalformedXML"],
    ["a DTD", `<!DOCTYPE x [<!ENTITY a "b">]>${web(INDEX)}`, "MalformedXML"],
    ["nothing", web(""), "InvalidArgument", "A value for IndexDocument Suffix must be provided if RedirectAllRequestsTo is empty"],
    ["an empty suffix", web("<IndexDocument><Suffix></Suffix></IndexDocument>"), "InvalidArgument", "The IndexDocument Suffix is not well formed"],
    ["a suffix with /", web("<IndexDocument><Suffix>a/index.html</Suffix></IndexDocument>"), "InvalidArgument", "The IndexDocument Suffix is not well formed"],
    ["two suffixes", web("<IndexDocument><Suffix>a</Suffix><Suffix>b</Suffix></IndexDocument>"), "MalformedXML"],
    ["an empty error key", web(`${INDEX}<ErrorDocument><Key></Key></ErrorDocument>`), "InvalidArgument", "The ErrorDocument Key is not well formed"],
    ["a key with a control character", web(`${INDEX}<ErrorDocument><Key>a&#127;b</Key></ErrorDocument>`), "InvalidArgument"],
    [
      "redirect-all with an index",
      web(`${INDEX}<RedirectAllRequestsTo><HostName>x.org</HostName></RedirectAllRequestsTo>`),
      "InvalidArgument",
      "RedirectAllRequestsTo cannot be provided in conjunction with other Routing/Website configurations.",
    ],
    ["redirect-all without a host", web("<RedirectAllRequestsTo><Protocol>https</Protocol></RedirectAllRequestsTo>"), "MalformedXML"],
    ["a bad protocol", web("<RedirectAllRequestsTo><HostName>x.org</HostName><Protocol>ftp</Protocol></RedirectAllRequestsTo>"), "InvalidArgument"],
    ["a host with CR/LF", web("<RedirectAllRequestsTo><HostName>x.org&#13;&#10;Set-Cookie: a=b</HostName></RedirectAllRequestsTo>"), "InvalidArgument"],
    ["a host with a path", web("<RedirectAllRequestsTo><HostName>x.org/evil</HostName></RedirectAllRequestsTo>"), "InvalidArgument"],
    [
      "redirect code 300",
      web(
        `${INDEX}<RoutingRules>${rule("<KeyPrefixEquals>a/</KeyPrefixEquals>", "<HttpRedirectCode>300</HttpRedirectCode><HostName>x.org</HostName>")}</RoutingRules>`,
      ),
      "InvalidArgument",
      "The provided HTTP redirect code (300) is not valid. Valid codes are 3XX except 300.",
    ],
    [
      "redirect code 200",
      web(
        `${INDEX}<RoutingRules>${rule("<KeyPrefixEquals>a/</KeyPrefixEquals>", "<HttpRedirectCode>200</HttpRedirectCode><HostName>x.org</HostName>")}</RoutingRules>`,
      ),
      "InvalidArgument",
    ],
    [
      "redirect code 3000",
      web(
        `${INDEX}<RoutingRules>${rule("<KeyPrefixEquals>a/</KeyPrefixEquals>", "<HttpRedirectCode>3000</HttpRedirectCode><HostName>x.org</HostName>")}</RoutingRules>`,
      ),
      "InvalidArgument",
    ],
    [
      "error code 200",
      web(`${INDEX}<RoutingRules>${rule("<HttpErrorCodeReturnedEquals>200</HttpErrorCodeReturnedEquals>", "<HostName>x.org</HostName>")}</RoutingRules>`),
      "InvalidArgument",
      "The provided HTTP error code (200) is not valid. Valid codes are 4XX or 5XX.",
    ],
    [
      "an empty condition",
      web(`${INDEX}<RoutingRules>${rule("", "<HostName>x.org</HostName>").replace("<Redirect>", "<Condition></Condition><Redirect>")}</RoutingRules>`),
      "InvalidArgument",
    ],
    ["an empty redirect", web(`${INDEX}<RoutingRules>${rule("<KeyPrefixEquals>a/</KeyPrefixEquals>", "")}</RoutingRules>`), "InvalidArgument"],
    [
      "a rule without a redirect",
      web(`${INDEX}<RoutingRules><RoutingRule><Condition><KeyPrefixEquals>a</KeyPrefixEquals></Condition></RoutingRule></RoutingRules>`),
      "MalformedXML",
    ],
    ["no rule in RoutingRules", web(`${INDEX}<RoutingRules></RoutingRules>`), "MalformedXML"],
    [
      "ReplaceKeyPrefixWith and ReplaceKeyWith",
      web(
        `${INDEX}<RoutingRules>${rule("<KeyPrefixEquals>a/</KeyPrefixEquals>", "<ReplaceKeyPrefixWith>b/</ReplaceKeyPrefixWith><ReplaceKeyWith>c</ReplaceKeyWith>")}</RoutingRules>`,
      ),
      "InvalidArgument",
      "You can only define ReplaceKeyPrefix or ReplaceKey but not both.",
    ],
    [
      "a rule that loops (same prefix)",
      web(`${INDEX}<RoutingRules>${rule("<KeyPrefixEquals>a/</KeyPrefixEquals>", "<ReplaceKeyPrefixWith>a/b/</ReplaceKeyPrefixWith>")}</RoutingRules>`),
      "InvalidArgument",
    ],
    ["a rule that loops (any key, protocol only)", web(`${INDEX}<RoutingRules>${rule("", "<Protocol>https</Protocol>")}</RoutingRules>`), "InvalidArgument"],
    [
      "a rule that loops (ReplaceKeyWith under its prefix)",
      web(`${INDEX}<RoutingRules>${rule("<KeyPrefixEquals>a</KeyPrefixEquals>", "<ReplaceKeyWith>a.html</ReplaceKeyWith>")}</RoutingRules>`),
      "InvalidArgument",
    ],
  ];
  for (const [what, body, expected, text] of refused) {
    it(`refuses ${what} with ${expected}, storing nothing`, async () => {
      const res = await putWebsite(PRIVATE, body);
      const xml = await res.text();
      expect(res.status, xml).toBe(400);
      expect(code(xml)).toBe(expected);
      if (text) expect(message(xml)).toBe(text);
      expect(await (await s3ok(`/${PRIVATE}?website`)).text()).toContain("<IndexDocument><Suffix>index.html</Suffix></IndexDocument><");
    });
  }

  it("refuses more than 50 routing rules and documents past 128 KiB", async () => {
    const many = Array.from({ length: 51 }, (_, i) => rule(`<KeyPrefixEquals>p${i}/</KeyPrefixEquals>`, "<HostName>x.org</HostName>")).join("");
    const res = await putWebsite(PRIVATE, web(`${INDEX}<RoutingRules>${many}</RoutingRules>`));
    expect(res.status).toBe(400);
    expect(code(await res.text())).toBe("InvalidArgument");
    const fifty = Array.from({ length: 50 }, (_, i) => rule(`<KeyPrefixEquals>p${i}/</KeyPrefixEquals>`, "<HostName>x.org</HostName>")).join("");
    expect((await putWebsite(REDIRECTED, web(`${INDEX}<RoutingRules>${fifty}</RoutingRules>`))).status).toBe(200);
    const huge = await putWebsite(PRIVATE, web(`${INDEX}<!--${"x".repeat(200 * 1024)}-->`));
    expect(huge.status).toBe(400);
    expect(code(await huge.text())).toBe("MalformedXML");
    await s3ok(`/${REDIRECTED}?website`, {
      method: "PUT",
      body: web("<RedirectAllRequestsTo><HostName>example.org</HostName><Protocol>https</Protocol></RedirectAllRequestsTo>"),
    });
  });

  it("needs the owner right or the root key: an anonymous PUT is refused", async () => {
    const res = await exports.default.fetch(new Request(`http://gateway.test/${PRIVATE}?website`, { method: "PUT", body: web(INDEX) }));
    expect(res.status).toBe(403);
  });

  it("x-amz-website-redirect-location is stored, returned, and checked as S3 checks it", async () => {
    const head = await s3ok(`/${SITE}/old.html`, { method: "HEAD" });
    expect(head.headers.get("x-amz-website-redirect-location")).toBe("/docs/");
    const bad = await s3(`/${SITE}/bad.html`, { method: "PUT", body: "", headers: { "x-amz-website-redirect-location": "javascript:alert(1)" } });
    expect(bad.status).toBe(400);
    expect(code(await bad.text())).toBe("InvalidArgument");
    const long = await s3(`/${SITE}/bad.html`, { method: "PUT", body: "", headers: { "x-amz-website-redirect-location": `/${"a".repeat(2048)}` } });
    expect(long.status).toBe(400);
  });
});

describe("the website endpoint", () => {
  it("serves the index document for / and for a folder, as HTML without a sandbox, on the host form", async () => {
    const home = await visit(`${host(SITE)}/`);
    expect(home.status).toBe(200);
    expect(await home.text()).toBe("<h1>home</h1>");
    expect(home.headers.get("content-type")).toBe("text/html");
    expect(home.headers.get("content-security-policy")).toBeNull();
    expect(home.headers.get("x-content-type-options")).toBe("nosniff");
    expect(await (await visit(`${host(SITE)}/docs/`)).text()).toBe("<h1>docs</h1>");
    const css = await visit(`${host(SITE)}/style.css`);
    expect(css.headers.get("content-type")).toBe("text/css");
  });

  it("sends a folder without its slash to the slash (302)", async () => {
    const res = await visit(`${host(SITE)}/docs`);
    expect(res.status).toBe(302);
    expect(res.headers.get("location")).toBe("/docs/");
  });

  it("keeps a folder's 302 on its own host when the key starts with / (never a protocol-relative //host)", async () => {
    await put(SITE, "/lead/index.html", "<h1>lead</h1>");
    const res = await visit(`${host(SITE)}//lead`);
    expect(res.status).toBe(302);
    const location = res.headers.get("location") as string;
    expect(location.startsWith("//")).toBe(false);
    const target = new URL(location, `${host(SITE)}/`);
    expect(target.origin).toBe(new URL(host(SITE)).origin);
    expect(await (await visit(target.href)).text()).toBe("<h1>lead</h1>");
  });

  it("answers a missing key with the error document's content and 404, HEAD included", async () => {
    const res = await visit(`${host(SITE)}/nope.html`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe("<h1>not here</h1>");
    const head = await visit(`${host(SITE)}/nope.html`, { method: "HEAD" });
    expect(head.status).toBe(404);
  });

  it("answers 403 where the policy does not let everyone read: the error document, else an HTML page", async () => {
    const res = await visit(`${host(SITE)}/secret/`);
    expect(res.status).toBe(403);
    expect(await res.text()).toBe("<h1>not here</h1>");
    const closed = await visit(`${host(PRIVATE)}/`);
    expect(closed.status).toBe(403);
    expect(closed.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const body = await closed.text();
    expect(body).toContain("<li>Code: AccessDenied</li>");
    expect(body).not.toContain("<h1>private</h1>");
    // A private folder is not revealed by a 302 either.
    expect((await visit(`${host(SITE)}/secret`)).status).toBe(404);
  });

  it("answers GET and HEAD only: other methods 405 with Allow", async () => {
    for (const method of ["PUT", "POST", "DELETE", "OPTIONS", "PATCH"]) {
      const res = await visit(`${host(SITE)}/index.html`, { method, ...(method === "PUT" || method === "POST" ? { body: "x" } : {}) });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("GET, HEAD");
    }
    expect(await (await s3ok(`/${SITE}/index.html`)).text()).toBe("<h1>home</h1>");
  });

  it("follows x-amz-website-redirect-location with a 301", async () => {
    const inside = await visit(`${host(SITE)}/old.html`);
    expect(inside.status).toBe(301);
    expect(inside.headers.get("location")).toBe("/docs/");
    const away = await visit(`${host(SITE)}/away.html`);
    expect(away.headers.get("location")).toBe("https://example.com/x");
  });

  it("applies routing rules: a prefix before the lookup, an error code after it", async () => {
    const moved = await visit(`${host(SITE)}/old/page.html`);
    expect(moved.status).toBe(301);
    expect(moved.headers.get("location")).toBe(`${host(SITE)}/docs/page.html`);
    const gone = await visit(`${host(SITE)}/gone/a.html`);
    expect(gone.status).toBe(307);
    expect(gone.headers.get("location")).toBe("https://example.com/gone/a.html");
  });

  it("keeps keys with CR/LF, '..' and control characters out of headers and inside the bucket", async () => {
    const crlf = await visit(`${host(SITE)}/old/a%0d%0aSet-Cookie:%20x=y`);
    expect(crlf.status).toBe(301);
    expect(crlf.headers.get("set-cookie")).toBeNull();
    expect(crlf.headers.get("location")).toBe(`${host(SITE)}/docs/a%0D%0ASet-Cookie%3A%20x%3Dy`);
    const dots = await visit(`${host(SITE)}/../${PRIVATE}/index.html`);
    expect(dots.status).toBe(404);
    expect(await dots.text()).toBe("<h1>not here</h1>");
    const encoded = await visit(`${host(SITE)}/%2e%2e/${PRIVATE}/index.html`);
    expect(encoded.status).toBe(404);
    // On a site's host the path form names a key of that site, never another bucket.
    const other = await visit(`${host(SITE)}/_shardgate/website/${PRIVATE}/index.html`);
    expect(other.status).toBe(404);
    expect(await other.text()).toBe("<h1>not here</h1>");
  });

  it("serves ranges and conditional GETs as the S3 API does", async () => {
    const part = await visit(`${host(SITE)}/big.txt`, { headers: { range: "bytes=2-5" } });
    expect(part.status).toBe(206);
    expect(await part.text()).toBe("2345");
    expect(part.headers.get("content-range")).toBe("bytes 2-5/16");
    const etag = (await visit(`${host(SITE)}/big.txt`)).headers.get("etag") ?? "";
    expect((await visit(`${host(SITE)}/big.txt`, { headers: { "if-none-match": etag } })).status).toBe(304);
    expect((await visit(`${host(SITE)}/big.txt`, { headers: { "if-match": '"nope"' } })).status).toBe(412);
    const bad = await visit(`${host(SITE)}/big.txt`, { headers: { range: "bytes=100-200" } });
    expect(bad.status).toBe(416);
    expect(bad.headers.get("content-range")).toBe("bytes */16");
  });

  it("streams a large, sharded object whole and in ranges", async () => {
    const big = new Uint8Array(700 * 1024).map((_, i) => (i * 7) % 251);
    await s3ok(`/${SITE}/big.bin`, { method: "PUT", body: big, headers: { "content-type": "application/octet-stream" } });
    const whole = new Uint8Array(await (await visit(`${host(SITE)}/big.bin`)).arrayBuffer());
    expect(whole.length).toBe(big.length);
    expect(whole.every((b, i) => b === big[i])).toBe(true);
    const part = await visit(`${host(SITE)}/big.bin`, { headers: { range: "bytes=300000-599999" } });
    expect(part.status).toBe(206);
    const bytes = new Uint8Array(await part.arrayBuffer());
    expect(bytes.length).toBe(300000);
    expect(bytes.every((b, i) => b === big[300000 + i])).toBe(true);
  });

  it("ignores query parameters that would change the answer's type", async () => {
    const res = await visit(`${host(SITE)}/big.txt?response-content-type=text/html`);
    expect(res.headers.get("content-type")).toBe("text/plain");
  });

  it("serves the path form sandboxed, with redirects inside it", async () => {
    const res = await visit(`http://gateway.test/_shardgate/website/${SITE}/`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("<h1>home</h1>");
    expect(res.headers.get("content-security-policy")).toContain("sandbox");
    expect(res.headers.get("content-security-policy")).not.toContain("allow-same-origin");
    const bare = await visit(`http://gateway.test/_shardgate/website/${SITE}`);
    expect(bare.headers.get("location")).toBe(`/_shardgate/website/${SITE}/`);
    const folder = await visit(`http://gateway.test/_shardgate/website/${SITE}/docs`);
    expect(folder.headers.get("location")).toBe(`/_shardgate/website/${SITE}/docs/`);
    const notFound = await visit(`http://gateway.test/_shardgate/website/${SITE}/x`);
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get("content-security-policy")).toContain("sandbox");
  });

  it("reads an error document named with '..' from the site's own bucket only", async () => {
    await s3ok(`/${REDIRECTED}?website`, { method: "PUT", body: web(`${INDEX}<ErrorDocument><Key>../${SITE}/404.html</Key></ErrorDocument>`) });
    await publicRead(REDIRECTED);
    const res = await visit(`${host(REDIRECTED)}/missing`);
    expect(res.status).toBe(404);
    const body = await res.text();
    expect(body).not.toContain("not here");
    expect(body).toContain("<li>Code: NoSuchKey</li>");
  });

  it("answers Host headers naming no site, another bucket's name badly or the console as the S3 API or HTML 404s", async () => {
    const none = await visit("http://no-such-bucket-here.website.localhost/");
    expect(none.status).toBe(404);
    expect(await none.text()).toContain("NoSuchBucket");
    const invalid = await visit("http://_console.website.localhost/");
    expect(invalid.status).toBe(404);
    expect(await invalid.text()).toContain("NoSuchBucket");
    const nested = await visit(`http://x.${SITE}.website.localhost/`);
    expect(nested.status).toBe(404);
    const bare = await visit("http://website.localhost/");
    expect(bare.headers.get("content-type")).not.toBe("text/html; charset=utf-8");
    const noConfig = await visit(`${host("site-none")}/`);
    expect(noConfig.status).toBe(404);
    // A bucket without a website configuration: NoSuchWebsiteConfiguration.
    await s3ok("/site-none", { method: "PUT" });
    const unconfigured = await visit(`${host("site-none")}/`);
    expect(await unconfigured.text()).toContain("NoSuchWebsiteConfiguration");
  });
});

describe("which requests are website requests", () => {
  const of = (url: string, vars: Record<string, string> = {}) => websiteOf(new URL(url), vars as unknown as Env);

  it("takes a host per bucket under the virtual host suffix, mapped hosts, and the path form", () => {
    expect(of("http://demo.website.localhost:8787/a/b.html")).toEqual({ bucket: "demo", key: "a/b.html", base: "", sandboxed: false });
    expect(of("http://demo.website.s3.example.com/", { SHARDGATE_VIRTUAL_HOST_SUFFIX: "s3.example.com" })?.bucket).toBe("demo");
    expect(of("https://www.example.com/x%20y", { SHARDGATE_WEBSITE_HOSTS: '{"WWW.example.com": "site-one"}' })).toEqual({
      bucket: "site-one",
      key: "x y",
      base: "",
      sandboxed: false,
    });
    expect(of("http://127.0.0.1:8787/_shardgate/website/demo/docs/")).toEqual({
      bucket: "demo",
      key: "docs/",
      base: "/_shardgate/website/demo",
      sandboxed: true,
    });
    expect(of("http://127.0.0.1:8787/_shardgate/website/demo")?.key).toBeNull();
  });

  it("leaves S3 requests, the bare suffix and every console origin alone", () => {
    expect(of("http://127.0.0.1:8787/demo/index.html")).toBeNull();
    expect(of("http://demo.localhost:8787/index.html")).toBeNull();
    expect(of("http://website.localhost/")).toBeNull();
    expect(of("http://.website.localhost/")).toBeNull();
    const vars = { SHARDGATE_CONSOLE_ORIGIN: "https://console.website.localhost", SHARDGATE_WEBSITE_HOSTS: '{"admin.example.com": "x"}' };
    expect(of("https://console.website.localhost/", vars)).toBeNull();
    expect(of("https://console.website.localhost/_shardgate/website/demo/", vars)).toBeNull();
    expect(of("https://admin.example.com/", { ...vars, SHARDGATE_CONSOLE_ORIGIN: "https://admin.example.com" })).toBeNull();
  });
});
