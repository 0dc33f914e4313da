import type { Address, Hex } from "viem";
import type { BlockRange } from "../blockRanges.js";
import type { LogRow } from "../rows/logRow.js";
import type { ProcessMode } from "../ops/threadSettings.js";
import type {
  BlockApplied,
  InsertCounts,
  OwedBlock,
  PreconfirmedStored,
  RegistrationRow,
  SaveRegistrationResult,
  StatusSnapshot,
  StatusTokens,
  TokenCounts,
  WebhookOutbox,
  WindowWrite,
} from "./types.js";
import type { AttributedTransaction } from "../decode/attributeTransaction.js";
import type { PackedAttribution } from "../rows/packedAttribution.js";
import type { CancelStore } from "./cancelStore.js";
import type { CaptureStore } from "./captureStore.js";
import type { NonceBook } from "./nonceBook.js";
import type { SettlementStore } from "./settlementStore.js";
import type { EventStatus, NewOrder, Order, OrderState, OrderTransition } from "./orderStates.js";

/** A block as the store keys it. */
export type BlockRef = { number: number; hash: Hex };

/**
 * A change of the canonical chain written in ONE transaction: orphaned blocks flagged removed, then
 * each block's rows applied (pre-confirmed twins promoted, the rest inserted, unlanded
 * pre-confirmations dropped unless still pending), then the blocks recorded as synced.
 */
export type ChainChange = {
  /** What the change is, for `flashindex_db_write_duration_seconds{kind}`. */
  kind: "head_block" | "reorg" | "restart_settle";
  /** Blocks reorged out: their live rows become `removed`. */
  orphaned: readonly BlockRef[];
  blocks: ReadonlyArray<{
    number: number;
    rows: readonly LogRow[];
    /** When given, live rows at this height on any other block hash are flagged removed first. */
    canonicalHash?: Hex | undefined;
  }>;
  /** Transactions the pending view still holds for a later block: their pre-confirmations are not dropped. */
  stillPending?: ReadonlySet<Hex> | undefined;
  /** Ranges to record as indexed, per token key. */
  synced: ReadonlyArray<{ token: Hex; range: BlockRange }>;
  /**
   * The chain now ends at this block (a devnet restored from a chain saved behind the database, or
   * a reorg onto a branch shorter than the one it orphans):
   * every token's synced ranges are cut there first, so the heights above are indexed again as the
   * chain makes them. The rows above are flagged removed through `orphaned`.
   */
  endsAt?: number | undefined;
};

export type ChainChangeApplied = { removed: number; blocks: BlockApplied[] };

/** What `authorization_states` says about one nonce; addresses and hashes lower-case hex. */
export type IndexedAuthorization = {
  state: "captured" | "canceled";
  status: EventStatus;
  blockNumber: number;
  txHash: Hex;
  capturedFrom: Address | null;
  capturedTo: Address | null;
  /** Decimal string of token base units. */
  capturedValue: string | null;
};

/** Commits backfill windows in order, each in one transaction with its synced range. */
export type WindowWriter = {
  commit: (window: WindowWrite, now: number) => Promise<InsertCounts>;
  /** Waits for the commits sent so far, then releases what the writer holds. Idempotent. */
  close: () => Promise<void>;
};

/**
 * A bulk backfill's attribution, staged window by window and moved once at its end (SQLite:
 * schemaV10.ts). Postgres stores a window's attribution with it, staged or not (postgresStore.ts).
 */
export type StagedAttribution = {
  pending: () => Promise<boolean>;
  /** Moves it into the attribution tables; returns the transactions new to them. `mode`: as ReaderIndexes.build's. */
  move: (options?: { mode?: ProcessMode }) => Promise<number>;
};

/**
 * Blocks whose logs a rate-limited backfill stored without their transactions' attribution (schema
 * 14: `attribution_owed`), and their payment (attribution/trailingAttribution.ts).
 */
export type OwedAttribution = {
  /** How many blocks are owed. */
  count: () => Promise<number>;
  /** The `limit` lowest owed blocks, each with the transactions of its live logs (none: reorged out). */
  next: (limit: number) => Promise<OwedBlock[]>;
  /**
   * Stores `attribution` (of `blocks`' transactions) and deletes `blocks` from what is owed, in one
   * transaction: a crash leaves them owed, and paying them again stores nothing twice. Returns the
   * transactions new to `transactions`.
   */
  pay: (
    blocks: ReadonlyArray<Pick<OwedBlock, "number" | "hash">>,
    attribution: PackedAttribution,
  ) => Promise<number>;
};

/** Reader indexes a bulk backfill drops and builds once at its end. */
export type ReaderIndexes = {
  missing: () => Promise<string[]>;
  drop: () => Promise<void>;
  /**
   * Builds the missing ones; returns their names. `mode` "daemon" (pre-confirmations keep
   * arriving): on Postgres, build without holding writes back (CONCURRENTLY, slower); on SQLite,
   * build on a thread of its own (sqlite/threads/maintenance.ts) so the event loop keeps serving,
   * the writes waiting for each index. `signal`: once aborted (a shutdown), no further
   * index is started; the one under way finishes, and the rest are left missing for the next build.
   */
  build: (options?: { mode?: ProcessMode; signal?: AbortSignal }) => Promise<string[]>;
};

/**
 * Everything flashindex reads from and writes to its database, whichever the backend. Sync,
 * attribution, authorization and the CLI go through this seam; all SQL lives behind it (src/store/).
 * Every method that writes runs in one transaction of its own (records its duration under a
 * `WriteKind`), so a reader never sees half a change.
 */
export type Store = {
  readonly backend: "sqlite" | "postgres";
  /** Where the data lives, credentials redacted: a file path or a postgres URL with its schema. */
  readonly location: string;

  // Backfill
  syncedRanges: (token: Hex) => Promise<BlockRange[]>;
  /** The last block indexed without a gap from `startBlock` (startBlock - 1 when none is). */
  checkpoint: (token: Hex, startBlock: number) => Promise<number>;
  /** Rows in `logs` (an estimate is fine): decides whether a backfill is a bulk load. */
  storedLogCount: () => Promise<number>;
  /** Bytes on disk: the SQLite file and its WAL; on Postgres the schema's tables with their indexes and TOAST. */
  sizeBytes: () => Promise<number>;
  /**
   * A writer for backfill windows; `bulk` hints that it is a long run (SQLite: commit on a thread of
   * its own); `mode` "daemon", that it gives way to live work for the CPU (SQLite: that thread's
   * nice value).
   */
  openWindowWriter: (options: { bulk: boolean; mode?: ProcessMode }) => WindowWriter;
  readerIndexes: ReaderIndexes;
  stagedAttribution: StagedAttribution;

  // Realtime and pending
  applyChainChange: (change: ChainChange, now: number) => Promise<ChainChangeApplied>;
  insertPreconfirmed: (rows: readonly LogRow[], now: number) => Promise<PreconfirmedStored>;
  /** Transactions with pre-confirmed rows at or below `blockNumber`. */
  preconfirmedThrough: (blockNumber: number) => Promise<Set<Hex>>;
  /** Confirmed rows at or below `blockNumber` become finalized; returns how many. */
  finalizeThrough: (blockNumber: number, now: number) => Promise<number>;
  /**
   * Honours one `removed: true` log of a `logs` subscription; returns rows flagged. When it flags
   * any, the synced ranges end below its block: the reorg's new branch, or a restart, indexes it again.
   */
  removeLog: (
    log: { blockNumber: number; blockHash: Hex; logIndex: number },
    now: number,
  ) => Promise<number>;
  /** Blocks holding confirmed (not yet final) rows. */
  unsettledBlocks: () => Promise<BlockRef[]>;
  /** Blocks above `blockNumber` holding live (confirmed or finalized) rows, in order; reads the whole table (a devnet restart's check). */
  liveBlocksAbove: (blockNumber: number) => Promise<BlockRef[]>;

  // Attribution
  /** Of these transactions, those whose attribution is not stored yet. */
  unattributed: (txHashes: readonly Hex[]) => Promise<Hex[]>;
  insertAttribution: (
    transactions: readonly AttributedTransaction[],
    now: number,
  ) => Promise<number>;
  /** What rate-limited backfills left to attribute (schema 14). */
  readonly owedAttribution: OwedAttribution;
  saveRegistration: (wallet: Address, code: string, now: number) => Promise<SaveRegistrationResult>;
  /** The builder code `flashindex register` stored for `wallet` (any case), if any. */
  registration: (wallet: Address) => Promise<RegistrationRow | undefined>;

  // Orders
  addOrder: (order: NewOrder, now: number) => Promise<Order>;
  voidOrder: (id: number, now: number) => Promise<Order>;
  expireOrders: (now: number) => Promise<number[]>;
  getOrder: (id: number) => Promise<Order | undefined>;
  listOrders: (filter?: { state?: OrderState | undefined }) => Promise<Order[]>;
  listTransitions: (orderId: number) => Promise<OrderTransition[]>;
  voidedThenCapturedSince: (afterId: number) => Promise<OrderTransition[]>;
  /** The capture relay's intents and x402 payment ids (schema 12). */
  readonly captures: CaptureStore;
  /** `flashindex cancel`'s order transitions: canceling before anything is sent (schema 15). */
  readonly cancels: CancelStore;
  /** Every relayer nonce handed out, shared by all processes on this database (schema 15). */
  readonly nonces: NonceBook;
  /** The x402 facilitator's settle claims and answers (schema 16). */
  readonly settlements: SettlementStore;
  readMeta: (key: string) => Promise<string | undefined>;
  writeMeta: (key: string, value: string) => Promise<void>;

  // Readers
  /** The indexed state of one nonce; the arguments are lower-cased here, as stored. */
  authorizationState: (
    token: Address,
    authorizer: Address,
    nonce: Hex,
  ) => Promise<IndexedAuthorization | undefined>;
  countRowsByStatus: (token: Hex) => Promise<TokenCounts[]>;
  /** What the status page shows from the database (its numbers from metrics are added by src/statusPage/statusPage.ts). */
  statusSnapshot: (tokens: StatusTokens, now: number) => Promise<StatusSnapshot>;

  // Webhooks: the outbox the triggers fill in the same transactions as the rows above.
  readonly webhooks: WebhookOutbox;
  /** Calls `listener` after each write transaction of this process commits; returns the unsubscribe. */
  onCommit: (listener: () => void) => () => void;

  /** Whether close() was called. */
  isClosed: () => boolean;
  /** Releases connections (and the writer lock it holds, if any). Idempotent. */
  close: () => Promise<void>;
};
