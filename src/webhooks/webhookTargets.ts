import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from "node:dns";
import { privateRangeOf } from "../config/privateAddresses.js";
import { PrivateTargetError } from "../errors/webhooks.js";

/** How names are resolved: dns.lookup's all-addresses form (the system resolver, /etc/hosts included). */
export type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;
/** The `lookup` option of node:http (net.connect calls it with `all` set or not). */
export type ConnectLookup = (
  hostname: string,
  options: { all?: boolean; family?: number | string },
  callback: LookupCallback,
) => void;

export const systemResolve: Resolve = (hostname, options, callback) =>
  dnsLookup(hostname, options, callback);

/**
 * A `lookup` for node:http over `resolve`. With `publicOnly` it refuses a host with any address in a
 * non-public range. The check sits where the socket gets its address, so the address checked is the
 * address connected to: a name that resolves to a public address for a first look and to 127.0.0.1 for
 * the connection (DNS rebinding) cannot slip through. Every address must be public, as the connection
 * may try any of them.
 */
export function createConnectLookup(resolve: Resolve, publicOnly: boolean): ConnectLookup {
  return (hostname, options, callback) => {
    const family =
      options.family === 4 || options.family === "IPv4"
        ? 4
        : options.family === 6 || options.family === "IPv6"
          ? 6
          : 0;
    resolve(hostname, { all: true, family }, (error, addresses) => {
      if (error !== null) return callback(error, []);
      for (const { address } of publicOnly ? addresses : []) {
        const range = privateRangeOf(address);
        if (range !== undefined)
          return callback(
            new PrivateTargetError(
              `${hostname} resolves to ${address}, a ${range} address: refused (set allowPrivateTargets on the subscription to allow it)`,
            ),
            [],
          );
      }
      const first = addresses[0];
      if (options.all === true || first === undefined) return callback(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}
