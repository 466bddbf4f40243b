// Whether a local path the gateway trusts is this user's own: shardgate.json (it names nodes,
// credentials and the master key), the data directory (metadata, shard files, the root key, the
// workerd config), and the one-file binary's runtime directory (the workerd it runs). Another user
// who can write one of them could change what the gateway serves, with whose keys, or what it runs.
//
// The rule is OpenSSH's (StrictModes): the path belongs to this user or root and nobody else may
// write it. With `parents`, so does every directory above it, up to /, as its real path names
// them (symbolic links resolved): whoever can write a parent can rename the path away and put
// their own in its place, between the check and its use. A parent with the sticky bit (/tmp) may
// be writable by others: there, only the owner of an entry (checked in its turn) can move it.

import { lstatSync, realpathSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** How a message shows a mode: 0777. */
const octal = (mode) => (mode & 0o7777).toString(8).padStart(4, "0");

/**
 * Why `path` (`what` names it: "config file", "data directory") may not be trusted, in one line
 * naming the path and the command that fixes it; null when it may. A path that does not exist is
 * not checked (the caller makes it, owner-only). The path itself is followed if it is a symbolic
 * link; refusing links is the caller's choice.
 * @param {string} path @param {string} what @param {{ parents?: boolean }} [opts]
 */
export function untrustedPath(path, what, { parents = false } = {}) {
  const uid = process.getuid?.();
  if (uid === undefined) return null; // not POSIX: no owners or modes to compare
  const abs = resolve(path);
  let st;
  try {
    st = statSync(abs);
  } catch {
    return null;
  }
  const own = (p, s, sticky) => {
    if (s.uid !== uid && s.uid !== 0) return `${p} belongs to another user (uid ${s.uid}): chown it to this user (uid ${uid}), or use another path`;
    if ((s.mode & 0o022) !== 0 && !(sticky && (s.mode & 0o1000) !== 0)) return `other users can write ${p} (mode ${octal(s.mode)}): chmod go-w ${p}`;
    return null;
  };
  const leaf = own(abs, st, false);
  if (leaf !== null) return `refusing the ${what}: ${leaf}`;
  if (!parents) return null;
  for (let dir = dirname(realpathSync(abs)); ; dir = dirname(dir)) {
    const problem = own(dir, lstatSync(dir), true);
    if (problem !== null) return `refusing the ${what} ${abs}: ${problem}`;
    if (dir === dirname(dir)) return null;
  }
}
