import WebSocket from "ws";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import { redactText, redactUrl } from "../ops/redact.js";
import type { Shutdown } from "../ops/shutdown.js";
import { backoffDelayMs } from "../ops/withRetry.js";

export type SubscriptionOptions = {
  url: string;
  /** `eth_subscribe` params, e.g. `["newHeads"]` or `["pendingLogs", { address, topics }]`. */
  params: readonly unknown[];
  /**
   * Params to try, in order, when the node refuses `params` (a subscription kind it does not offer):
   * the first one a node accepts is kept for it, across reconnects.
   */
  alternatives?: ReadonlyArray<readonly unknown[]>;
  /** Low-cardinality name for logs and metrics. */
  name: string;
  /** Each notification's `result`, unparsed: the caller validates it. `choice` is 0 for `params`, i for `alternatives[i - 1]`. */
  onNotification: (result: unknown, receivedAt: number, choice: number) => void;
  /** Called after every (re)subscription, so the caller can fill what it missed while away. */
  onSubscribed?: (reconnect: boolean) => void;
  initialDelayMs: number;
  maxDelayMs: number;
  /** Liveness: a ping after this much silence (default WS_PING_AFTER_MS). */
  pingAfterMs?: number;
  /** ...and the socket is recycled when nothing at all arrives for this long after it (default WS_PONG_TIMEOUT_MS). */
  pongTimeoutMs?: number;
};

/** Longest a subscribe request may wait for its answer before the socket is recycled. */
const SUBSCRIBE_TIMEOUT_MS = 10_000;
/**
 * A connection silent this long gets a WebSocket ping. Note: a provider's load balancer or a NAT
 * can drop an idle connection without closing it; the socket then looks open and no notification
 * ever arrives again. Only a ping that gets no answer tells.
 */
export const WS_PING_AFTER_MS = 15_000;
/** After a ping, this long without any frame (pong, message) and the socket is recycled. */
export const WS_PONG_TIMEOUT_MS = 10_000;

/**
 * A JSON-RPC `eth_subscribe` over WebSocket that reconnects forever with exponential backoff and
 * full jitter until shutdown. Malformed messages are counted and skipped, never fatal.
 */
export function createWsSubscription(
  deps: { logger: Logger; metrics: Metrics; shutdown: Shutdown },
  options: SubscriptionOptions,
) {
  const logger = deps.logger.child({ component: "ws", subscription: options.name });
  const label = redactUrl(options.url);
  let socket: WebSocket | undefined;
  let attempt = 0;
  let connectedOnce = false;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const choices = [options.params, ...(options.alternatives ?? [])];
  /** Which of `choices` this node is asked for. */
  let choice = 0;

  function scheduleReconnect(): void {
    if (closed || deps.shutdown.isKilled()) return;
    const delay = backoffDelayMs(attempt, options);
    attempt++;
    deps.metrics.wsReconnects.inc({ subscription: options.name });
    logger.warn({
      msg: "Reconnecting WebSocket",
      endpoint: label,
      attempt,
      delay_ms: Math.round(delay),
    });
    timer = setTimeout(connect, delay);
  }

  function connect(): void {
    if (closed || deps.shutdown.isKilled()) return;
    const ws = new WebSocket(options.url, {
      handshakeTimeout: SUBSCRIBE_TIMEOUT_MS,
      maxPayload: 64 * 1024 * 1024,
    });
    socket = ws;
    let subscriptionId: string | undefined;
    const subscribeTimer = setTimeout(() => ws.terminate(), SUBSCRIBE_TIMEOUT_MS);
    const liveness = watchLiveness(
      ws,
      options.pingAfterMs ?? WS_PING_AFTER_MS,
      options.pongTimeoutMs ?? WS_PONG_TIMEOUT_MS,
      () => {
        logger.warn({ msg: "Recycling a silent WebSocket: no answer to a ping", endpoint: label });
        ws.terminate();
      },
    );
    ws.on("open", () => {
      ws.send(
        JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_subscribe", params: choices[choice] }),
      );
    });
    ws.on("message", (data: WebSocket.RawData) => {
      const receivedAt = performance.now();
      liveness.heard();
      let parsed: unknown;
      try {
        // ws hands each message over as one Buffer: binaryType is left at its default, "nodebuffer".
        parsed = JSON.parse((data as Buffer).toString());
      } catch {
        deps.metrics.wsMessagesRejected.inc({ subscription: options.name });
        logger.warn({ msg: "Rejected WebSocket message that is not JSON", endpoint: label });
        return;
      }
      // JSON, but not a JSON-RPC message (null, a number, an array): reading its fields would throw.
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        deps.metrics.wsMessagesRejected.inc({ subscription: options.name });
        logger.warn({
          msg: "Rejected WebSocket message that is not a JSON object",
          endpoint: label,
        });
        return;
      }
      const message = parsed as {
        id?: unknown;
        result?: unknown;
        error?: { message?: unknown };
        method?: unknown;
        params?: { subscription?: unknown; result?: unknown };
      };
      if (message.id === 1 && subscriptionId === undefined) {
        clearTimeout(subscribeTimer);
        if (typeof message.result !== "string") {
          const reason = message.error?.message;
          const error = redactText(typeof reason === "string" ? reason : JSON.stringify(message));
          if (choice + 1 < choices.length) {
            choice++;
            logger.warn({
              msg: "Node refused the subscription, trying the next kind",
              endpoint: label,
              error,
              params: JSON.stringify(choices[choice]),
            });
          } else {
            logger.error({ msg: "Failed to subscribe", endpoint: label, error });
            choice = 0;
          }
          ws.terminate();
          return;
        }
        subscriptionId = message.result;
        const reconnect = connectedOnce;
        connectedOnce = true;
        attempt = 0;
        logger.info({
          msg: "Subscribed",
          endpoint: label,
          reconnect,
          ...(choice > 0 ? { params: JSON.stringify(choices[choice]) } : {}),
        });
        options.onSubscribed?.(reconnect);
        return;
      }
      if (
        message.method === "eth_subscription" &&
        message.params?.subscription === subscriptionId &&
        subscriptionId !== undefined
      ) {
        options.onNotification(message.params?.result, receivedAt, choice);
        return;
      }
      deps.metrics.wsMessagesRejected.inc({ subscription: options.name });
    });
    ws.on("error", (error: Error) => {
      logger.warn({ msg: "WebSocket failed", endpoint: label, error: redactText(error.message) });
    });
    ws.on("close", () => {
      clearTimeout(subscribeTimer);
      liveness.stop();
      if (socket === ws) socket = undefined;
      scheduleReconnect();
    });
  }

  connect();
  const close = () => {
    closed = true;
    clearTimeout(timer);
    socket?.terminate();
  };
  deps.shutdown.add(close);
  /** Moves to the next alternative (the node accepted this one but sends nothing usable for it), and reconnects. */
  const next = () => {
    if (choice + 1 >= choices.length) return false;
    choice++;
    logger.warn({
      msg: "Moved to the next subscription kind",
      endpoint: label,
      params: JSON.stringify(choices[choice]),
    });
    socket?.terminate();
    return true;
  };
  return { close, next };
}

/**
 * Pings `ws` after `pingAfterMs` without a frame; calls `onSilent` when `pongTimeoutMs` more pass
 * without one. One timer per socket, not one per message: a frame only stamps the time.
 */
function watchLiveness(
  ws: WebSocket,
  pingAfterMs: number,
  pongTimeoutMs: number,
  onSilent: () => void,
) {
  let lastHeard = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const heard = () => {
    lastHeard = performance.now();
  };
  const check = () => {
    const silentFor = performance.now() - lastHeard;
    if (silentFor < pingAfterMs) {
      timer = setTimeout(check, pingAfterMs - silentFor);
      return;
    }
    const pingedAt = performance.now();
    ws.ping();
    timer = setTimeout(() => (lastHeard >= pingedAt ? check() : onSilent()), pongTimeoutMs);
  };
  ws.on("open", () => {
    heard();
    timer = setTimeout(check, pingAfterMs);
  });
  ws.on("pong", heard);
  return { heard, stop: () => clearTimeout(timer) };
}
