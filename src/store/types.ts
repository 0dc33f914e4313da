import type { Address, Hex } from "viem";
import type { LogStatus } from "../rows/logRow.js";
import type { PackedAttribution } from "../rows/packedAttribution.js";
import type { PackedRows } from "../rows/packedRows.js";
import type { EventName } from "../rows/paymentEvents.js";
import type { WriterHolder } from "../rows/writerHolder.js";

/*
 * The values that cross the store seam (store.ts), whichever the backend: what a write stored, what
 * a reader gets back, the webhook outbox and the one-writer lock. Backends import these; nothing
 * here depends on a backend.
 */

// Logs written

/** Newly stored logs of one event at one status. */
export type EventCount = { event: EventName; status: LogStatus; logs: number };

/** What a write of logs stored: new rows, rows already there, and the new ones by event and status. */
export type InsertCounts = { inserted: number; duplicates: number; byEvent: EventCount[] };

/** What storing a batch of pre-confirmed logs did. */
export type PreconfirmedStored = InsertCounts & {
  /** Stored pre-confirmations announced again for a later block, moved there (the pending block was rebuilt: base/base flashblocks `processor.rs`). */
  moved: number;
  /** Of those, how many had been marked dropped: they were not dropped after all. */
  revived: number;
};

/** What applying one canonical block did to the stored rows. */
export type BlockApplied = {
  inserted: number;
  promoted: number;
  dropped: number;
  duplicates: number;
  /** For each promoted log, how long (ms) it was visible pre-confirmed before this block. */
  leadTimesMs: number[];
  /** Newly inserted rows by event and status. */
  byEvent: InsertCounts["byEvent"];
};

// Backfill windows and attribution

/**
 * One fetched backfill window as the store takes it: its rows (rows/packedRows.ts), its
 * transactions' attribution (packed: attributionWriter.ts), and the range it completes; as plain
 * values, it crosses to the writer thread. `stageAttribution` (a bulk backfill): SQLite appends the
 * attribution to its staging tables, moved at the backfill's end (schemaV10.ts).
 */
export type WindowWrite = {
  from: number;
  to: number;
  tokens: readonly Hex[];
  rows: PackedRows;
  attribution: PackedAttribution;
  stageAttribution?: boolean | undefined;
  /**
   * Blocks (number, hash) whose transactions' attribution was not read with the window (a
   * rate-limited provider: sync/historical/syncHistorical.ts): recorded as owed in the window's transaction
   * (schema 14), paid later by attribution/trailingAttribution.ts.
   */
  owed?: ReadonlyArray<readonly [number, Hex]> | undefined;
};

/** An owed block (schema 14) with the transactions of its live logs: none when the block was reorged out (its logs flagged). */
export type OwedBlock = { number: number; hash: Hex; txHashes: Hex[] };

/** One row of `agent_registrations`; the wallet is lower case, times are unix milliseconds. */
export type RegistrationRow = {
  walletAddress: Address;
  builderCode: string;
  registeredAt: number;
  lastConfirmedAt: number;
};

/**
 * What saving did: `new` wallet, `confirmed` (same code again), or `changed` (the service now
 * answers another code for a known wallet; `previousCode` is what we held). Callers log `changed` loudly.
 */
export type SaveRegistrationResult =
  | { status: "new" | "confirmed"; row: RegistrationRow }
  | { status: "changed"; previousCode: string; row: RegistrationRow };

// The database's identity and its one writer

/** What a database is pinned to besides its chain id: the chain's genesis block hash (lower-case hex). */
export type ChainIdentity = { genesisHash: Hex };

export type WriterLock = {
  readonly holder: WriterHolder;
  /** Gives the lock back; idempotent. The OS releases it anyway when the process dies. */
  release: () => void;
};

// Webhook outbox

/** An outbox row (schema v7): what happened, and the JSON snapshot written with it. */
export type WebhookEventRow = {
  id: number;
  type: string;
  blockNumber: number | null;
  token: string;
  payer: string;
  payee: string | null;
  txHash: string | null;
  payload: string;
  createdAt: number;
};

/** The oldest open delivery of a subscription, with its event. */
export type DueDelivery = WebhookEventRow & { attempts: number; nextAttemptAt: number };

export type DeliveryListing = {
  subscriptionId: number;
  url: string;
  eventId: number;
  type: string;
  state: "pending" | "parked" | "delivered";
  attempts: number;
  lastError: string | null;
  nextAttemptAt: number;
  createdAt: number;
};

export type AttemptRecord = {
  subscriptionId: number;
  eventId: number;
  attempt: number;
  at: number;
  durationMs: number;
  httpStatus: number | null;
  error: string | null;
};

/**
 * The webhook outbox behind the store seam (both backends): what the sender, `flashindex webhooks`
 * and the status page need. Each method that writes is its own transaction.
 */
export type WebhookOutbox = {
  /**
   * Makes `urls` the active subscriptions. A new one starts at `headBlock` and after every event
   * already in the outbox; one no longer configured stays (with its history) but gets no new events.
   * Returns each URL's subscription id and start block.
   */
  syncSubscriptions: (
    urls: readonly string[],
    headBlock: number,
    now: number,
  ) => Promise<Map<string, { id: number; fromBlock: number }>>;
  maxEventId: () => Promise<number>;
  /** Events after `afterId`, oldest first, at most `limit`. */
  eventsAfter: (afterId: number, limit: number) => Promise<WebhookEventRow[]>;
  cursorOf: (subscriptionId: number) => Promise<number>;
  /** Opens a delivery for each matching event and moves the subscription's cursor to `throughId`: one transaction. */
  fanOut: (
    subscriptionId: number,
    matchingIds: readonly number[],
    throughId: number,
    now: number,
  ) => Promise<void>;
  /** The subscription's oldest open delivery (in-order delivery: nothing later goes before it). */
  oldestOpen: (subscriptionId: number) => Promise<DueDelivery | undefined>;
  /** Records an attempt and its outcome: delivered, pending again at `nextAttemptAt`, or parked. */
  recordAttempt: (
    attempt: AttemptRecord,
    outcome: { state: "delivered" | "pending" | "parked"; nextAttemptAt: number },
  ) => Promise<void>;
  /** ERC-8021 codes of a transaction, as known now (attribution runs after the commit). */
  builderCodes: (
    txHash: string,
  ) => Promise<Array<{ code: string; role: string; registry: string }>>;
  /** Deliveries in the given states, newest event first. */
  list: (
    states: ReadonlyArray<DeliveryListing["state"]>,
    limit: number,
  ) => Promise<DeliveryListing[]>;
  /** Parked deliveries of one event (or all) become pending with a fresh set of attempts; returns how many. */
  requeue: (eventId: number | "all", now: number) => Promise<number>;
  /** Deliveries waiting and parked, and the active subscriptions. */
  backlog: () => Promise<WebhookBacklog>;
  /**
   * Deletes up to `limit` events older than `before` (unix ms) with their deliveries and attempts,
   * once every active subscription is past them and none is pending or parked. Returns how many.
   */
  prune: (before: number, limit: number) => Promise<number>;
  lastAttempts: (limit: number) => Promise<Array<AttemptRecord & { type: string }>>;
};

export type WebhookBacklog = { pending: number; parked: number; subscriptions: number };

// Readers

export type TokenCounts = { status: string; transfers: number; authorizations: number };

/** The tokens the status page reports on, as configured. */
export type StatusTokens = ReadonlyArray<{
  address: string;
  label: string | undefined;
  startBlock: number;
}>;

export type StatusSnapshot = {
  tokens: Array<{
    token: string;
    label: string | null;
    startBlock: number;
    checkpoint: number | null;
  }>;
  newestBlock: number | null;
  /** Milliseconds each log was visible pre-confirmed before its block, for logs confirmed in the last hour. */
  leadTimesMs: number[];
  payments: Array<{
    token: string;
    from: string;
    to: string;
    value: string;
    status: string;
    blockNumber: number;
    txHash: string;
    codes: string | null;
  }>;
  removals: Array<{ status: string; blockNumber: number; txHash: string; removedAt: number }>;
  orders: Array<{ state: string; n: number }>;
  voidedThenCaptured: number;
  /** Blocks whose attribution trails their stored logs (schema 14), not yet read. */
  attributionOwedBlocks: number;
  webhooks: WebhookBacklog;
  webhookAttempts: Array<AttemptRecord & { type: string }>;
};
