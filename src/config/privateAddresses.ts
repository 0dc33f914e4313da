import { BlockList, isIP } from "node:net";

/**
 * Where a webhook may not go unless its subscription sets `allowPrivateTargets`: the machine itself,
 * its link (169.254.169.254 is the cloud metadata service) and private networks. A webhook URL comes
 * from a config an operator may copy from elsewhere, and every request carries our signature: a
 * request to an internal service on the daemon's behalf is what an attacker who can edit one URL wants.
 * IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) match the IPv4 ranges (Node's BlockList maps them).
 */
const RANGES: ReadonlyArray<{
  name: string;
  subnets: ReadonlyArray<readonly [string, number, "ipv4" | "ipv6"]>;
}> = [
  {
    name: "loopback",
    subnets: [
      ["127.0.0.0", 8, "ipv4"],
      ["::1", 128, "ipv6"],
    ],
  },
  {
    name: "link-local",
    subnets: [
      ["169.254.0.0", 16, "ipv4"],
      ["fe80::", 10, "ipv6"],
    ],
  },
  {
    name: "private",
    subnets: [
      ["10.0.0.0", 8, "ipv4"],
      ["172.16.0.0", 12, "ipv4"],
      ["192.168.0.0", 16, "ipv4"],
      ["100.64.0.0", 10, "ipv4"],
      ["fc00::", 7, "ipv6"],
    ],
  },
  // 0.0.0.0 and :: reach the local machine on Linux; multicast and reserved space are no receiver.
  {
    name: "unspecified",
    subnets: [
      ["0.0.0.0", 8, "ipv4"],
      ["::", 128, "ipv6"],
    ],
  },
  {
    name: "multicast or reserved",
    subnets: [
      ["224.0.0.0", 3, "ipv4"],
      ["ff00::", 8, "ipv6"],
    ],
  },
];

const BLOCK_LISTS = RANGES.map(({ name, subnets }) => {
  const list = new BlockList();
  for (const [network, prefix, type] of subnets) list.addSubnet(network, prefix, type);
  return { name, list };
});

/** The kind of non-public range `address` (an IP literal) lies in, or undefined for a public address. */
export function privateRangeOf(address: string): string | undefined {
  const family = isIP(address);
  if (family === 0) return undefined;
  const type = family === 4 ? "ipv4" : "ipv6";
  return BLOCK_LISTS.find(({ list }) => list.check(address, type))?.name;
}

/**
 * What a URL's host is before any lookup: an IP literal in a non-public range, or a `localhost` name
 * (which resolvers answer locally), gives the range's kind; any other name is judged when resolved.
 */
export function privateHostOf(url: URL): string | undefined {
  // A trailing dot names the same host (`localhost.`).
  const host = url.hostname
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase();
  if (host === "localhost" || host.endsWith(".localhost")) return "loopback";
  return privateRangeOf(host);
}
