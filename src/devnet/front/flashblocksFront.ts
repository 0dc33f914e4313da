import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer, type WebSocket } from "ws";
import { createCanonicalWatcher } from "./canonicalWatcher.js";
import { blockRangeError, injectedHttpFailure, isPendingRead, NO_FAULTS, parseFaults, pendingRateLimitAnswer, resultLimitError, type FaultAnswer, type Faults } from "./faults.js";
import { matchesFilter, toQuantity, type LogFilterObject, type RpcLogObject } from "./rpcLogObject.js";
import { createSendRawTransactionSync } from "./sendRawTransactionSync.js";
import { createSequencer } from "./sequencer.js";
import { createSubscriptions, type PendingLogsMode } from "./subscriptions.js";
import { createUpstream, UpstreamError } from "./upstream.js";

export type FrontOptions = {
  /** The anvil behind the front (started with --no-mining --order fifo). */
  anvilUrl: string;
  host?: string;
  port?: number;
  /** Flashblock cadence; 0 means only on `devnet_flashblock`. */
  flashblockIntervalMs: number;
  /** Block cadence; 0 means only on `devnet_mine`. */
  blockTimeMs: number;
  pendingLogs?: PendingLogsMode;
  onError?: (error: unknown) => void;
};

type Request = { jsonrpc?: string; id?: unknown; method?: unknown; params?: unknown };
type Answer = { jsonrpc: "2.0"; id: unknown; result?: unknown; error?: { code: number; message: string; data?: unknown } };
/** An answer and its HTTP status; only a lone (non-batch) HTTP request travels with a status other than 200. */
type Answered = { answer: Answer; httpStatus: number };

/** How often the front looks for head changes it did not cause (someone mining through anvil directly). */
const HEAD_WATCH_INTERVAL_MS = 100;

/**
 * A JSON-RPC server (HTTP and WebSocket on one port) that makes a local anvil look like a Base node
 * with Flashblocks: the "pending" view, pendingLogs and newFlashblocks, a pre-confirmation-aware pending nonce,
 * `removed: true` re-sends after reorgs, and injectable faults. Everything else goes to anvil as is.
 */
export async function startFlashblocksFront(options: FrontOptions) {
  const upstream = createUpstream(options.anvilUrl);
  const subscriptions = createSubscriptions();
  if (options.pendingLogs !== undefined) subscriptions.setMode(options.pendingLogs);
  const sequencer = createSequencer(upstream, (flashblock) => subscriptions.onFlashblock(flashblock));
  /** newHeads and logs notifications go out this late: flashblocks of the next block then arrive first (base/base PR #979). */
  let headsDelayMs = 0;
  const later = (work: () => void) => (headsDelayMs > 0 ? void setTimeout(work, headsDelayMs) : work());
  const watcher = createCanonicalWatcher(upstream, {
    onBlock: (header, logs) => later(() => subscriptions.onBlock(header, logs)),
    onRemoved: (logs) => later(() => subscriptions.onRemoved(logs)),
  });
  let faults: Faults = NO_FAULTS;
  /** Reads of the pending view over HTTP (eth_getLogs up to "pending", eth_getBlockByNumber "pending"): answered and refused. */
  const pendingReads = { answered: 0, refused: 0 };
  const sockets = new Set<WebSocket>();
  const reportError = options.onError ?? (() => undefined);
  const sendSync = createSendRawTransactionSync({
    send: async (rawTx) => (await sequencer.admit(() => upstream.forward({ jsonrpc: "2.0", id: 0, method: "eth_sendRawTransaction", params: [rawTx] }))) as Answer,
    canonicalReceipt: (hash) => upstream.call("eth_getTransactionReceipt", [hash]),
    preconfirmedReceipt: (hash) => sequencer.preconfirmedReceipt(hash),
    missesFlashblock: () => faults.sendSyncMissesFlashblock,
  });

  const admin: Record<string, (params: unknown[]) => Promise<unknown>> = {
    devnet_flashblock: async () => {
      const flashblock = await sequencer.flashblock();
      return { blockNumber: flashblock.blockNumber, index: flashblock.index, newLogs: flashblock.newLogs.length };
    },
    devnet_mine: async () => {
      await sequencer.mine();
      await watcher.sync();
      return true;
    },
    devnet_reorg: async (params) => {
      const [depth, transactions] = params as [unknown, unknown];
      if (typeof depth !== "number" || !Number.isInteger(depth) || depth < 1) throw new RpcError(-32602, "depth must be a positive integer");
      // By default the new branch re-includes the orphaned transactions (new block hashes, same
      // payments), as a real reorg mostly does; anvil alone would drop them and strand their nonces.
      // Between sequencer steps: a block being mined sets pool transactions aside for a moment.
      const replacements = await sequencer.between(async () => {
        const chosen = Array.isArray(transactions) ? transactions : await orphanedTransactions(depth);
        // Note: anvil_reorg takes positional params only.
        await upstream.call("anvil_reorg", [depth, chosen]);
        return chosen;
      });
      await watcher.sync();
      return { depth, reincluded: replacements.length };
    },
    devnet_dropPreconfirmed: async (params) => {
      const [hash] = params;
      if (typeof hash !== "string") throw new RpcError(-32602, "expected a transaction hash");
      return sequencer.drop(hash);
    },
    devnet_deferPreconfirmed: async (params) => {
      const [hash] = params;
      if (typeof hash !== "string") throw new RpcError(-32602, "expected a transaction hash");
      return sequencer.defer(hash);
    },
    devnet_setPendingLag: async (params) => {
      const [blocks] = params;
      if (typeof blocks !== "number" || !Number.isInteger(blocks) || blocks < 0) throw new RpcError(-32602, "blocks must be a non-negative integer");
      await sequencer.setLag(blocks);
      return blocks;
    },
    devnet_clearPending: async () => {
      await sequencer.clear();
      return true;
    },
    devnet_disconnectWebSockets: async () => {
      const count = sockets.size;
      for (const socket of sockets) socket.terminate();
      return count;
    },
    devnet_setFaults: async (params) => {
      try {
        faults = parseFaults(params[0] ?? {});
      } catch (error) {
        throw new RpcError(-32602, `devnet_setFaults: ${(error as Error).message}`);
      }
      return faults;
    },
    devnet_stallFlashblockSubscribers: async (params) => {
      if (typeof params[0] !== "boolean") throw new RpcError(-32602, "expected true (stall) or false (resume)");
      return { lagged: subscriptions.setStalled(params[0]) };
    },
    devnet_setSubscriptionKinds: async (params) => {
      if (!Array.isArray(params[0]) || !params[0].every((k) => typeof k === "string")) throw new RpcError(-32602, "expected an array of subscription kinds");
      try {
        return subscriptions.setOffered(params[0] as string[]);
      } catch (error) {
        throw new RpcError(-32602, (error as Error).message);
      }
    },
    devnet_setPendingView: async (params) => {
      const [mode] = params;
      if (mode !== "live" && mode !== "frozen" && mode !== "null") throw new RpcError(-32602, 'mode must be "live", "frozen" or "null"');
      return sequencer.setView(mode);
    },
    devnet_setHeadsDelay: async (params) => {
      const [ms] = params;
      if (typeof ms !== "number" || !Number.isInteger(ms) || ms < 0 || ms > 60_000) throw new RpcError(-32602, "ms must be an integer from 0 to 60000");
      headsDelayMs = ms;
      return ms;
    },
    devnet_pendingReads: async () => ({ ...pendingReads }),
    devnet_setPendingLogsMode: async (params) => {
      const mode = params[0] as Partial<PendingLogsMode> | undefined;
      if (mode?.shape !== "single" && mode?.shape !== "array") throw new RpcError(-32602, 'shape must be "single" or "array"');
      subscriptions.setMode({ shape: mode.shape, repeat: mode.repeat === true });
      return subscriptions.mode();
    },
  };

  /** The raw transactions of the last `depth` blocks, paired with their block offset for anvil_reorg. */
  async function orphanedTransactions(depth: number): Promise<Array<[string, number]>> {
    const head = Number(await upstream.call<string>("eth_blockNumber"));
    const pairs: Array<[string, number]> = [];
    for (let offset = 0; offset < depth; offset++) {
      const block = await upstream.call<{ transactions: string[] } | null>("eth_getBlockByNumber", [toQuantity(head - depth + 1 + offset), false]);
      for (const hash of block?.transactions ?? []) pairs.push([await upstream.call<string>("eth_getRawTransactionByHash", [hash]), offset]);
    }
    return pairs;
  }

  /** A fault as the JSON-RPC error it is answered with, with its HTTP status. */
  const faultAnswer = (request: Request, fault: FaultAnswer): Answered => ({
    answer: { jsonrpc: "2.0", id: request.id ?? null, error: { code: fault.code, message: fault.message } },
    httpStatus: fault.httpStatus,
  });

  async function getLogs(request: Request, params: unknown[], withFaults: boolean): Promise<Answer | Answered> {
    const filter = (params[0] ?? {}) as LogFilterObject & { fromBlock?: string; toBlock?: string; blockHash?: string };
    const pending = sequencer.pendingLogs().filter((log) => matchesFilter(log, filter));
    // Note: only toBlock "pending" switches to the pre-confirmed path (Base's flashblocks rpc/eth.rs).
    if (filter.blockHash === undefined && filter.toBlock === "pending") {
      if (filter.fromBlock === "pending") return ok(request, pending);
      const canonical = (await upstream.forward({ ...request, params: [{ ...filter, toBlock: "latest" }] })) as Answer;
      if (canonical.error !== undefined) return canonical;
      const seen = new Set((canonical.result as RpcLogObject[]).map((l) => `${l.blockNumber}:${l.logIndex}`));
      return ok(request, [...(canonical.result as RpcLogObject[]), ...pending.filter((l) => !seen.has(`${l.blockNumber}:${l.logIndex}`))]);
    }
    if (withFaults && filter.blockHash === undefined && faults.maxBlockRange !== undefined) {
      const head = Number(await upstream.call<string>("eth_blockNumber"));
      const from = blockTag(filter.fromBlock, head);
      const to = blockTag(filter.toBlock, head);
      const error = blockRangeError(faults, from, to);
      if (error !== undefined) return faultAnswer(request, error);
    }
    const answer = (await upstream.forward(request)) as Answer;
    if (withFaults && Array.isArray(answer.result) && filter.blockHash === undefined) {
      const head = Number(await upstream.call<string>("eth_blockNumber"));
      const error = resultLimitError(faults, blockTag(filter.fromBlock, head), answer.result as RpcLogObject[]);
      if (error !== undefined) return faultAnswer(request, error);
    }
    return answer;
  }

  async function handle(request: Request, socket: WebSocket | undefined): Promise<Answered> {
    const answered = await route(request, socket);
    return "httpStatus" in answered ? answered : { answer: answered, httpStatus: 200 };
  }

  async function route(request: Request, socket: WebSocket | undefined): Promise<Answer | Answered> {
    const params = Array.isArray(request.params) ? request.params : [];
    try {
      if (typeof request.method !== "string") throw new RpcError(-32600, "invalid request");
      const method = request.method;
      if (method in admin) return ok(request, await admin[method]!(params));
      if (method === "eth_getLogs") return await getLogs(request, params, socket === undefined);
      if (method === "eth_getBlockByNumber" && params[0] === "pending") {
        // Note: a Flashblocks node answers "pending" from its pre-confirmed state (header hash zero), null when it has none.
        const block = sequencer.pendingBlock();
        if (block === undefined || params[1] === true) return ok(request, block ?? null);
        return ok(request, { ...block, transactions: block.transactions.map((t) => t.hash) });
      }
      if (method === "eth_getTransactionCount" && params[1] === "pending") {
        // Note: on Base, "pending" is the canonical count plus the sender's pre-confirmed transactions; no mempool.
        // Read between sequencer steps, as a node answers from one state: in the middle of a block being
        // mined the block's transactions were counted twice (in latest and as still pre-confirmed), and a
        // relayer trusting that count left a nonce gap.
        const count = await sequencer.between(async () => {
          const latest = Number(await upstream.call<string>("eth_getTransactionCount", [params[0], "latest"]));
          return latest + sequencer.preconfirmedCount(String(params[0]));
        });
        return ok(request, toQuantity(count));
      }
      if (method === "eth_sendRawTransaction") {
        // Not while a block is mined exactly (the pool's other transactions set aside, dropped and sent
        // again): a transaction entering the pool then could be dropped with them.
        return (await sequencer.admit(() => upstream.forward(request))) as Answer;
      }
      if (method === "eth_sendRawTransactionSync") return { jsonrpc: "2.0", id: request.id ?? null, ...(await sendSync(params)) };
      if (method === "eth_getTransactionReceipt") {
        // Note: on Base, a pre-confirmed transaction has a receipt (zero blockHash) before its block exists.
        const answer = (await upstream.forward(request)) as Answer;
        if (answer.error !== undefined || answer.result !== null || typeof params[0] !== "string") return answer;
        return ok(request, sequencer.preconfirmedReceipt(params[0]) ?? null);
      }
      if (method === "eth_subscribe") {
        if (socket === undefined) throw new RpcError(-32601, "eth_subscribe needs a WebSocket");
        try {
          return ok(request, subscriptions.subscribe(socket, params));
        } catch (error) {
          throw new RpcError(-32602, (error as Error).message);
        }
      }
      if (method === "eth_unsubscribe") {
        if (socket === undefined) throw new RpcError(-32601, "eth_unsubscribe needs a WebSocket");
        return ok(request, subscriptions.unsubscribe(socket, params[0]));
      }
      const answer = (await upstream.forward(request)) as Answer;
      if (method === "evm_mine" || method === "anvil_mine" || method.startsWith("anvil_reorg") || method === "anvil_rollback" || method === "evm_revert")
        void watcher.sync().catch(reportError);
      return answer;
    } catch (error) {
      if (error instanceof RpcError || error instanceof UpstreamError) return { jsonrpc: "2.0", id: request.id ?? null, error: { code: error.code, message: error.message } };
      reportError(error);
      return { jsonrpc: "2.0", id: request.id ?? null, error: { code: -32603, message: (error as Error).message } };
    }
  }

  async function handleBody(body: string, socket: WebSocket | undefined): Promise<{ text: string; httpStatus: number }> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      return { text: JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "parse error" } }), httpStatus: 200 };
    }
    if (Array.isArray(parsed)) {
      const answers = await Promise.all(parsed.map((r) => handle(r as Request, socket)));
      return { text: JSON.stringify(answers.map((a) => a.answer)), httpStatus: 200 };
    }
    const { answer, httpStatus } = await handle(parsed as Request, socket);
    return { text: JSON.stringify(answer), httpStatus: socket === undefined ? httpStatus : 200 };
  }

  const server = createServer((req: IncomingMessage, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString()));
    req.on("end", async () => {
      const isAdmin = body.includes('"devnet_');
      if (!isAdmin && faults.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, faults.latencyMs));
      const readsPending = !isAdmin && isPendingRead(body);
      const limited = readsPending ? pendingRateLimitAnswer(faults) : undefined;
      if (readsPending) pendingReads[limited === undefined ? "answered" : "refused"]++;
      if (limited !== undefined) return void res.writeHead(429, limited.headers).end(limited.body);
      const failure = isAdmin ? undefined : injectedHttpFailure(faults);
      if (failure !== undefined) return void res.writeHead(failure.status, { "content-type": "application/json" }).end(failure.body);
      const { text, httpStatus } = await handleBody(body, undefined);
      res.writeHead(httpStatus, { "content-type": "application/json" }).end(text);
    });
  });
  const wss = new WebSocketServer({ server });
  // The WebSocket server re-emits the HTTP server's errors; listen() below reports them (EADDRINUSE...).
  wss.on("error", () => undefined);
  wss.on("connection", (socket: WebSocket) => {
    sockets.add(socket);
    socket.on("message", async (data: Buffer) => {
      const { text } = await handleBody(data.toString(), socket);
      if (socket.readyState === 1) socket.send(text);
    });
    socket.on("close", () => {
      sockets.delete(socket);
      subscriptions.dropSocket(socket);
    });
    socket.on("error", () => socket.terminate());
  });

  await watcher.sync();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host ?? "127.0.0.1";

  const timers: NodeJS.Timeout[] = [];
  /** Timer work in flight, so close() can wait for it instead of pulling anvil out from under it. */
  const inFlight = new Set<Promise<unknown>>();
  const every = (ms: number, work: () => Promise<unknown>) => {
    if (ms <= 0) return;
    let busy = false;
    timers.push(
      setInterval(() => {
        if (busy) return;
        busy = true;
        const running = work()
          .catch(reportError)
          .finally(() => {
            busy = false;
            inFlight.delete(running);
          });
        inFlight.add(running);
      }, ms),
    );
  };
  every(options.flashblockIntervalMs, () => sequencer.flashblock());
  every(options.blockTimeMs, async () => {
    await sequencer.mine();
    await watcher.sync();
  });
  // Between sequencer steps, so a newHeads never goes out between a mined block and its rebuilt pending block.
  every(HEAD_WATCH_INTERVAL_MS, () => sequencer.between(() => watcher.sync()));

  return {
    httpUrl: `http://${host}:${port}`,
    wsUrl: `ws://${host}:${port}`,
    sequencer,
    close: async () => {
      for (const timer of timers) clearInterval(timer);
      await Promise.allSettled([...inFlight]);
      for (const socket of sockets) socket.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export type FlashblocksFront = Awaited<ReturnType<typeof startFlashblocksFront>>;

class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function ok(request: Request, result: unknown): Answer {
  return { jsonrpc: "2.0", id: request.id ?? null, result };
}

function blockTag(tag: string | undefined, head: number): number {
  if (tag === undefined || tag === "latest" || tag === "pending" || tag === "safe" || tag === "finalized") return head;
  if (tag === "earliest") return 0;
  return Number(tag);
}
