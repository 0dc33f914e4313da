/**
 * The Node-API version better-sqlite3 13's addon is built for (`NAPI_VERSION=10` in its
 * binding.gyp): Node 22.14 and later. On an older Node (20.x, 22.0–22.13) the addon loads and then
 * segfaults in the first `new Database()` (WiseLibs/better-sqlite3#1514), and npm only warns about
 * `engines`: this check turns that crash into one line.
 */
export const REQUIRED_NODE_API_VERSION = 10;

/** The Node releases flashindex is tested on, as the README says: 26 and 24 fully, 22 by a smoke run. */
export const SUPPORTED_NODE = "Node 22.14 or later (the 22, 24 and 26 LTS lines)";

/** Why this Node cannot run flashindex (one line), or undefined when it can. */
export function unsupportedNodeReason(
  versions: { node: string; napi?: string | undefined } = process.versions,
): string | undefined {
  const napi = Number(versions.napi ?? 0);
  if (napi >= REQUIRED_NODE_API_VERSION) return undefined;
  return (
    `Node v${versions.node} is not supported: flashindex needs ${SUPPORTED_NODE}; its SQLite driver ` +
    `(better-sqlite3 13) needs Node-API ${REQUIRED_NODE_API_VERSION} and crashes on this one (it has ${napi})`
  );
}
