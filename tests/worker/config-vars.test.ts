// The Worker's variables against their schema (worker/src/config.ts VAR_KINDS, checkVars,
// loadConfig): a bad or unknown SHARDGATE_* variable is never the default in silence; loadConfig
// throws ONE Error whose message lists every problem (what /_shardgate/ready answers 503 with);
// the scheduler's interval refuses "15m"; and the schema `npm start` checks shardgate.json's vars
// against (scripts/lib/worker-vars.mjs) is the same one.
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type Env, jobIntervalMs, loadConfig, orphanGraceMs, regionOf } from "../../worker/src/config";
import { checkVars, nearest, VAR_KINDS } from "../../worker/src/config-vars";
// @ts-expect-error: plain JavaScript without declarations (its shape is declared below)
import * as untyped from "../../scripts/lib/worker-vars.mjs";

const nodeSide = untyped as {
  VAR_KINDS: Record<string, string>;
  checkVars(vars: Record<string, unknown>, opts?: { partial?: boolean }): string[];
  nearest(word: string, candidates: readonly string[]): string | null;
};

const baseEnv = env as unknown as Env;
/** A fresh env object (loadConfig caches per object). */
const withVars = (vars: Record<string, string | undefined>) => ({ ...baseEnv, ...vars }) as unknown as Env;

/** The message loadConfig throws for `vars`. */
function problemOf(vars: Record<string, string | undefined>): string {
  try {
    loadConfig(withVars(vars));
  } catch (e) {
    expect(e).toBeInstanceOf(Error);
    return (e as Error).message;
  }
  throw new Error("loadConfig did not throw");
}

describe("loadConfig", () => {
  it("accepts the test pool's configuration, and a region other than us-east-1", () => {
    expect(loadConfig(withVars({})).region).toBe("us-east-1");
    expect(loadConfig(withVars({ SHARDGATE_REGION: "eu-central-1" })).region).toBe("eu-central-1");
  });

  it('refuses SHARDGATE_JOB_INTERVAL_MS="15m" instead of running every 15 minutes in silence', () => {
    expect(problemOf({ SHARDGATE_JOB_INTERVAL_MS: "15m" })).toBe(
      'configuration: SHARDGATE_JOB_INTERVAL_MS: expected a positive integer of milliseconds, got "15m"',
    );
    expect(() => jobIntervalMs(withVars({ SHARDGATE_JOB_INTERVAL_MS: "15m" }))).toThrow("SHARDGATE_JOB_INTERVAL_MS");
    expect(jobIntervalMs(withVars({ SHARDGATE_JOB_INTERVAL_MS: "60000" }))).toBe(60_000);
    expect(jobIntervalMs(withVars({ SHARDGATE_JOB_INTERVAL_MS: undefined }))).toBe(15 * 60_000);
    expect(() => orphanGraceMs(withVars({ SHARDGATE_ORPHAN_GRACE_MS: "1 day" }))).toThrow("SHARDGATE_ORPHAN_GRACE_MS");
    expect(orphanGraceMs(withVars({ SHARDGATE_ORPHAN_GRACE_MS: "0" }))).toBe(0);
  });

  it("lists every problem in one Error: wrong kinds, unknown names with the nearest, missing required ones", () => {
    const message = problemOf({
      SHARDGATE_JOB_INTERVAL_MS: "15m",
      SHARDGATE_JOB_INTERVALL_MS: "60000",
      SHARDGATE_SIGV2: "yes",
      SHARDGATE_REGION: "EU West!",
      SHARDGATE_INLINE_BYTES: "-1",
      SHARDGATE_S3_NODES: "[1,2]",
      SHARDGATE_SCRUB_MODE: "thorough",
      SHARDGATE_BLOCK_BYTES: undefined,
    });
    expect(message.split("\n")).toHaveLength(1);
    expect(message).toMatch(/^configuration: 8 problems: /);
    for (const part of [
      'SHARDGATE_JOB_INTERVAL_MS: expected a positive integer of milliseconds, got "15m"',
      "SHARDGATE_JOB_INTERVALL_MS: unknown variable (did you mean SHARDGATE_JOB_INTERVAL_MS?)",
      'SHARDGATE_SIGV2: expected "on" or "off", got "yes"',
      'SHARDGATE_REGION: expected a region name such as "us-east-1", got "EU West!"',
      'SHARDGATE_INLINE_BYTES: expected a positive integer, got "-1"',
      "SHARDGATE_S3_NODES: expected a JSON object, got a value of 5 characters (not shown: it may hold a secret)",
      'SHARDGATE_SCRUB_MODE: expected "deep" or "shallow", got "thorough"',
      "SHARDGATE_BLOCK_BYTES: required, not set",
    ])
      expect(message).toContain(part);
  });

  it("never quotes a variable that may hold a secret: its length only (a malformed SHARDGATE_S3_NODES with a key inline)", () => {
    const secret = "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY";
    for (const vars of [
      { SHARDGATE_S3_NODES: `{"s3a":{"endpoint":"http://x","bucket":"b","accessKeyId":"AKIA","secretAccessKey":"${secret}",}}` },
      { SHARDGATE_S3_NODES: `[${JSON.stringify(secret)}]` },
    ]) {
      const message = problemOf(vars);
      expect(message).toContain("not shown: it may hold a secret");
      expect(message).not.toContain(secret.slice(0, 5));
    }
  });

  it("lists the problems values have together (quorum, draining, geometry), after the schema passes", () => {
    const message = problemOf({ SHARDGATE_WRITE_QUORUM: "9", SHARDGATE_DRAINING_NODES: "NODE_9", SHARDGATE_NODE_DELAY_MS: '{"NODE_8": 5}' });
    expect(message).toMatch(/^configuration: 3 problems: /);
    expect(message).toContain("SHARDGATE_WRITE_QUORUM must be between k and k + m (4 and 6), got 9");
    expect(message).toContain("draining node NODE_9 is not in SHARDGATE_NODES");
    expect(message).toContain("SHARDGATE_NODE_DELAY_MS names NODE_8");
    expect(problemOf({ SHARDGATE_DATA_SHARDS: "5" })).toBe("configuration: 5+2 needs at least 7 nodes that are not draining, have 6");
  });

  it("shows hostile values short and escaped, and builds no pattern from them", () => {
    const message = problemOf({ SHARDGATE_READ_STALL_MS: `${"(a+)+$".repeat(1000)}\n\u0000` });
    expect(message.length).toBeLessThan(300);
    expect(message).not.toContain("\n");
    expect(problemOf({ [`SHARDGATE_${"X".repeat(100_000)}`]: "1" })).toContain("unknown variable");
  });

  it("lets the S3 nodes' credential secrets and other bindings through", () => {
    expect(checkVars({ ...(baseEnv as unknown as Record<string, unknown>), SHARDGATE_S3_NODE_FAR_ACCESS_KEY_ID: "x", NODE_7: "anything" })).toEqual([]);
  });

  it("gives the region the console signs with (regionOf)", () => {
    expect(regionOf(withVars({ SHARDGATE_REGION: "ap-south-2" }))).toBe("ap-south-2");
    expect(regionOf(withVars({ SHARDGATE_REGION: "" }))).toBe("us-east-1");
    expect(() => regionOf(withVars({ SHARDGATE_REGION: "../x" }))).toThrow("SHARDGATE_REGION");
  });
});

describe("the schema npm start checks (scripts/lib/worker-vars.mjs)", () => {
  it("is the Worker's own (worker/src/config-vars.ts, one table)", () => {
    expect(nodeSide.VAR_KINDS).toBe(VAR_KINDS);
  });

  it("finds the same problems in the same words", () => {
    const samples: Record<string, string>[] = [
      { SHARDGATE_JOB_INTERVAL_MS: "15m" },
      { SHARDGATE_NODE_STALL_MS: "0", SHARDGATE_ORPHAN_GRACE_MS: "0", SHARDGATE_SIGV2: "off" },
      { SHARDGATE_GATEWAY_URL: "ftp://x", SHARDGATE_CLIENT_IP_HEADER: "X Real IP", SHARDGATE_VIRTUAL_HOST_SUFFIX: "a/b" },
      { SHARDGATE_DIRECT_PART_BYTES: "1e6", SHARDGATE_NODES: "a,b c", SHARDGATE_METRICS_TOKN: "t" },
      { SHARDGATE_REGION: "us-east-1", SHARDGATE_SCRUB_MOVE_MIB_PER_RUN: "12.5", SHARDGATE_NODE_DELAY_MS: "{}" },
    ];
    for (const vars of samples) expect(nodeSide.checkVars(vars, { partial: true }), JSON.stringify(vars)).toEqual(checkVars(vars, { partial: true }));
  });

  it("suggests near names only: a typo, a swap, not an unrelated word", () => {
    const names = Object.keys(VAR_KINDS);
    for (const [typo, meant] of [
      ["SHARDGATE_REGOIN", "SHARDGATE_REGION"],
      ["SHARDGATE_SIGV", "SHARDGATE_SIGV2"],
      ["shardgate_nodes", "SHARDGATE_NODES"],
      ["SHARDGATE_SOMETHING_ELSE_ENTIRELY", null],
    ] as const) {
      expect(nearest(typo, names), typo).toBe(meant);
      expect(nodeSide.nearest(typo, names), typo).toBe(meant);
    }
  });
});
