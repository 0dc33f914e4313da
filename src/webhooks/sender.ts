import type { Config, WebhookConfig } from "../config/types.js";
import { backoffDelayMs } from "../ops/withRetry.js";
import type { Logger } from "../ops/logger.js";
import type { Metrics } from "../ops/metrics.js";
import { redactText, redactUrl } from "../ops/redact.js";
import { requestDeadline } from "../ops/requestDeadline.js";
import type { Shutdown } from "../ops/shutdown.js";
import type { Store } from "../store/store.js";
import type { DueDelivery, WebhookOutbox } from "../store/types.js";
import { buildEventBody, eventId } from "./eventBody.js";
import {
  EVENT_ID_HEADER,
  EVENT_TYPE_HEADER,
  SIGNATURE_HEADER,
  signatureHeader,
} from "./signature.js";
import { wantsEvent } from "./subscriptionFilter.js";
import { postWebhook } from "./postWebhook.js";

/**
 * How often the sender looks at the outbox when nothing woke it. It wakes at once when a write of
 * this process commits (the triggers fill the outbox in the same transaction), when a delivery
 * ends and when a retry falls due; this poll finds what other processes wrote (`order void`).
 */
export const WEBHOOK_IDLE_POLL_MS = 250;
/** Outbox rows read per subscription per pass. */
export const WEBHOOK_FANOUT_BATCH = 500;
/** How often the pending/parked gauges are refreshed. */
export const WEBHOOK_BACKLOG_REFRESH_MS = 1_000;
/** How often delivered events past their retention are pruned, and how many per transaction. */
export const WEBHOOK_PRUNE_INTERVAL_MS = 600_000;
export const WEBHOOK_PRUNE_BATCH = 2_000;
/** Longest error text kept per attempt. */
const MAX_ERROR_CHARS = 300;

export type WebhookSenderDeps = {
  config: Pick<Config, "chainId" | "webhooks" | "webhookDelivery">;
  logger: Logger;
  metrics: Metrics;
  shutdown: Shutdown;
  store: Pick<Store, "webhooks" | "onCommit">;
  /** The poll when nothing wakes the sender (WEBHOOK_IDLE_POLL_MS). */
  idlePollMs?: number;
};

/** `cursor`: the subscription's fan-out cursor as last written (only this sender moves it). */
type Subscription = {
  id: number;
  hook: WebhookConfig;
  secret: string;
  fromBlock: number;
  cursor: number;
  busy: boolean;
};

/**
 * Makes the configured webhooks the active subscriptions (a new one starts at `headBlock`), then
 * returns the sender. Drains the webhook outbox on its own loop: per subscription, one request at a time, oldest event
 * first (in order); over all subscriptions at most `webhookDelivery.concurrency` requests. A slow or
 * dead receiver only delays its own subscription: indexing never waits for it (the outbox rows are
 * written by triggers inside the indexer's transactions, and the sender only reads them).
 */
export async function createWebhookSender(
  deps: WebhookSenderDeps,
  secrets: readonly string[],
  headBlock: number,
  post: typeof postWebhook = postWebhook,
) {
  const { config, metrics, shutdown } = deps;
  const logger = deps.logger.child({ component: "webhooks" });
  const outbox: WebhookOutbox = deps.store.webhooks;
  const ids = await outbox.syncSubscriptions(
    config.webhooks.map((h) => h.url),
    headBlock,
    Date.now(),
  );
  const subscriptions: Subscription[] = [];
  for (const [i, hook] of config.webhooks.entries()) {
    const { id, fromBlock } = ids.get(hook.url)!;
    subscriptions.push({
      id,
      hook,
      secret: secrets[i]!,
      fromBlock,
      cursor: await outbox.cursorOf(id),
      busy: false,
    });
  }
  const delivery = config.webhookDelivery;
  const idlePollMs = deps.idlePollMs ?? WEBHOOK_IDLE_POLL_MS;
  let inFlight = 0;
  let countedThrough = await outbox.maxEventId();
  let backlogRefreshedAt = 0;
  let prunedAt = 0;
  const running = new Set<Promise<void>>();
  /** When the earliest retry seen in the last pass falls due. */
  let nextDueAt = Number.POSITIVE_INFINITY;
  const wake = createWake();

  /** Counts new outbox rows by type (the triggers cannot touch a metric). */
  async function countEnqueued(): Promise<void> {
    for (;;) {
      const events = await outbox.eventsAfter(countedThrough, WEBHOOK_FANOUT_BATCH);
      for (const event of events) metrics.webhookEventsEnqueued.inc({ type: event.type });
      if (events.length === 0) return;
      countedThrough = events[events.length - 1]!.id;
      if (events.length < WEBHOOK_FANOUT_BATCH) return;
    }
  }

  /** Opens a delivery for each new event the subscription wants, and moves its cursor past the rest. */
  async function fanOut(subscription: Subscription, now: number): Promise<void> {
    // Nothing newer than the cursor was counted: no query (an idle pass is a round trip less per subscription on Postgres).
    if (subscription.cursor >= countedThrough) return;
    const events = await outbox.eventsAfter(subscription.cursor, WEBHOOK_FANOUT_BATCH);
    if (events.length === 0) return;
    const wanted = events
      .filter((event) => wantsEvent(subscription.hook, subscription.fromBlock, event))
      .map((event) => event.id);
    const through = events[events.length - 1]!.id;
    await outbox.fanOut(subscription.id, wanted, through, now);
    subscription.cursor = through;
  }

  async function deliver(subscription: Subscription, due: DueDelivery): Promise<void> {
    const attempt = due.attempts + 1;
    const body = buildEventBody(
      config.chainId,
      due,
      due.txHash === null ? [] : await outbox.builderCodes(due.txHash),
    );
    const startedAt = Date.now();
    let httpStatus: number | null = null;
    let error: string | null = null;
    const deadline = requestDeadline(delivery.timeoutMs, shutdown.signal);
    try {
      httpStatus = await post({
        url: subscription.hook.url,
        allowPrivateTargets: subscription.hook.allowPrivateTargets,
        headers: {
          "content-type": "application/json",
          "user-agent": "flashindex-webhooks",
          [EVENT_ID_HEADER]: eventId(config.chainId, due.id),
          [EVENT_TYPE_HEADER]: due.type,
          [SIGNATURE_HEADER]: signatureHeader(
            subscription.secret,
            Math.floor(startedAt / 1_000),
            body,
          ),
        },
        body,
        signal: deadline.signal,
      });
      if (httpStatus < 200 || httpStatus > 299) error = `HTTP ${httpStatus}`;
    } catch (failure) {
      // Shutting down: the attempt did not fail, it was interrupted; it is made again after the restart.
      if (shutdown.isKilled()) return;
      const cause =
        failure instanceof Error && failure.cause instanceof Error
          ? `: ${failure.cause.message}`
          : "";
      error = deadline.timedOut()
        ? `timed out after ${delivery.timeoutMs} ms`
        : `${String(failure)}${cause}`;
    } finally {
      deadline.dispose();
    }
    const now = Date.now();
    const record = {
      subscriptionId: subscription.id,
      eventId: due.id,
      attempt,
      at: startedAt,
      durationMs: now - startedAt,
      httpStatus,
      error: error === null ? null : redactText(error).slice(0, MAX_ERROR_CHARS),
    };
    if (error === null) {
      await outbox.recordAttempt(record, { state: "delivered", nextAttemptAt: now });
      metrics.webhookDeliveries.inc({ outcome: "delivered" });
      metrics.webhookDeliveryLatency.observe(Math.max(0, now - due.createdAt) / 1_000);
      return;
    }
    const outOfTime = now - due.createdAt >= delivery.maxHours * 3_600_000;
    if (attempt >= delivery.maxAttempts || outOfTime) {
      await outbox.recordAttempt(record, { state: "parked", nextAttemptAt: now });
      metrics.webhookDeliveries.inc({ outcome: "parked" });
      logger.warn({
        msg: "Parked a webhook event after its last attempt",
        subscription_id: subscription.id,
        url: redactUrl(subscription.hook.url),
        event_id: eventId(config.chainId, due.id),
        type: due.type,
        attempts: attempt,
        error: record.error,
      });
      return;
    }
    const retryInMs = backoffDelayMs(attempt - 1, {
      initialDelayMs: delivery.initialDelayMs,
      maxDelayMs: delivery.maxDelayMs,
    });
    await outbox.recordAttempt(record, { state: "pending", nextAttemptAt: now + retryInMs });
    metrics.webhookDeliveries.inc({ outcome: "failed" });
    logger.info({
      msg: "Failed a webhook delivery, will retry",
      subscription_id: subscription.id,
      event_id: eventId(config.chainId, due.id),
      attempt,
      retry_in_ms: retryInMs,
      error: record.error,
    });
  }

  /** One pass: count, fan out, and start every due delivery the concurrency bound allows. */
  async function pass(): Promise<void> {
    const now = Date.now();
    nextDueAt = Number.POSITIVE_INFINITY;
    await countEnqueued();
    for (const subscription of subscriptions) {
      await fanOut(subscription, now);
      if (subscription.busy || inFlight >= delivery.concurrency) continue;
      const due = await outbox.oldestOpen(subscription.id);
      if (due === undefined) continue;
      if (due.nextAttemptAt > now) {
        nextDueAt = Math.min(nextDueAt, due.nextAttemptAt);
        continue;
      }
      subscription.busy = true;
      inFlight++;
      const work = deliver(subscription, due)
        .catch((failure: unknown) =>
          logger.error({ msg: "Failed to record a webhook attempt", error: String(failure) }),
        )
        .finally(() => {
          subscription.busy = false;
          inFlight--;
          running.delete(work);
          // The subscription's next event, or a request the concurrency bound held back, can go now.
          wake.raise();
        });
      running.add(work);
    }
    if (now - prunedAt >= WEBHOOK_PRUNE_INTERVAL_MS) {
      prunedAt = now;
      // One batch per pass: the main thread is the indexer's too, so no long transaction here.
      const pruned = await outbox.prune(
        now - delivery.retentionDays * 86_400_000,
        WEBHOOK_PRUNE_BATCH,
      );
      // More left: the next batch in a second, not at once.
      if (pruned === WEBHOOK_PRUNE_BATCH) prunedAt = now - WEBHOOK_PRUNE_INTERVAL_MS + 1_000;
      if (pruned > 0) logger.debug({ msg: "Pruned delivered webhook events", events: pruned });
    }
    if (now - backlogRefreshedAt >= WEBHOOK_BACKLOG_REFRESH_MS) {
      backlogRefreshedAt = now;
      const counts = await outbox.backlog();
      metrics.webhookBacklog.set({ state: "pending" }, counts.pending);
      metrics.webhookBacklog.set({ state: "parked" }, counts.parked);
    }
  }

  return {
    /** Runs until shutdown; waits for the requests in flight (they are aborted by the shutdown signal). */
    async run(): Promise<void> {
      if (subscriptions.length === 0) return;
      logger.info({
        msg: "Started webhook sender",
        subscriptions: subscriptions.map((s) => ({
          id: s.id,
          url: redactUrl(s.hook.url),
          from_block: s.fromBlock,
        })),
      });
      const unsubscribe = deps.store.onCommit(wake.raise);
      try {
        while (!shutdown.isKilled()) {
          wake.clear();
          try {
            await pass();
          } catch (failure) {
            // A busy database or a bug in one pass must not end the loop: the outbox is still there next time.
            logger.error({ msg: "Failed a webhook sender pass", error: String(failure) });
          }
          await wake.wait(
            Math.max(0, Math.min(idlePollMs, nextDueAt - Date.now())),
            shutdown.signal,
          );
        }
      } finally {
        unsubscribe();
      }
      await Promise.allSettled([...running]);
    },
  };
}

/** A flag that ends a wait early: raised while a pass runs, it makes the next wait return at once. */
function createWake() {
  let raised = false;
  let release: (() => void) | undefined;
  return {
    raise: (): void => {
      raised = true;
      release?.();
    },
    clear: (): void => {
      raised = false;
    },
    /** Resolves when raised, after `ms`, or on shutdown. */
    async wait(ms: number, signal: AbortSignal): Promise<void> {
      if (raised || ms === 0 || signal.aborted) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          release = undefined;
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener("abort", done, { once: true });
        release = done;
      });
    },
  };
}
