// The policy engine's pure parts (auth/wildcard.ts, auth/policy.ts, api/http/permissions.ts): the
// wildcard matcher against a plain dynamic-programming reference on random patterns and values
// (fast-check), the patterns that made the old RegExp backtrack for ever, the limits parsePolicy
// sets (MalformedPolicy beyond them, accepted at them), and the permissions table enforcing every
// action the parser accepts.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OPERATIONS } from "../../worker/src/api/operations";
import { POLICY_ACTIONS, POLICY_LIMITS, evaluatePolicy, parsePolicy } from "../../worker/src/auth/policy";
import { compileWildcard, wildcardMatch } from "../../worker/src/auth/wildcard";
import { S3Error } from "../../worker/src/s3-error";

/** The reference: does `value` match `pattern` (`*` any run, `?` one character)? O(n·m) table, no cleverness. */
function reference(pattern: string, value: string): boolean {
  const n = value.length;
  let row = new Array<boolean>(n + 1).fill(false);
  row[0] = true;
  for (const p of pattern) {
    const next = new Array<boolean>(n + 1).fill(false);
    if (p === "*") {
      next[0] = row[0] as boolean;
      for (let j = 1; j <= n; j++) next[j] = (row[j] as boolean) || (next[j - 1] as boolean);
    } else {
      for (let j = 1; j <= n; j++) next[j] = (row[j - 1] as boolean) && (p === "?" || p === value[j - 1]);
    }
    row = next;
  }
  return row[n] as boolean;
}

const matches = (pattern: string, value: string) => wildcardMatch(compileWildcard(pattern), value);

describe("the wildcard matcher", () => {
  it("matches as IAM does: * any run, ? one character, everything else literal", () => {
    for (const [pattern, value, expected] of [
      ["", "", true],
      ["", "a", false],
      ["*", "", true],
      ["*", "anything/at all", true],
      ["?", "", false],
      ["?", "x", true],
      ["?", "xy", false],
      ["b/public/*", "b/public/a.txt", true],
      ["b/public/*", "b/public", false],
      ["b/public/*", "b/private/a.txt", false],
      ["b/*.jpg", "b/x/y.jpg", true],
      ["b/*.jpg", "b/x/y.jpgx", false],
      ["b/*/thumbs/?.png", "b/u1/thumbs/a.png", true],
      ["b/*/thumbs/?.png", "b/u1/thumbs/ab.png", false],
      ["b/a*b*c", "b/abc", true],
      ["b/a*b*c", "b/acb", false],
      ["b/a**b", "b/ab", true],
      ["b/a?b*a?b", "b/axbaxb", true],
      ["b/a?b*a?b", "b/axb", false], // the runs may not overlap
      ["b/*ab?ab*", "b/xxabab", false],
      ["b/*ab?ab*", "b/xxabxab", true],
      ["b/*ab?ab*", "b/aabaabzab", true],
      ["a.c", "abc", false], // no RegExp: "." is a dot
      ["(a+)+$", "(a+)+$", true],
      ["[ab]", "a", false],
      ["s3:get*", "s3:getobject", true],
      ["s3:get*", "s3:putobject", false],
      ["b/é*", "b/été", true],
      ["b/?", "b/😀", false], // one UTF-16 unit, as the RegExp without /u matched
      ["b/??", "b/😀", true],
    ] as const) {
      expect(matches(pattern, value), `${pattern} ~ ${value}`).toBe(expected);
      expect(reference(pattern, value), `reference: ${pattern} ~ ${value}`).toBe(expected);
    }
  });

  it("counts the scans of the value a match may take: the pieces between two stars", () => {
    for (const [pattern, scans] of [
      ["b/key", 0],
      ["b/*", 0],
      ["b/prefix/*", 0],
      ["b/*.jpg", 0],
      ["b/??/*.j?g", 0],
      ["b/*/thumbs/*", 1],
      ["b/*/thumbs/*.png", 1],
      ["b/*a?b*", 2],
      ["b/*a**b*", 2],
      ["b/*?*", 1],
    ] as const) {
      expect(compileWildcard(pattern).scans, pattern).toBe(scans);
    }
  });

  it("agrees with the reference on random patterns and values (fast-check)", () => {
    const text = (chars: string[], max: number) => fc.array(fc.constantFrom(...chars), { maxLength: max }).map((a) => a.join(""));
    fc.assert(
      fc.property(text(["a", "b", "*", "?"], 14), text(["a", "b"], 24), (pattern, value) => {
        expect(matches(pattern, value)).toBe(reference(pattern, value));
      }),
      { numRuns: 5_000 },
    );
    // Values built from the pattern itself, so that matches are common, not just misses.
    fc.assert(
      fc.property(text(["a", "b", "/", "*", "?"], 20), fc.array(text(["a", "b", "/"], 4), { maxLength: 12 }), (pattern, fills) => {
        let i = 0;
        const value = [...pattern].map((c) => (c === "*" ? (fills[i++] ?? "") : c === "?" ? ((fills[i++] ?? "a")[0] ?? "a") : c)).join("");
        expect(matches(pattern, value)).toBe(reference(pattern, value));
        expect(matches(pattern, value)).toBe(true);
      }),
      { numRuns: 5_000 },
    );
  });

  it("answers the patterns that made the RegExp backtrack for ever, over the longest keys", () => {
    // The attack of issue #29: ten wildcards against 120 characters froze workerd for good.
    expect(matches("b/*a*a*a*a*a*a*a*a*a*a*!", `b/${"a".repeat(120)}`)).toBe(false);
    expect(matches("b/*a*a*a*a*a*a*a*a*a*a*!", `b/${"a".repeat(120)}!`)).toBe(true);
    const key = `b/${"a".repeat(1024)}`;
    for (const pattern of [
      "b/*a*a*a*a*a*a*a*a*a*a*!",
      "b/*a?a?a?a?a?a?a?a?a*!",
      `b/*${"a".repeat(500)}*${"a".repeat(500)}b`,
      `b/*${"a".repeat(1000)}?b*`,
      `b/*${"a".repeat(511)}?${"a".repeat(511)}*b`,
      "b/??????????*b",
    ]) {
      expect(matches(pattern, key), pattern.slice(0, 40)).toBe(false);
      expect(matches(pattern, `${key}b!`), pattern.slice(0, 40)).toBe(reference(pattern, `${key}b!`));
    }
    // Many at once, as a DeleteObjects of 1,000 such keys evaluates them: it finishes.
    const w = compileWildcard(`b/*${"a".repeat(511)}?${"a".repeat(511)}*b`);
    let found = 0;
    for (let i = 0; i < 1_000; i++) if (wildcardMatch(w, key)) found++;
    expect(found).toBe(0);
  });
});

// --- the limits of parsePolicy -----------------------------------------------------------------

const B = "limits";
const statement = (over: Record<string, unknown> = {}) => ({
  Effect: "Allow",
  Principal: "*",
  Action: "s3:GetObject",
  Resource: `arn:aws:s3:::${B}/*`,
  ...over,
});
const doc = (...statements: unknown[]) => JSON.stringify({ Version: "2012-10-17", Statement: statements });

function refusal(text: string): string {
  try {
    parsePolicy(text, B);
  } catch (e) {
    expect(e).toBeInstanceOf(S3Error);
    expect((e as S3Error).code).toBe("MalformedPolicy");
    return (e as S3Error).message;
  }
  throw new Error(`accepted: ${text.slice(0, 200)}`);
}

describe("policy limits", () => {
  it("takes a policy at every limit and refuses one beyond any as MalformedPolicy with the reason", () => {
    const L = POLICY_LIMITS;
    const ten = `arn:aws:s3:::${B}/*a*a*a*a*a*a*a*a*a*a`; // 10 wildcards, 9 scans of the key
    const longKey = `arn:aws:s3:::${B}/${"é".repeat(L.keyPatternBytes / 2)}`;
    const atLimits = [
      doc(...Array.from({ length: L.statements }, () => statement())),
      doc(statement({ Resource: Array.from({ length: L.resourcesPerStatement }, (_, i) => `arn:aws:s3:::${B}/p${i}/*`) })),
      doc(statement({ Action: Array.from({ length: L.actionsPerStatement }, () => "s3:GetObject") })),
      doc(statement({ Resource: ten })),
      doc(statement({ Resource: [ten, ten, `arn:aws:s3:::${B}/*x*y*`] })), // 20 scans
      doc(statement({ Resource: longKey })),
      doc(statement({ Resource: `arn:aws:s3:::*/${"é".repeat(L.keyPatternBytes / 2)}` })), // a wildcard bucket part leaves the key no more
      doc(statement({ Action: "s3:*?????????" })), // 10 wildcards: s3:getobject, s3:putobject …
    ];
    for (const text of atLimits) expect(parsePolicy(text, B).statements.length).toBeGreaterThan(0);

    for (const [text, reason] of [
      [doc(...Array.from({ length: L.statements + 1 }, () => statement())), /at most 100 statements/],
      [doc(statement({ Resource: Array.from({ length: L.resourcesPerStatement + 1 }, (_, i) => `arn:aws:s3:::${B}/p${i}/*`) })), /at most 100 resources/],
      [doc(statement({ Action: Array.from({ length: L.actionsPerStatement + 1 }, () => "s3:GetObject") })), /at most 100 actions/],
      [doc(statement({ Resource: `${ten}*` })), /at most 10 wildcards/],
      // The pattern of issue #29's attack has 11.
      [doc(statement({ Resource: `arn:aws:s3:::${B}/*a*a*a*a*a*a*a*a*a*a*!` })), /at most 10 wildcards/],
      [doc(statement({ Resource: [ten, ten, `arn:aws:s3:::${B}/*x*y*z*`] })), /too costly to evaluate: .* 21 pieces .* at most 20/],
      [doc(statement({ Resource: ten }), statement({ Resource: ten }), statement({ Resource: `arn:aws:s3:::${B}/*x?y?z*` })), /too costly/],
      [doc(statement({ Resource: `arn:aws:s3:::${B}/${"?".repeat(11)}` })), /at most 10 wildcards/],
      [doc(statement({ Action: "s3:?????????????*" })), /at most 10 wildcards/],
      [doc(statement({ Resource: `${longKey}x` })), /at most 1024 bytes/],
      [doc(statement({ Resource: `arn:aws:s3:::*/${"é".repeat(L.keyPatternBytes / 2)}x` })), /at most 1024 bytes/],
      [doc(statement({ Action: `s3:${"*".repeat(L.actionChars)}` })), /longer than 128/],
      [doc(statement({ Action: "s3:NoSuchAction*" })), /invalid action/],
    ] as const) {
      expect(refusal(text)).toMatch(reason);
    }
  });
});

// --- every accepted action is enforced -----------------------------------------------------------

describe("the permissions table", () => {
  it("maps an operation to every action the parser accepts, and names only accepted actions", () => {
    const named = new Set<string>();
    for (const { permission: p } of Object.values(OPERATIONS)) {
      for (const check of [p, p.source, p.bypass, ...(p.headers ?? []).map((h) => h.check)]) {
        if (!check) continue;
        if (check.action) named.add(check.action);
        if (check.versioned) named.add(check.versioned);
      }
    }
    expect([...POLICY_ACTIONS].filter((a) => !named.has(a))).toEqual([]);
    expect([...named].filter((a) => !(POLICY_ACTIONS as readonly string[]).includes(a))).toEqual([]);
  });

  it("a Deny wins, an Allow applies only to its principal, actions are case-insensitive and resources are not", () => {
    const policy = parsePolicy(
      doc(
        statement({ Action: "S3:GET*", Resource: `arn:aws:s3:::${B}/Public/*` }),
        statement({ Effect: "Deny", Action: "s3:GetObject", Resource: `arn:aws:s3:::${B}/Public/secret*` }),
        statement({ Principal: { AWS: ["SGKEY"] }, Action: "s3:PutObject", Resource: `arn:aws:s3:::${B}/in/*` }),
      ),
      B,
    );
    expect(evaluatePolicy(policy, null, "s3:GetObject", `${B}/Public/a`)).toBe("allow");
    expect(evaluatePolicy(policy, null, "s3:GetObjectVersion", `${B}/Public/a`)).toBe("allow");
    expect(evaluatePolicy(policy, null, "s3:GetObject", `${B}/public/a`)).toBe("silent");
    expect(evaluatePolicy(policy, "SGKEY", "s3:GetObject", `${B}/Public/secret.txt`)).toBe("deny");
    expect(evaluatePolicy(policy, "SGKEY", "s3:PutObject", `${B}/in/x`)).toBe("allow");
    expect(evaluatePolicy(policy, "SGOTHER", "s3:PutObject", `${B}/in/x`)).toBe("silent");
    expect(evaluatePolicy(policy, null, "s3:PutObject", `${B}/in/x`)).toBe("silent");
  });
});
