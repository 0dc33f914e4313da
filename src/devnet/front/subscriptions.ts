import { randomBytes } from "node:crypto";
import type WebSocket from "ws";
import type { Flashblock } from "./sequencer.js";
import { matchesFilter, type LogFilterObject, type RpcLogObject } from "./rpcLogObject.js";

export type PendingLogsMode = {
  /** "single": one item per notification, newest flashblock only (Base nodes v0.3.1, v0.4.1, v0.5+).
   *  "array": one notification per flashblock holding an array (pendingLogs: every pending log so far,
   *  as v0.3.0 and v0.4.0 did; newFlashblockTransactions: the flashblock's new transactions). */
  shape: "single" | "array";
  /** Re-broadcast every flashblock once more, as a node does when a flashblock repeats. */
  repeat: boolean;
};

type Kind = "newHeads" | "logs" | "pendingLogs" | "newFlashblocks" | "newFlashblockTransactions";
const KINDS: readonly Kind[] = [
  "newHeads",
  "logs",
  "pendingLogs",
  "newFlashblocks",
  "newFlashblockTransactions",
];
const FLASHBLOCK_KINDS: ReadonlySet<Kind> = new Set([
  "pendingLogs",
  "newFlashblocks",
  "newFlashblockTransactions",
]);

/**
 * Flashblocks a subscriber may fall behind before it loses the oldest. Note: a Base node fans
 * flashblocks out through a tokio broadcast channel of 20 items (base/base
 * crates/execution/flashblocks/src/state.rs, BUFFER_SIZE); a subscriber that lags further skips
 * what it missed with no notice to the client (base/base#4916, base/node#963).
 */
export const BROADCAST_CAPACITY_FLASHBLOCKS = 20;

type Subscription = {
  socket: WebSocket;
  kind: Kind;
  filter: LogFilterObject | undefined;
  /** newFlashblockTransactions: full transactions with their logs (true) or hashes only. */
  full: boolean;
  /** Flashblocks broadcast but not yet sent to this subscriber (at most BROADCAST_CAPACITY_FLASHBLOCKS). */
  backlog: Flashblock[];
};

/** eth_subscribe bookkeeping for every open WebSocket, and the fan-out of events to them. */
export function createSubscriptions() {
  const subscriptions = new Map<string, Subscription>();
  let mode: PendingLogsMode = { shape: "single", repeat: false };
  let offered = new Set<Kind>(KINDS);
  /** While stalled, subscribers take nothing from the broadcast: they play a slow client. */
  let stalled = false;
  /** Flashblocks skipped because a subscriber lagged, over the front's life. */
  let lagged = 0;

  function send(id: string, sub: Subscription, result: unknown): void {
    if (sub.socket.readyState !== 1) return;
    sub.socket.send(
      JSON.stringify({
        jsonrpc: "2.0",
        method: "eth_subscription",
        params: { subscription: id, result },
      }),
    );
  }

  /** What one subscriber receives for one flashblock, as the node's streams build it (base/base rpc/pubsub.rs). */
  function deliver(id: string, sub: Subscription, flashblock: Flashblock): void {
    // Note: newFlashblocks sends the whole pending block at every flashblock, header hash zero, the
    // same block number repeating (base/base `crates/execution/flashblocks/src/rpc/pubsub.rs`).
    if (sub.kind === "newFlashblocks") return send(id, sub, flashblock.block);
    if (sub.kind === "pendingLogs") {
      if (mode.shape === "array") {
        if (flashblock.allLogs.length > 0)
          send(
            id,
            sub,
            flashblock.allLogs.filter((log) => matchesFilter(log, sub.filter)),
          );
      } else {
        for (const log of flashblock.newLogs)
          if (matchesFilter(log, sub.filter)) send(id, sub, log);
      }
      return;
    }
    // Note: with a filter, a transaction is sent when one of its logs matches, with ALL its logs (base/base PR #1803).
    const items = flashblock.newTransactions
      .filter(
        (t) => sub.filter === undefined || t.logs.some((log) => matchesFilter(log, sub.filter)),
      )
      .map((t) => (sub.full ? t : t.hash));
    if (items.length === 0) return;
    if (mode.shape === "array") send(id, sub, items);
    else for (const item of items) send(id, sub, item);
  }

  function drain(id: string, sub: Subscription): void {
    const times = mode.repeat ? 2 : 1;
    for (const flashblock of sub.backlog.splice(0))
      for (let t = 0; t < times; t++) deliver(id, sub, flashblock);
  }

  return {
    setMode(next: PendingLogsMode): void {
      mode = next;
    },
    mode: () => mode,
    /** The subscription kinds this node offers; others are refused as unsupported. */
    setOffered(kinds: readonly string[]): Kind[] {
      const unknown = kinds.filter((k) => !(KINDS as readonly string[]).includes(k));
      if (unknown.length > 0) throw new Error(`unknown subscription kind ${unknown.join(", ")}`);
      offered = new Set(kinds as Kind[]);
      return [...offered];
    },
    /** Stops (true) or resumes (false) every flashblock subscriber; resuming sends what the broadcast kept. */
    setStalled(value: boolean): number {
      stalled = value;
      if (!stalled) for (const [id, sub] of subscriptions) drain(id, sub);
      return lagged;
    },
    subscribe(socket: WebSocket, params: unknown[]): string {
      const [kind, option] = params as [unknown, unknown];
      if (
        typeof kind !== "string" ||
        !(KINDS as readonly string[]).includes(kind) ||
        !offered.has(kind as Kind)
      )
        throw new Error(`unsupported subscription ${String(kind)}`);
      // newFlashblockTransactions takes `true`/`false` (full or hashes) or a log filter (full, filtered).
      const filterGiven = typeof option === "object" && option !== null;
      const filter = filterGiven ? (option as LogFilterObject) : undefined;
      const full = kind === "newFlashblockTransactions" ? option === true || filterGiven : false;
      const id = `0x${randomBytes(16).toString("hex")}`;
      subscriptions.set(id, { socket, kind: kind as Kind, filter, full, backlog: [] });
      return id;
    },
    unsubscribe(socket: WebSocket, id: unknown): boolean {
      const sub = typeof id === "string" ? subscriptions.get(id) : undefined;
      if (sub === undefined || sub.socket !== socket) return false;
      return subscriptions.delete(id as string);
    },
    dropSocket(socket: WebSocket): void {
      for (const [id, sub] of subscriptions) if (sub.socket === socket) subscriptions.delete(id);
    },
    onBlock(header: unknown, logs: RpcLogObject[]): void {
      for (const [id, sub] of subscriptions) {
        if (sub.kind === "newHeads") send(id, sub, header);
        if (sub.kind === "logs")
          for (const log of logs) if (matchesFilter(log, sub.filter)) send(id, sub, log);
      }
    },
    onRemoved(logs: RpcLogObject[]): void {
      for (const [id, sub] of subscriptions) {
        if (sub.kind === "logs")
          for (const log of logs) if (matchesFilter(log, sub.filter)) send(id, sub, log);
      }
    },
    onFlashblock(flashblock: Flashblock): void {
      for (const [id, sub] of subscriptions) {
        if (!FLASHBLOCK_KINDS.has(sub.kind)) continue;
        sub.backlog.push(flashblock);
        const over = sub.backlog.length - BROADCAST_CAPACITY_FLASHBLOCKS;
        if (over > 0) {
          sub.backlog.splice(0, over);
          lagged += over;
        }
        if (!stalled) drain(id, sub);
      }
    },
  };
}

export type Subscriptions = ReturnType<typeof createSubscriptions>;
