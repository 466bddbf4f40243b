// The Worker's variables for `npm start`: their schema is worker/src/config-vars.ts itself (Node runs
// its TypeScript as it is, types stripped), so the Worker and `npm start` check them alike; and the
// one check across values that `npm start` makes before workerd starts (the Worker makes it in
// config.ts once the schema passes).
import { checkVars as checkEach } from "../../worker/src/config-vars.ts";

export { isS3NodeSecret, KINDS, nearest, SECRET_VARS, shown, shownVar, VAR_KINDS } from "../../worker/src/config-vars.ts";

/**
 * Every problem with the SHARDGATE_* variables of `vars` (config-vars.ts checkVars) and, unless
 * `partial` or they have problems of their own, a write quorum outside k … k + m.
 * @param {Record<string, unknown>} vars @param {{ partial?: boolean, prefix?: string }} [opts]
 * @returns {string[]}
 */
export function checkVars(vars, { partial = false, prefix = "" } = {}) {
  const problems = checkEach(vars, { partial, prefix });
  if (partial || problems.length) return problems;
  const [k, m, q] = ["SHARDGATE_DATA_SHARDS", "SHARDGATE_PARITY_SHARDS", "SHARDGATE_WRITE_QUORUM"].map((n) => Number(vars[n]));
  if (vars.SHARDGATE_WRITE_QUORUM && (q < k || q > k + m))
    problems.push(`${prefix}SHARDGATE_WRITE_QUORUM: must be between k and k + m (${k} and ${k + m}), got ${q}`);
  return problems;
}
