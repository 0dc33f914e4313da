import { randomBytes } from "node:crypto";
import type WebSocket from "ws";
import type { Flashblock } from "./sequencer.js";
import { matchesFilter, type LogFilterObject, type RpcLogObject } from "./rpcLogObject.js";

export type PendingLogsMode = {
  /** "single": one log per notification, newest flashblock only (Base nodes v0.3.1, v0.4.1, v0.5+).
   *  "array": one notification per flashblock holding every pending log so far (v0.3.0, v0.4.0). */
  shape: "single" | "array";
  /** Re-broadcast every flashblock once more, as a node does when a flashblock repeats. */
  repeat: boolean;
};

type Kind = "newHeads" | "logs" | "pendingLogs" | "newFlashblocks";
type Subscription = { socket: WebSocket; kind: Kind; filter: LogFilterObject | undefined };
const KINDS: readonly string[] = ["newHeads", "logs", "pendingLogs", "newFlashblocks"] satisfies Kind[];

/** eth_subscribe bookkeeping for every open WebSocket, and the fan-out of events to them. */
export function createSubscriptions() {
  const subscriptions = new Map<string, Subscription>();
  let mode: PendingLogsMode = { shape: "single", repeat: false };

  function send(id: string, sub: Subscription, result: unknown): void {
    if (sub.socket.readyState !== 1) return;
    sub.socket.send(JSON.stringify({ jsonrpc: "2.0", method: "eth_subscription", params: { subscription: id, result } }));
  }

  return {
    setMode(next: PendingLogsMode): void {
      mode = next;
    },
    mode: () => mode,
    subscribe(socket: WebSocket, params: unknown[]): string {
      const [kind, filter] = params as [unknown, LogFilterObject | undefined];
      if (typeof kind !== "string" || !KINDS.includes(kind)) throw new Error(`unsupported subscription ${String(kind)}`);
      const id = `0x${randomBytes(16).toString("hex")}`;
      subscriptions.set(id, { socket, kind: kind as Kind, filter });
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
        if (sub.kind === "logs") for (const log of logs) if (matchesFilter(log, sub.filter)) send(id, sub, log);
      }
    },
    onRemoved(logs: RpcLogObject[]): void {
      for (const [id, sub] of subscriptions) {
        if (sub.kind === "logs") for (const log of logs) if (matchesFilter(log, sub.filter)) send(id, sub, log);
      }
    },
    onFlashblock(flashblock: Flashblock): void {
      const times = mode.repeat ? 2 : 1;
      for (const [id, sub] of subscriptions) {
        // Note: newFlashblocks sends the whole pending block at every flashblock, header hash zero, the
        // same block number repeating (protocol-notes §8).
        if (sub.kind === "newFlashblocks") for (let t = 0; t < times; t++) send(id, sub, flashblock.block);
        if (sub.kind !== "pendingLogs") continue;
        for (let t = 0; t < times; t++) {
          if (mode.shape === "array") {
            if (flashblock.allLogs.length > 0) send(id, sub, flashblock.allLogs.filter((log) => matchesFilter(log, sub.filter)));
          } else {
            for (const log of flashblock.newLogs) if (matchesFilter(log, sub.filter)) send(id, sub, log);
          }
        }
      }
    },
  };
}

export type Subscriptions = ReturnType<typeof createSubscriptions>;
