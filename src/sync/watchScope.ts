import type { Hex } from "viem";
import { contiguousEnd, mergeRanges, type BlockRange } from "../blockRanges.js";
import type { TokenConfig } from "../config/types.js";
import { PAYMENT_TOPICS } from "../rows/paymentEvents.js";
import type { Logger } from "../ops/logger.js";
import type { Store } from "../store/store.js";
import type { LogSelection, WatchedToken } from "./watchedLogs.js";

/*
 * What the synced ranges cover. A token read whole records its ranges under its address; a watched
 * token records them per watched address, under `token/address` (a "member"), since a range synced
 * for address A says nothing of address B. A range synced whole covers every watched address, so a
 * member's ranges are its own and its token's. Adding an address leaves it with no range of its
 * own: the backfill fetches its history, and only its. Removing one keeps its rows and ranges.
 */

/** How long the authorizers of stored orders are reused before they are read again: the pre-confirmed view is polled every ~200 ms. */
export const ORDER_AUTHORIZERS_TTL_MS = 1_000;

/** The synced-range member of one watched address of a token. */
export const watchMember = (token: Hex, address: Hex): Hex => `${token}/${address}` as Hex;

/** The members whose ranges a token's indexing records: its address, or one per watched address. */
export function membersOf(token: Pick<TokenConfig, "key" | "watch">): Hex[] {
  return token.watch === undefined
    ? [token.key]
    : token.watch.map((address) => watchMember(token.key, address));
}

/** The token of a member, and the watched address when it is one. */
export function parseMember(member: Hex): { token: Hex; watched: Hex | undefined } {
  const [token, watched] = member.split("/") as [Hex, Hex | undefined];
  return { token, watched };
}

/** The block ranges a member's logs are indexed for: its own, and its token's when it was indexed whole. */
export async function memberRanges(
  store: Pick<Store, "syncedRanges">,
  member: Hex,
): Promise<BlockRange[]> {
  const { token, watched } = parseMember(member);
  if (watched === undefined) return store.syncedRanges(token);
  return mergeRanges([...(await store.syncedRanges(token)), ...(await store.syncedRanges(member))]);
}

/** A token's checkpoint: the last block from its start block up to which every one of its members is indexed without a gap. */
export async function tokenCheckpoint(
  store: Pick<Store, "syncedRanges">,
  token: Pick<TokenConfig, "key" | "watch" | "startBlock">,
): Promise<number> {
  const ends = await Promise.all(
    membersOf(token).map(async (member) =>
      contiguousEnd(await memberRanges(store, member), token.startBlock),
    ),
  );
  return Math.min(...ends);
}

/** A LogSelection without its scope: spread a scope into it. */
export type MemberSelection = Pick<LogSelection, "addresses" | "topic0" | "watched">;

export type WatchScope = {
  /** The members of the tokens indexed at `block` (their start block at or below it). */
  membersAt: (block: number) => Hex[];
  /** Every member of every token. */
  members: () => Hex[];
  /** What to fetch for these members (in any scope): tokens read whole, and watched tokens with their addresses and order authorizers. */
  selection: (members: readonly Hex[]) => Promise<MemberSelection>;
  /**
   * The same from the configuration alone, without the authorizers of stored orders: for
   * subscriptions, whose filter is fixed when they start (the poll and the canonical blocks ask for those).
   */
  configuredSelection: (members: readonly Hex[]) => MemberSelection;
};

/** The members and log selections of the configured tokens; the authorizers of stored orders are read at most every ORDER_AUTHORIZERS_TTL_MS. */
export function createWatchScope(deps: {
  tokens: readonly TokenConfig[];
  store: Pick<Store, "listOrders">;
}): WatchScope {
  const { tokens } = deps;
  const anyWatched = tokens.some((t) => t.watch !== undefined);
  let authorizers: { at: number; byToken: Map<Hex, Hex[]> } | undefined;

  async function orderAuthorizers(): Promise<Map<Hex, Hex[]>> {
    if (authorizers !== undefined && Date.now() - authorizers.at < ORDER_AUTHORIZERS_TTL_MS)
      return authorizers.byToken;
    const byToken = new Map<Hex, Hex[]>();
    for (const order of await deps.store.listOrders()) {
      const token = order.token.toLowerCase() as Hex;
      const list = byToken.get(token) ?? [];
      list.push(order.authorizer.toLowerCase() as Hex);
      byToken.set(token, list);
    }
    authorizers = { at: Date.now(), byToken };
    return byToken;
  }

  return {
    membersAt: (block) => tokens.filter((t) => t.startBlock <= block).flatMap(membersOf),
    members: () => tokens.flatMap(membersOf),
    async selection(members) {
      const watching = anyWatched && members.some((m) => parseMember(m).watched !== undefined);
      return selectionOf(members, watching ? await orderAuthorizers() : new Map());
    },
    configuredSelection: (members) => selectionOf(members, new Map()),
  };
}

/** Members grouped into the tokens read whole and the watched tokens, with the given authorizers per token. */
function selectionOf(
  members: readonly Hex[],
  authorizers: ReadonlyMap<Hex, readonly Hex[]>,
): MemberSelection {
  const whole: Hex[] = [];
  const watched = new Map<Hex, Hex[]>();
  for (const member of members) {
    const { token, watched: address } = parseMember(member);
    if (address === undefined) whole.push(token);
    else watched.set(token, [...(watched.get(token) ?? []), address]);
  }
  const watchedTokens: WatchedToken[] = [...watched].map(([token, addresses]) => ({
    token,
    addresses,
    authorizers: [...new Set(authorizers.get(token) ?? [])],
  }));
  return { addresses: whole, topic0: PAYMENT_TOPICS, watched: watchedTokens };
}

/** The meta key under which the watch list a token was last synced with is kept ("" for every log). */
export const watchMetaKey = (token: Hex): string => `watch_list:${token}`;

export type WatchListChange = {
  token: Hex;
  added: Hex[];
  removed: Hex[];
  before: readonly Hex[] | undefined;
  after: readonly Hex[] | undefined;
};

/**
 * Compares each token's watch list with the one the database was last synced with (kept in `meta`),
 * logs a change ("Changed the watch list": the addresses added are backfilled from the token's
 * start block, the rows of those removed are kept) and records the new list. Returns the changes.
 */
export async function recordWatchLists(
  deps: { store: Pick<Store, "readMeta" | "writeMeta">; logger: Logger },
  tokens: readonly Pick<TokenConfig, "key" | "watch" | "startBlock">[],
): Promise<WatchListChange[]> {
  const changes: WatchListChange[] = [];
  for (const token of tokens) {
    const stored = await deps.store.readMeta(watchMetaKey(token.key));
    const current = token.watch === undefined ? "" : token.watch.join(",");
    if (stored === current) continue;
    await deps.store.writeMeta(watchMetaKey(token.key), current);
    // A database synced before watch lists existed has no entry: it was synced whole.
    const before = stored === undefined || stored === "" ? undefined : (stored.split(",") as Hex[]);
    const after = token.watch;
    const added = (after ?? []).filter((a) => !(before ?? []).includes(a));
    const removed = (before ?? []).filter((a) => !(after ?? []).includes(a));
    const change = { token: token.key, added, removed, before, after };
    changes.push(change);
    if (stored === undefined && after === undefined) continue;
    deps.logger.info({
      msg: "Changed the watch list",
      token: token.key,
      watched_before: before ?? "every log",
      watched_now: after ?? "every log",
      added,
      removed,
      // Ranges synced whole cover every address; those synced for other addresses do not cover the new ones.
      backfill_from_block: after === undefined || added.length > 0 ? token.startBlock : null,
    });
  }
  return changes;
}
