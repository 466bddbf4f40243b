// Every command: its words, arguments, flags, help and what it does. Admin commands call
// /_shardgate/admin/* (worker/src/api/admin-app.ts); bucket commands are S3 requests.
import { readFileSync, statSync } from "node:fs";
import { clean, RequestError, UsageError } from "./errors.mjs";
import { parseJson, xmlElements, xmlText } from "./client.mjs";
import { objectCommands } from "./objects.mjs";
import { bytes, cell, fields, inline, report, table, time } from "./output.mjs";
import { readStdin } from "./secrets.mjs";

/** The largest policy file read (S3's limit is 20 KiB; the gateway says so itself). */
const MAX_POLICY_FILE_BYTES = 1024 * 1024;

const NAME_FLAGS = {
  bucket: { type: "string", metavar: "NAME", desc: "Start at this bucket (with --start-after), as a previous answer's next.bucket said." },
};

/** A value the gateway answered, checked to be an object (else the answer is not what the API gives). */
function expectObject(value, what) {
  if (value === null || typeof value !== "object" || Array.isArray(value))
    throw new RequestError(`unexpected answer from the gateway: ${what} is not a JSON object.`);
  return value;
}

function expectList(value, what) {
  if (!Array.isArray(value)) throw new RequestError(`unexpected answer from the gateway: ${what} is not a list.`);
  return value;
}

// --- status and nodes --------------------------------------------------------------------------------

/** Node up/down as the readiness probes saw them, from the metrics' shardgate_node_up (null when not available). */
async function probedNodes(client) {
  try {
    const res = await client.request("GET", ["_shardgate", "metrics"]);
    const up = new Map();
    for (const m of res.body.toString("utf8").matchAll(/^shardgate_node_up\{node="([^"]*)"\}\s+([0-9.]+)/gm)) up.set(m[1], m[2] === "1");
    return up;
  } catch {
    return null;
  }
}

/** The gateway's readiness (GET /_shardgate/ready, no credentials): { status, missing? }, or an error's text. */
async function readiness(client) {
  try {
    const res = await client.request("GET", ["_shardgate", "ready"], { anonymous: true, accept: [503] });
    return expectObject(parseJson(res), "the readiness answer");
  } catch (e) {
    return { status: "unknown", missing: [e.message] };
  }
}

function nodeRows(nodes, usage, probes) {
  return nodes.map((n) => {
    const node = expectObject(n, "a node");
    const up = probes?.has(node.id) ? probes.get(node.id) : node.state !== "open";
    // A node a finished pass found no shard file on holds none (an empty or drained node).
    const u = usage ? (usage[node.id] ?? { files: 0, bytes: 0 }) : null;
    return [
      node.id,
      node.kind,
      up ? "up" : "down",
      node.state,
      typeof node.latencyMs === "number" ? `${node.latencyMs} ms` : null,
      node.requests,
      node.errors,
      node.draining,
      u ? u.files : null,
      u ? bytes(u.bytes) : null,
      node.lastError ? clean(node.lastError, 60) : null,
    ];
  });
}

const NODE_HEADER = ["NODE", "KIND", "UP", "BREAKER", "LATENCY", "REQUESTS", "ERRORS", "DRAINING", "FILES", "BYTES", "LAST ERROR"];

async function status(ctx) {
  const client = ctx.client();
  const [nodesAnswer, heal, ready, probes] = await Promise.all([
    client.admin("GET", ["nodes"]),
    client.admin("GET", ["heal"]),
    readiness(client),
    probedNodes(client),
  ]);
  const nodesObject = expectObject(nodesAnswer, "the nodes answer");
  const nodes = expectList(nodesObject.nodes, "nodes");
  // k + m: the code new objects are written with (a read needs k nodes; the gateway is ready with k + 1).
  const code =
    Number.isSafeInteger(nodesObject.dataShards) && Number.isSafeInteger(nodesObject.parityShards)
      ? { k: nodesObject.dataShards, m: nodesObject.parityShards }
      : null;
  const healStatus = expectObject(heal, "the heal answer");
  const scrub = healStatus.scrub ?? {};
  const usage = scrub.lastPass?.usage ?? scrub.usage ?? null;
  const rows = nodeRows(nodes, usage, probes);
  const reachable = rows.filter((r) => r[2] === "up").length;
  const data = {
    endpoint: client.endpoint,
    ready,
    reachable,
    ...(code ? { dataShards: code.k, parityShards: code.m } : {}),
    nodes: nodes.map((n) => ({
      ...n,
      up: probes?.has(n.id) ? probes.get(n.id) : n.state !== "open",
      usage: usage ? (usage[n.id] ?? { files: 0, bytes: 0 }) : null,
    })),
    heal: healStatus,
  };
  ctx.print(data, () => {
    const queue = healStatus.queue ?? {};
    const lastRun = scrub.lastRun;
    const lastPass = scrub.lastPass;
    const draining = nodes.filter((n) => n.draining).length;
    return [
      fields([
        [
          "gateway",
          `${client.endpoint} — ${cell(ready.status)}${ready.missing?.length ? ` (missing: ${ready.missing.map((m) => clean(m, 100)).join("; ")})` : ""}`,
        ],
        [
          "quorum",
          `${reachable} of ${nodes.length} nodes reachable${draining ? `, ${draining} draining` : ""}; ` +
            (code ? `objects are ${code.k} + ${code.m}: reads need ${code.k}, the gateway is ready with ${code.k + 1}` : "k + m not reported by this gateway"),
        ],
        ["heal queue", `${cell(queue.pending ?? 0)} object(s) pending`],
        [
          "scrub",
          `pass ${cell(scrub.pass)}${scrub.running ? " (running now)" : ""}, mode ${cell(scrub.settings?.mode)}` +
            (scrub.cursor ? `, at ${cell(scrub.cursor.bucket)}/${cell(scrub.cursor.after ?? "")}` : ""),
        ],
        [
          "last run",
          lastRun
            ? `${time(lastRun.finished)} ${cell(lastRun.trigger)} ${cell(lastRun.mode)}: ${cell(lastRun.counters?.objectsChecked)} objects, ${cell(lastRun.counters?.badShards)} bad shards, ${cell(lastRun.counters?.shardsRebuilt)} rebuilt, stopped by ${cell(lastRun.stoppedBy)}`
            : "none yet",
        ],
        [
          "last pass",
          lastPass
            ? `#${cell(lastPass.pass)} finished ${time(lastPass.finished)}: ${cell(lastPass.counters?.objectsChecked)} objects, ${cell(lastPass.counters?.shardsMisplaced)} misplaced`
            : "none finished yet",
        ],
        ["errors", `${Array.isArray(scrub.lastErrors) ? scrub.lastErrors.length : 0} recent scrub error(s)`],
      ]),
      "",
      table(NODE_HEADER, rows),
      ...(Array.isArray(queue.objects) && queue.objects.length > 0
        ? [
            "",
            table(
              ["BUCKET", "KEY", "REASON", "SINCE", "ATTEMPTS"],
              queue.objects.slice(0, 20).map((o) => [o.bucket, o.key, o.reason, time(o.since), o.attempts]),
            ),
          ]
        : []),
    ].join("\n");
  });
}

async function nodeList(ctx) {
  const client = ctx.client();
  const answer = expectObject(await client.admin("GET", ["nodes"]), "the nodes answer");
  const nodes = expectList(answer.nodes, "nodes");
  ctx.print(answer, () =>
    table(
      NODE_HEADER.slice(0, 8).concat(["LAST ERROR"]),
      nodeRows(nodes, null, null).map((r) => [...r.slice(0, 8), r[10]]),
    ),
  );
}

/** Sums two tallies: numbers added, lists joined, the rest from the later one. */
function addTally(total, batch) {
  const out = { ...total };
  for (const [k, v] of Object.entries(batch)) {
    if (typeof v === "number" && typeof out[k] === "number") out[k] += v;
    else if (Array.isArray(v) && Array.isArray(out[k])) out[k] = [...out[k], ...v];
    else out[k] = v;
  }
  return out;
}

/** Repeats `step(next)` until its answer's `next` is null; refuses a `next` that does not move. */
async function walk(ctx, first, step, say) {
  let answer = expectObject(await step(first), "the answer");
  let total = answer;
  let batches = 1;
  const seen = new Set();
  while (ctx.flags.all && answer.next !== null && answer.next !== undefined) {
    const key = JSON.stringify(answer.next);
    if (seen.has(key)) throw new RequestError(`the gateway answered the same next position twice (${clean(key, 100)}): stopped.`);
    seen.add(key);
    if (!ctx.flags.json) process.stderr.write(`${say(answer)}\n`);
    answer = expectObject(await step(answer.next), "the answer");
    total = addTally(total, answer);
    batches++;
  }
  return ctx.flags.all ? { ...total, batches } : total;
}

/** A node's credential: the flag, else stdin (--secret-access-key-stdin), else the environment variable. */
async function nodeCredential(ctx, flag, envName, stdinFlag) {
  if (ctx.flags[flag] !== undefined) return ctx.flags[flag];
  if (stdinFlag && ctx.flags[stdinFlag]) return readStdin();
  const fromEnv = ctx.env[envName];
  if (fromEnv) return fromEnv;
  throw new UsageError(
    `shardgate node add: give the node's ${flag.replace(/-/g, " ")}: ${envName} in the environment${stdinFlag ? `, --${stdinFlag}` : ""} or --${flag}.`,
  );
}

async function nodeAdd(ctx) {
  const { "node-endpoint": endpoint, bucket, "node-region": region } = ctx.flags;
  if (endpoint === undefined || bucket === undefined)
    throw new UsageError(
      "shardgate node add: --node-endpoint URL and --bucket NAME are needed (usage: shardgate node add ID --node-endpoint URL --bucket NAME).",
    );
  const accessKeyId = await nodeCredential(ctx, "access-key-id", "SHARDGATE_NODE_ACCESS_KEY_ID");
  const secretAccessKey = await nodeCredential(ctx, "secret-access-key", "SHARDGATE_NODE_SECRET_ACCESS_KEY", "secret-access-key-stdin");
  const body = { id: ctx.args.ID, kind: "s3", endpoint, bucket, ...(region === undefined ? {} : { region }), accessKeyId, secretAccessKey };
  if (ctx.flags["client-urls"]) body.clientUrls = true;
  const node = expectObject(
    await ctx.client().admin("POST", ["nodes"], { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    "the new node",
  );
  ctx.print(node, () => report(node));
}

function nodeState(state) {
  return async (ctx) => {
    const answer = expectObject(
      await ctx.client().admin("PATCH", ["nodes", ctx.args.ID], { body: JSON.stringify({ state }), headers: { "content-type": "application/json" } }),
      "the node",
    );
    ctx.print(answer, () => report(answer));
  };
}

async function nodeRemove(ctx) {
  const answer = expectObject(await ctx.client().admin("DELETE", ["nodes", ctx.args.ID]), "the answer");
  ctx.print(answer, () => report(answer));
}

/** Marks the node draining unless it is already (or --no-mark), then walks until the walk is done. */
async function nodeDrain(ctx) {
  const client = ctx.client();
  if (!ctx.flags["no-mark"]) {
    const listed = expectList(expectObject(await client.admin("GET", ["nodes"]), "the nodes answer").nodes, "nodes");
    const node = listed.find((n) => n?.id === ctx.args.ID);
    if (node && !node.draining) {
      await client.admin("PATCH", ["nodes", ctx.args.ID], { body: JSON.stringify({ state: "draining" }), headers: { "content-type": "application/json" } });
      if (!ctx.flags.json)
        process.stderr.write(`drain ${ctx.args.ID}: marked draining; no new shard files go to it (the walk begins once every process has seen it)\n`);
    }
  }
  const { bucket, "start-after": startAfter, "max-objects": max } = ctx.flags;
  const result = await walk(
    { ...ctx, flags: { ...ctx.flags, all: ctx.flags.all || !ctx.flags.once } },
    { bucket, startAfter },
    (at) =>
      client.admin("POST", ["nodes", ctx.args.ID, "drain"], {
        query: { bucket: at.bucket ?? undefined, "start-after": at.startAfter ?? undefined, "max-objects": max },
      }),
    (a) => `drain ${ctx.args.ID}: ${a.objectsChecked} objects checked, ${a.shardsMoved} shard files moved; going on at ${inline(a.next)}`,
  );
  ctx.print(result, () => report(result));
}

// --- bucket quotas (admin API) ----------------------------------------------------------------------------

const SIZE_UNITS = { "": 1, B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12, KIB: 2 ** 10, MIB: 2 ** 20, GIB: 2 ** 30, TIB: 2 ** 40 };

/** A size: a whole number of bytes, or a number with a unit (10GiB, 1.5 TB, 500MB); null for "none". */
export function parseSize(text, flag) {
  if (text === "none") return null;
  const m = /^([0-9]{1,16}(?:\.[0-9]{1,6})?) ?([A-Za-z]{0,3})$/.exec(text);
  const unit = m ? SIZE_UNITS[m[2].toUpperCase()] : undefined;
  const n = m && unit !== undefined ? Math.floor(Number(m[1]) * unit) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`${flag}: expected a size such as 500MB, 10GiB or 1048576 (bytes), or none; got ${clean(text, 40)}.`);
  return n;
}

/** A count: a whole number, or none (null). */
function parseCount(text, flag) {
  if (text === "none") return null;
  if (!/^[0-9]{1,15}$/.test(text)) throw new UsageError(`${flag}: expected a whole number or none; got ${clean(text, 40)}.`);
  return Number(text);
}

function quotaText(answer) {
  const { quota, usage } = answer;
  const of = (used, max, show) => (max === null || max === undefined ? `${show(used)} (no limit)` : `${show(used)} of ${show(max)}`);
  const pending = usage.pending > 0 ? ` (${bytes(usage.pending)} of it in uploads in progress)` : "";
  return fields([
    ["bytes", `${of(usage.bytes + (usage.pending ?? 0), quota?.maxBytes, bytes)}${pending}`],
    ["objects", of(usage.objects, quota?.maxObjects, String)],
  ]);
}

async function quotaGet(ctx) {
  const answer = expectObject(await ctx.client().admin("GET", ["buckets", ctx.args.NAME, "quota"]), "the quota");
  ctx.print(answer, () => quotaText(answer));
}

async function quotaSet(ctx) {
  const { "max-bytes": maxBytes, "max-objects": maxObjects } = ctx.flags;
  if (maxBytes === undefined && maxObjects === undefined)
    throw new UsageError("give --max-bytes SIZE and/or --max-objects N (`shardgate bucket quota clear NAME` removes the quota).");
  const current = expectObject(await ctx.client().admin("GET", ["buckets", ctx.args.NAME, "quota"]), "the quota");
  // A limit not given keeps its value.
  const body = {
    maxBytes: maxBytes === undefined ? (current.quota?.maxBytes ?? null) : parseSize(maxBytes, "--max-bytes"),
    maxObjects: maxObjects === undefined ? (current.quota?.maxObjects ?? null) : parseCount(maxObjects, "--max-objects"),
  };
  const answer = expectObject(
    await ctx.client().admin("PUT", ["buckets", ctx.args.NAME, "quota"], { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    "the quota",
  );
  ctx.print(answer, () => `${clean(ctx.args.NAME, 63)}: quota set.\n${quotaText(answer)}`);
}

async function quotaClear(ctx) {
  await ctx.client().admin("DELETE", ["buckets", ctx.args.NAME, "quota"]);
  ctx.print({ bucket: ctx.args.NAME, quota: null }, () => `${clean(ctx.args.NAME, 63)}: no quota.`);
}

// --- heal, scrub, sweep, lifecycle ---------------------------------------------------------------------

async function heal(ctx) {
  const client = ctx.client();
  const { bucket, prefix, "start-after": startAfter, "max-objects": max } = ctx.flags;
  if (bucket === undefined && (prefix !== undefined || startAfter !== undefined))
    throw new UsageError("--prefix and --start-after walk a bucket: name it with --bucket.");
  let result;
  if (bucket === undefined) {
    // The heal queues: repeated (--all) while objects are pending and a round healed some.
    result = expectObject(await client.admin("POST", ["heal"], { query: { "max-objects": max } }), "the heal answer");
    let rounds = 1;
    while (ctx.flags.all && result.pending > 0 && result.objectsHealed > 0 && rounds < 1000) {
      if (!ctx.flags.json) process.stderr.write(`heal: ${result.objectsHealed} healed, ${result.pending} pending; going on\n`);
      const next = expectObject(await client.admin("POST", ["heal"], { query: { "max-objects": max } }), "the heal answer");
      result = { ...addTally(result, next), pending: next.pending };
      rounds++;
    }
  } else {
    result = await walk(
      ctx,
      startAfter ?? null,
      (after) => client.admin("POST", ["heal"], { query: { bucket, prefix, "start-after": after ?? undefined, "max-objects": max } }),
      (a) => `heal ${bucket}: ${a.objectsChecked} objects checked, ${a.shardsRebuilt} shard files rebuilt; going on after ${clean(a.next, 100)}`,
    );
  }
  ctx.print(result, () => report(result));
}

function scrubStatusText(s) {
  const scrub = s.scrub ?? s;
  return fields([
    ["pass", `${cell(scrub.pass)}${scrub.running ? " (running now)" : ""}, started ${time(scrub.passStarted)}`],
    ["cursor", scrub.cursor ? `${cell(scrub.cursor.bucket)}/${cell(scrub.cursor.after ?? "")}` : "-"],
    ["settings", inline(scrub.settings ?? null)],
    ["this pass", inline(scrub.current ?? null)],
    ["last pass", scrub.lastPass ? `#${cell(scrub.lastPass.pass)} finished ${time(scrub.lastPass.finished)}: ${inline(scrub.lastPass.counters)}` : "-"],
    [
      "last run",
      scrub.lastRun
        ? `${time(scrub.lastRun.finished)} ${cell(scrub.lastRun.trigger)} ${cell(scrub.lastRun.mode)}, stopped by ${cell(scrub.lastRun.stoppedBy)}`
        : "-",
    ],
    ["totals", inline(scrub.totals ?? null)],
    ["errors", `${Array.isArray(scrub.lastErrors) ? scrub.lastErrors.length : 0}`],
    ...(s.queue ? [["heal queue", `${cell(s.queue.pending)} object(s) pending`]] : []),
  ]);
}

async function healStatus(ctx) {
  const answer = expectObject(await ctx.client().admin("GET", ["heal"]), "the heal answer");
  ctx.print(answer, () => scrubStatusText(answer));
}

async function scrub(ctx) {
  const f = ctx.flags;
  const query = {
    mode: f.mode,
    "max-objects": f["max-objects"],
    "max-ms": f["max-ms"],
    "move-mib": f["move-mib"],
    heal: f["report-only"] ? "false" : undefined,
  };
  const answer = expectObject(await ctx.client().admin("POST", ["scrub"], { query }), "the scrub answer");
  ctx.print(answer, () => {
    const run = answer.run ?? {};
    return [
      fields([
        ["run", `${cell(run.mode)}${run.heal === false ? " (report only)" : ""}, ${cell(run.ms)} ms, stopped by ${cell(run.stoppedBy)}`],
        ["counters", inline(run.counters ?? null)],
      ]),
      "",
      scrubStatusText(answer.status ?? {}),
    ].join("\n");
  });
}

async function sweep(ctx) {
  const answer = expectObject(await ctx.client().admin("POST", ["sweep"], { query: { "grace-seconds": ctx.flags["grace-seconds"] } }), "the sweep answer");
  ctx.print(answer, () => report(answer));
}

async function lifecycle(ctx) {
  const answer = expectObject(
    await ctx.client().admin("POST", ["lifecycle"], { query: { bucket: ctx.flags.bucket, now: ctx.flags.now } }),
    "the lifecycle answer",
  );
  ctx.print(answer, () => report(answer));
}

// --- keys ----------------------------------------------------------------------------------------------

function grantsText(grants) {
  if (!Array.isArray(grants) || grants.length === 0) return "-";
  return grants.map((g) => `${clean(g.bucket, 63)}:${["read", "write", "owner"].filter((r) => g[r]).join("+") || "none"}`).join(", ");
}

async function keyList(ctx) {
  const client = ctx.client();
  if (ctx.flags.bucket !== undefined) {
    const answer = expectObject(await client.admin("GET", ["buckets", ctx.flags.bucket, "keys"]), "the answer");
    const keys = expectList(answer.keys, "keys");
    ctx.print(answer, () =>
      keys.length === 0
        ? `No key has rights on ${clean(ctx.flags.bucket, 63)}.`
        : table(
            ["KEY", "READ", "WRITE", "OWNER"],
            keys.map((k) => [k.keyId, k.grant?.read, k.grant?.write, k.grant?.owner]),
          ),
    );
    return;
  }
  const answer = expectObject(await client.admin("GET", ["keys"]), "the keys answer");
  const keys = expectList(answer.keys, "keys");
  ctx.print(answer, () =>
    keys.length === 0
      ? "No access keys yet (the root key is not listed): `shardgate key create NAME`."
      : table(
          ["ID", "NAME", "ENABLED", "CREATE-BUCKET", "CREATED", "GRANTS"],
          keys.map((k) => [k.id, k.name, k.enabled, k.createBucket, time(k.created), grantsText(k.grants)]),
        ),
  );
}

function keyText(k) {
  return fields([
    ["id", cell(k.id)],
    ...(k.secret !== undefined ? [["secret", `${cell(k.secret)}   (shown once: keep it now)`]] : []),
    ["name", cell(k.name)],
    ["enabled", cell(k.enabled)],
    ["create-bucket", cell(k.createBucket)],
    ["created", time(k.created)],
  ]);
}

async function keyCreate(ctx) {
  const key = expectObject(
    await ctx.client().admin("POST", ["keys"], {
      body: JSON.stringify({ name: ctx.args.NAME, createBucket: ctx.flags["create-bucket"] }),
      headers: { "content-type": "application/json" },
    }),
    "the new key",
  );
  ctx.print(key, () => keyText(key));
}

function keyUpdate(change) {
  return async (ctx) => {
    const body = typeof change === "function" ? change(ctx) : change;
    const key = expectObject(
      await ctx.client().admin("PATCH", ["keys", ctx.args.ID], { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
      "the key",
    );
    ctx.print(key, () => keyText(key));
  };
}

async function keyDelete(ctx) {
  await ctx.client().admin("DELETE", ["keys", ctx.args.ID]);
  ctx.print({ id: ctx.args.ID, deleted: true }, () => `Deleted access key ${clean(ctx.args.ID, 128)}.`);
}

async function keyGrant(ctx) {
  const { read, write, owner, none } = ctx.flags;
  if (none && (read || write || owner)) throw new UsageError("--none takes every right away: give it alone, or name the rights (--read, --write, --owner).");
  if (!none && !read && !write && !owner) throw new UsageError("name the rights to grant (--read, --write, --owner), or --none to take them all away.");
  const grant = expectObject(
    await ctx.client().admin("PUT", ["keys", ctx.args.ID, "buckets", ctx.args.BUCKET], {
      body: JSON.stringify({ read, write, owner }),
      headers: { "content-type": "application/json" },
    }),
    "the grant",
  );
  ctx.print(
    { id: ctx.args.ID, ...grant },
    () => `${clean(ctx.args.ID, 128)} on ${clean(grant.bucket ?? ctx.args.BUCKET, 63)}: ${grantsText([grant]).split(":").pop()}`,
  );
}

// --- buckets (S3) ----------------------------------------------------------------------------------------

async function bucketList(ctx) {
  const res = await ctx.client().request("GET", []);
  const xml = res.body.toString("utf8");
  if (!xml.includes("<ListAllMyBucketsResult")) throw new RequestError("unexpected answer from the gateway: not a ListAllMyBucketsResult.");
  const buckets = xmlElements(xml, "Bucket").map((b) => ({ name: xmlText(b, "Name"), created: xmlText(b, "CreationDate") }));
  ctx.print({ buckets }, () =>
    buckets.length === 0
      ? "No buckets yet: `shardgate bucket create NAME`."
      : table(
          ["NAME", "CREATED"],
          buckets.map((b) => [b.name, time(b.created)]),
        ),
  );
}

async function bucketCreate(ctx) {
  const headers = ctx.flags["object-lock"] ? { "x-amz-bucket-object-lock-enabled": "true" } : {};
  await ctx.client().request("PUT", [ctx.args.NAME], { headers });
  ctx.print(
    { bucket: ctx.args.NAME, created: true, objectLock: ctx.flags["object-lock"] },
    () => `Created bucket ${clean(ctx.args.NAME, 63)}${ctx.flags["object-lock"] ? " (object lock on, versioning enabled)" : ""}.`,
  );
}

async function bucketDelete(ctx) {
  await ctx.client().request("DELETE", [ctx.args.NAME]);
  ctx.print({ bucket: ctx.args.NAME, deleted: true }, () => `Deleted bucket ${clean(ctx.args.NAME, 63)}.`);
}

async function policyGet(ctx) {
  const res = await ctx.client().request("GET", [ctx.args.NAME], { query: { policy: null } });
  const policy = parseJson(res);
  // The policy document itself, in both modes: it is JSON already (and what `policy set` takes back).
  ctx.print(policy, () => JSON.stringify(policy, null, 2));
}

/** A policy file's text (FILE, or - for standard input), checked to be JSON here so a typo fails before the request. */
function readPolicy(file) {
  let text;
  try {
    if (file === "-") text = readFileSync(0, "utf8");
    else {
      if (statSync(file).size > MAX_POLICY_FILE_BYTES) throw new UsageError(`${file} is larger than 1 MiB: not a bucket policy.`);
      text = readFileSync(file, "utf8");
    }
  } catch (e) {
    if (e instanceof UsageError) throw e;
    throw new UsageError(`cannot read ${file}: ${e.code ?? e.message}`);
  }
  try {
    JSON.parse(text);
  } catch (e) {
    throw new UsageError(`${file === "-" ? "standard input" : file} is not JSON: ${clean(e.message, 120)}`);
  }
  return text;
}

async function policySet(ctx) {
  const text = readPolicy(ctx.args.FILE);
  await ctx.client().request("PUT", [ctx.args.NAME], { query: { policy: null }, body: text, headers: { "content-type": "application/json" } });
  ctx.print({ bucket: ctx.args.NAME, policy: "set" }, () => `Set the policy of ${clean(ctx.args.NAME, 63)}.`);
}

async function policyDelete(ctx) {
  await ctx.client().request("DELETE", [ctx.args.NAME], { query: { policy: null } });
  ctx.print({ bucket: ctx.args.NAME, policy: "deleted" }, () => `Deleted the policy of ${clean(ctx.args.NAME, 63)}.`);
}

async function versioningGet(ctx) {
  const res = await ctx.client().request("GET", [ctx.args.NAME], { query: { versioning: null } });
  const xml = res.body.toString("utf8");
  if (!xml.includes("<VersioningConfiguration")) throw new RequestError("unexpected answer from the gateway: not a VersioningConfiguration.");
  const status = xmlText(xml, "Status");
  ctx.print({ bucket: ctx.args.NAME, status }, () => `${clean(ctx.args.NAME, 63)}: versioning ${status ? clean(status, 20) : "never enabled"}`);
}

function versioningSet(status) {
  return async (ctx) => {
    const body = `<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Status>${status}</Status></VersioningConfiguration>`;
    await ctx.client().request("PUT", [ctx.args.NAME], { query: { versioning: null }, body, headers: { "content-type": "application/xml" } });
    ctx.print({ bucket: ctx.args.NAME, status }, () => `${clean(ctx.args.NAME, 63)}: versioning ${status}`);
  };
}

async function lockGet(ctx) {
  const res = await ctx.client().request("GET", [ctx.args.NAME], { query: { "object-lock": null } });
  const xml = res.body.toString("utf8");
  if (!xml.includes("<ObjectLockConfiguration")) throw new RequestError("unexpected answer from the gateway: not an ObjectLockConfiguration.");
  const retention = xmlElements(xml, "DefaultRetention")[0];
  const days = retention ? xmlText(retention, "Days") : null;
  const years = retention ? xmlText(retention, "Years") : null;
  const data = {
    bucket: ctx.args.NAME,
    enabled: xmlText(xml, "ObjectLockEnabled") === "Enabled",
    defaultRetention: retention
      ? { mode: xmlText(retention, "Mode"), ...(days !== null ? { days: Number(days) } : {}), ...(years !== null ? { years: Number(years) } : {}) }
      : null,
  };
  ctx.print(data, () =>
    fields([
      ["object lock", data.enabled ? "enabled" : "not enabled"],
      [
        "default retention",
        data.defaultRetention ? `${cell(data.defaultRetention.mode)}, ${days !== null ? `${cell(days)} day(s)` : `${cell(years)} year(s)`}` : "none",
      ],
    ]),
  );
}

async function lockSet(ctx) {
  const { mode, days, years, "no-default": none } = ctx.flags;
  if (none && (mode || days !== undefined || years !== undefined)) throw new UsageError("--no-default takes no --mode, --days or --years.");
  if (!none && (!mode || (days === undefined) === (years === undefined)))
    throw new UsageError("give --mode GOVERNANCE|COMPLIANCE and one of --days N or --years N (or --no-default for no default retention).");
  const rule = none
    ? ""
    : `<Rule><DefaultRetention><Mode>${mode}</Mode>${days !== undefined ? `<Days>${days}</Days>` : `<Years>${years}</Years>`}</DefaultRetention></Rule>`;
  const body = `<ObjectLockConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><ObjectLockEnabled>Enabled</ObjectLockEnabled>${rule}</ObjectLockConfiguration>`;
  await ctx.client().request("PUT", [ctx.args.NAME], { query: { "object-lock": null }, body, headers: { "content-type": "application/xml" } });
  const defaultRetention = none ? null : { mode, ...(days !== undefined ? { days } : { years }) };
  ctx.print({ bucket: ctx.args.NAME, enabled: true, defaultRetention }, () =>
    none
      ? `${clean(ctx.args.NAME, 63)}: object lock enabled, no default retention.`
      : `${clean(ctx.args.NAME, 63)}: default retention ${mode}, ${days ?? years} ${days !== undefined ? "day(s)" : "year(s)"}.`,
  );
}

// --- the table ---------------------------------------------------------------------------------------------

const integer = (desc, metavar = "N", min = 0) => ({ type: "integer", desc, metavar, min });
const string = (desc, metavar = "VALUE") => ({ type: "string", desc, metavar });
const boolean = (desc) => ({ type: "boolean", desc });

/**
 * Every command: `words` (how it is called), `args` (positional, required), `flags`, `summary`,
 * `example`, `run`.
 */
export const COMMANDS = [
  {
    words: ["status"],
    summary: "Nodes (up/down, latency, usage), quorum, the heal queue and the scrub.",
    example: "shardgate status",
    run: status,
  },
  ...objectCommands,
  {
    words: ["key", "list"],
    summary: "Access keys, their settings and grants (no secrets); --bucket: the keys with rights on a bucket.",
    flags: { bucket: string("Only the keys with rights on this bucket.", "NAME") },
    example: "shardgate key list",
    run: keyList,
  },
  {
    words: ["key", "create"],
    args: ["NAME"],
    summary: "Create an access key; its secret is shown once.",
    flags: { "create-bucket": boolean("The key may create buckets (it then owns those it creates).") },
    example: "shardgate key create backup --create-bucket",
    run: keyCreate,
  },
  { words: ["key", "enable"], args: ["ID"], summary: "Enable a key.", example: "shardgate key enable SGDG8ROISLKKYJY2SH7G", run: keyUpdate({ enabled: true }) },
  {
    words: ["key", "disable"],
    args: ["ID"],
    summary: "Disable a key (its requests are refused at once).",
    example: "shardgate key disable SGDG8ROISLKKYJY2SH7G",
    run: keyUpdate({ enabled: false }),
  },
  {
    words: ["key", "rename"],
    args: ["ID", "NAME"],
    summary: "Rename a key.",
    example: "shardgate key rename SGDG8ROISLKKYJY2SH7G nightly-backup",
    run: keyUpdate((ctx) => ({ name: ctx.args.NAME })),
  },
  { words: ["key", "delete"], args: ["ID"], summary: "Delete a key.", example: "shardgate key delete SGDG8ROISLKKYJY2SH7G", run: keyDelete },
  {
    words: ["key", "grant"],
    args: ["ID", "BUCKET"],
    summary: "Set a key's rights on a bucket (replacing what it had there).",
    flags: {
      read: boolean("List and read objects."),
      write: boolean("Write and delete objects."),
      owner: boolean("Bucket settings: policy, versioning, lifecycle, object lock, deleting the bucket."),
      none: boolean("No rights on the bucket (takes them away)."),
    },
    example: "shardgate key grant SGDG8ROISLKKYJY2SH7G photos --read --write",
    run: keyGrant,
  },
  { words: ["bucket", "list"], summary: "Buckets (what the credentials may see).", example: "shardgate bucket list", run: bucketList },
  {
    words: ["bucket", "create"],
    args: ["NAME"],
    summary: "Create a bucket.",
    flags: { "object-lock": boolean("With object lock (versioning is then enabled for good).") },
    example: "shardgate bucket create photos",
    run: bucketCreate,
  },
  { words: ["bucket", "delete"], args: ["NAME"], summary: "Delete an empty bucket.", example: "shardgate bucket delete photos", run: bucketDelete },
  {
    words: ["bucket", "policy", "get"],
    args: ["NAME"],
    summary: "Print a bucket's policy (JSON).",
    example: "shardgate bucket policy get photos",
    run: policyGet,
  },
  {
    words: ["bucket", "policy", "set"],
    args: ["NAME", "FILE"],
    summary: "Set a bucket's policy from a JSON file (- for standard input).",
    example: "shardgate bucket policy set photos policy.json",
    run: policySet,
  },
  {
    words: ["bucket", "policy", "delete"],
    args: ["NAME"],
    summary: "Delete a bucket's policy.",
    example: "shardgate bucket policy delete photos",
    run: policyDelete,
  },
  {
    words: ["bucket", "versioning", "get"],
    args: ["NAME"],
    summary: "A bucket's versioning: Enabled, Suspended, or never enabled.",
    example: "shardgate bucket versioning get photos",
    run: versioningGet,
  },
  {
    words: ["bucket", "versioning", "enable"],
    args: ["NAME"],
    summary: "Enable versioning.",
    example: "shardgate bucket versioning enable photos",
    run: versioningSet("Enabled"),
  },
  {
    words: ["bucket", "versioning", "suspend"],
    args: ["NAME"],
    summary: "Suspend versioning (versions kept so far stay).",
    example: "shardgate bucket versioning suspend photos",
    run: versioningSet("Suspended"),
  },
  {
    words: ["bucket", "lock", "get"],
    args: ["NAME"],
    summary: "A bucket's object lock and default retention.",
    example: "shardgate bucket lock get photos",
    run: lockGet,
  },
  {
    words: ["bucket", "lock", "set"],
    args: ["NAME"],
    summary: "Turn object lock on (versioning must be enabled) and set or clear its default retention.",
    flags: {
      mode: { type: "string", choices: ["GOVERNANCE", "COMPLIANCE"], metavar: "MODE", desc: "GOVERNANCE or COMPLIANCE." },
      days: integer("Retain new versions this many days.", "N", 1),
      years: integer("Retain new versions this many years.", "N", 1),
      "no-default": boolean("No default retention (object lock stays on)."),
    },
    example: "shardgate bucket lock set photos --mode GOVERNANCE --days 30",
    run: lockSet,
  },
  {
    words: ["bucket", "quota", "get"],
    args: ["NAME"],
    summary: "A bucket's quota and usage (bytes and objects, every version counted).",
    example: "shardgate bucket quota get photos",
    run: quotaGet,
  },
  {
    words: ["bucket", "quota", "set"],
    args: ["NAME"],
    summary: "Set a bucket's hard quota: writes that would exceed it are refused (403 QuotaExceeded).",
    flags: {
      "max-bytes": string("The most bytes it may store: 500MB, 10GiB, a number of bytes, or none.", "SIZE"),
      "max-objects": string("The most objects (versions) it may store, or none.", "N"),
    },
    example: "shardgate bucket quota set photos --max-bytes 10GiB --max-objects 100000",
    run: quotaSet,
  },
  {
    words: ["bucket", "quota", "clear"],
    args: ["NAME"],
    summary: "Remove a bucket's quota.",
    example: "shardgate bucket quota clear photos",
    run: quotaClear,
  },
  { words: ["node", "list"], summary: "Every node: breaker state, latency, requests, errors, draining.", example: "shardgate node list", run: nodeList },
  {
    words: ["node", "add"],
    args: ["ID"],
    summary: "Add an S3 node while the gateway runs (probed first; kept across restarts). The secret: SHARDGATE_NODE_SECRET_ACCESS_KEY or stdin.",
    flags: {
      "node-endpoint": string("The node's S3 endpoint (http:// or https://, no credentials in it; --endpoint is the gateway's).", "URL"),
      bucket: string("The bucket on the node that holds the shard files.", "NAME"),
      "node-region": string("The node's region (default us-east-1; --region is the gateway's signing region).", "REGION"),
      "access-key-id": string("The node's access key id (else SHARDGATE_NODE_ACCESS_KEY_ID).", "ID"),
      "secret-access-key": string("The node's secret key (shows in ps: prefer SHARDGATE_NODE_SECRET_ACCESS_KEY or --secret-access-key-stdin).", "SECRET"),
      "secret-access-key-stdin": boolean("Read the node's secret key from stdin."),
      "client-urls": boolean("Clients can reach the endpoint themselves (the direct path sends shard files straight to it)."),
    },
    example: "SHARDGATE_NODE_ACCESS_KEY_ID=… SHARDGATE_NODE_SECRET_ACCESS_KEY=… shardgate node add S3_7 --node-endpoint https://s3.example.com --bucket shards",
    run: nodeAdd,
  },
  {
    words: ["node", "drain"],
    args: ["ID"],
    summary: "Mark a node draining (no new shard files go to it) and move its shard files off, batch after batch, to the end.",
    flags: {
      bucket: NAME_FLAGS.bucket,
      "start-after": string("Go on after this key (a previous answer's next.startAfter).", "KEY"),
      "max-objects": integer("Objects per batch (1 to 1000, default 50).", "N", 1),
      all: boolean("Repeat batches until the walk is done (the default)."),
      once: boolean("One batch only."),
      "no-mark": boolean("Do not mark the node draining: it must be already."),
    },
    example: "shardgate node drain S3_7",
    run: nodeDrain,
  },
  {
    words: ["node", "undrain"],
    args: ["ID"],
    summary: "Mark a draining node active again (new shard files may go to it).",
    example: "shardgate node undrain S3_7",
    run: nodeState("active"),
  },
  {
    words: ["node", "remove"],
    args: ["ID"],
    summary: "Remove a node added at runtime, once `node drain` has found it empty. Configured nodes: drain, then edit the configuration and restart.",
    example: "shardgate node remove S3_7",
    run: nodeRemove,
  },
  {
    words: ["heal"],
    summary: "Heal now: a bucket's objects (--bucket, a batch; --all to the end), or the heal queues.",
    flags: {
      bucket: string("Check and rebuild this bucket's objects (without it: work through the heal queues).", "NAME"),
      prefix: string("Only keys under this prefix (with --bucket).", "PREFIX"),
      "start-after": string("Go on after this key (a previous answer's next).", "KEY"),
      "max-objects": integer("Objects per batch (1 to 1000, default 100).", "N", 1),
      all: boolean("Repeat batches until the bucket (or the queue) is done."),
    },
    example: "shardgate heal --bucket photos --all",
    run: heal,
  },
  { words: ["heal", "status"], summary: "The scrub's progress and results, and the heal queue.", example: "shardgate heal status", run: healStatus },
  {
    words: ["scrub"],
    summary: "Run one bounded scrub step now (what the scheduler runs).",
    flags: {
      mode: {
        type: "string",
        choices: ["deep", "shallow"],
        metavar: "MODE",
        desc: "deep (read and verify every chunk) or shallow (check shard files are there).",
      },
      "max-objects": integer("At most this many objects (1 to 100000).", "N", 1),
      "max-ms": integer("At most this long, in ms (1 to 900000).", "MS", 1),
      "move-mib": integer("Move at most this many MiB of misplaced shard files.", "MIB"),
      "report-only": boolean("Report only: rebuild and move nothing (heal=false)."),
    },
    example: "shardgate scrub --mode shallow --max-objects 5000",
    run: scrub,
  },
  { words: ["scrub", "status"], summary: "The scrub's progress and results (as `heal status`).", example: "shardgate scrub status", run: healStatus },
  {
    words: ["sweep"],
    summary: "Sweep orphan shard files (no manifest refers to them) older than the grace period now.",
    flags: { "grace-seconds": integer("Grace period in seconds (default SHARDGATE_ORPHAN_GRACE_MS, a day).", "S") },
    example: "shardgate sweep --grace-seconds 3600",
    run: sweep,
  },
  {
    words: ["lifecycle"],
    summary: "Apply the lifecycle rules now (every bucket, or --bucket), then delete what they expired.",
    flags: { bucket: string("Only this bucket.", "NAME"), now: string("As of this ISO 8601 time (default now).", "TIME") },
    example: "shardgate lifecycle --bucket logs",
    run: lifecycle,
  },
];

/** Flags every command takes. */
export const GLOBAL_FLAGS = {
  endpoint: string(
    "The gateway (default $SHARDGATE_ENDPOINT, else the one last started from this directory's data directory, else http://127.0.0.1:8787).",
    "URL",
  ),
  profile: string("Use this profile of ~/.aws/credentials / ~/.aws/config (without it: the environment's keys, else $AWS_PROFILE, else default).", "NAME"),
  region: string("The signing region (default $AWS_REGION, $AWS_DEFAULT_REGION, the profile's, else us-east-1).", "REGION"),
  "data-dir": string(
    "A local gateway's data directory, whose root key (DATA/credentials) signs when no credentials are named (default ./shardgate.json's dataDir, else ./.shardgate).",
    "DIR",
  ),
  json: boolean("Machine output: the gateway's JSON answer (or a stable shape for S3 answers)."),
  timeout: integer("Give up on an answer after this many seconds (default 30; get and put: after this long without a byte).", "S", 1),
  help: boolean("Help for the command."),
};
