/** A log as JSON-RPC carries it (all hex strings), the shape the front serves and matches. */
export type RpcLogObject = {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  blockHash: string;
  blockTimestamp?: string;
  transactionHash: string;
  transactionIndex: string;
  logIndex: string;
  removed: boolean;
};

export type LogFilterObject = {
  address?: string | string[] | null;
  topics?: Array<string | string[] | null> | null;
};

export const ZERO_HASH = `0x${"0".repeat(64)}`;

/** eth_getLogs / eth_subscribe("logs") filter semantics: address set, positional topics with null wildcards and OR-arrays. */
export function matchesFilter(log: RpcLogObject, filter: LogFilterObject | undefined): boolean {
  if (filter === undefined || filter === null) return true;
  const { address, topics } = filter;
  if (address !== undefined && address !== null) {
    const wanted = (Array.isArray(address) ? address : [address]).map((a) => a.toLowerCase());
    if (wanted.length > 0 && !wanted.includes(log.address.toLowerCase())) return false;
  }
  if (topics !== undefined && topics !== null) {
    for (let i = 0; i < topics.length; i++) {
      const wanted = topics[i];
      if (wanted === null || wanted === undefined) continue;
      const actual = log.topics[i]?.toLowerCase();
      if (actual === undefined) return false;
      const options = (Array.isArray(wanted) ? wanted : [wanted]).map((t) => t.toLowerCase());
      if (options.length > 0 && !options.includes(actual)) return false;
    }
  }
  return true;
}

export const toQuantity = (n: number | bigint): string => `0x${n.toString(16)}`;
