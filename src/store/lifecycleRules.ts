import type { Hex } from "viem";
import type { BlockRange } from "../blockRanges.js";
import type { LogRow, LogStatus } from "../rows/logRow.js";
import { pickTwin, type TwinCandidate } from "../decode/preconfirmedTwins.js";
import type { BlockRef, ChainChange, ChainChangeApplied } from "./store.js";
import type { BlockApplied, InsertCounts, PreconfirmedStored } from "./types.js";

/*
 * The lifecycle rules of stored logs, written once for both backends:
 *   preconfirmed -> confirmed (twin found in a canonical block) -> finalized;
 *   preconfirmed -> dropped (its block became canonical without it and the pending view no longer
 *   holds it; the node never retracts);
 *   preconfirmed | dropped -> preconfirmed at a later block (announced again: the pending block was rebuilt);
 *   confirmed -> removed (its block was reorged out). Nothing is ever deleted except a
 *   pre-confirmed twin merged into the confirmed row that already stood for the same log.
 *
 * A plan is a generator: it yields one LifecycleStep at a time (a lookup or a write) and is resumed
 * with the step's answer, so what is read decides what is written next, in the order the rules say.
 * The plans touch no database: a backend runs them with its statements (runLifecyclePlan, or
 * runLifecyclePlanAsync for a client whose queries return promises), inside ONE transaction of its
 * own, so a reader never sees half a transition.
 */

/** A stored row with a log's content (decode/preconfirmedTwins.ts): a twin candidate, with its status and block. */
export type StoredTwin = TwinCandidate & { status: LogStatus; blockNumber: number };

/** A pre-confirmed row whose block is at or below a canonical block's number. */
export type UnlandedRow = { id: number; txHash: Hex };

/** Each step a plan may ask for, with what the backend answers. */
export type LifecycleSteps = {
  /** Rows with `row`'s content that can still change (pre-confirmed, dropped, confirmed) and, when `finalized`, the finalized ones too. */
  sameContent: { step: { row: LogRow; finalized: boolean }; answer: StoredTwin[] };
  /** Moves an announced row (pre-confirmed or dropped) to `row`'s later block, pre-confirmed again; keeps preconfirmed_at. */
  move: { step: { twin: StoredTwin; row: LogRow }; answer: void };
  /** The id of the confirmed row already stored for `row` (same block, log index, transaction and block hash), if any. */
  findConfirmed: { step: { row: LogRow }; answer: number | undefined };
  /** Folds the twin into the confirmed row `into` (keeping the earlier preconfirmed_at) and deletes the twin with its decoded row. */
  fold: { step: { twin: StoredTwin; into: number }; answer: void };
  /** The twin becomes `row`: its block, position and status; confirmed_at (and finalized_at when finalized) become `now`. */
  promote: { step: { twin: StoredTwin; row: LogRow; now: number }; answer: void };
  /** Inserts new rows (a log already stored is counted a duplicate). */
  insert: { step: { rows: readonly LogRow[]; now: number }; answer: InsertCounts };
  /** Pre-confirmed rows at or below `blockNumber`. */
  unlanded: { step: { blockNumber: number }; answer: UnlandedRow[] };
  /** Flags one pre-confirmed row dropped; answers the rows changed. */
  drop: { step: { id: number; now: number }; answer: number };
  /** Flags removed every confirmed or finalized row of an orphaned block; answers how many. */
  removeBlock: { step: { block: BlockRef; now: number }; answer: number };
  /** Flags removed every confirmed or finalized row at `blockNumber` on another block hash; answers how many. */
  removeOtherBranches: {
    step: { blockNumber: number; canonicalHash: Hex; now: number };
    answer: number;
  };
  /** Records a block range as indexed for a token. */
  addSynced: { step: { token: Hex; range: BlockRange }; answer: void };
};

export type StepKind = keyof LifecycleSteps;
/** One step a plan yields. */
export type LifecycleStep = { [K in StepKind]: { kind: K } & LifecycleSteps[K]["step"] }[StepKind];
/** A plan: yields steps, is resumed with their answers, returns its result. */
export type LifecyclePlan<T> = Generator<LifecycleStep, T, unknown>;

/** A backend's statements, one per step kind, answering at once (SQLite) or with a promise (Postgres). */
export type LifecycleStatements = {
  [K in StepKind]: (step: LifecycleSteps[K]["step"]) => LifecycleSteps[K]["answer"];
};
export type AsyncLifecycleStatements = {
  [K in StepKind]: (step: LifecycleSteps[K]["step"]) => Promise<LifecycleSteps[K]["answer"]>;
};

/** Yields one step and returns its answer, typed by its kind. */
function* ask<K extends StepKind>(
  kind: K,
  step: LifecycleSteps[K]["step"],
): Generator<LifecycleStep, LifecycleSteps[K]["answer"], unknown> {
  return (yield { kind, ...step } as LifecycleStep) as LifecycleSteps[K]["answer"];
}

/**
 * Stores pre-confirmed rows. A log already confirmed, or already pre-confirmed for this block,
 * changes nothing; one announced for a later block than stored (or stored as dropped) moves its row
 * there, keeping `preconfirmed_at`; one announced for an earlier block than stored is a stale re-read
 * of the pending view and is ignored. The rest are inserted.
 */
export function* preconfirmedPlan(
  rows: readonly LogRow[],
  now: number,
): LifecyclePlan<PreconfirmedStored> {
  const fresh: LogRow[] = [];
  let moved = 0;
  let revived = 0;
  for (const row of rows) {
    const stored = yield* ask("sameContent", { row, finalized: true });
    if (
      stored.some(
        (s) =>
          s.status === "confirmed" || s.status === "finalized" || s.blockNumber > row.blockNumber,
      )
    )
      continue;
    const twin = pickTwin(
      row,
      stored.filter((s) => s.blockNumber < row.blockNumber),
    );
    if (twin === undefined) {
      fresh.push(row);
      continue;
    }
    yield* ask("move", { twin, row });
    moved++;
    if (twin.status === "dropped") revived++;
  }
  return { ...(yield* ask("insert", { rows: fresh, now })), moved, revived };
}

/**
 * Applies one canonical block's logs: promotes pre-confirmed (or dropped) twins, folds a twin into a
 * confirmed row already stored for its log (a backfill got there first), inserts the rest, and marks
 * as dropped every pre-confirmation of this or an earlier block that did not land, unless its
 * transaction is in `stillPending` (the pending view holds it for a later block).
 */
export function* canonicalBlockPlan(
  blockNumber: number,
  rows: readonly LogRow[],
  now: number,
  stillPending: ReadonlySet<Hex> = new Set(),
): LifecyclePlan<BlockApplied> {
  const result: BlockApplied = {
    inserted: 0,
    promoted: 0,
    dropped: 0,
    duplicates: 0,
    leadTimesMs: [],
    byEvent: [],
  };
  const fresh: LogRow[] = [];
  for (const row of rows) {
    const stored = yield* ask("sameContent", { row, finalized: false });
    const twin = pickTwin(
      row,
      stored.filter((s) => s.status === "preconfirmed" || s.status === "dropped"),
    );
    if (twin === undefined) {
      fresh.push(row);
      continue;
    }
    const confirmed = yield* ask("findConfirmed", { row });
    if (confirmed !== undefined) {
      yield* ask("fold", { twin, into: confirmed });
      result.duplicates++;
      continue;
    }
    yield* ask("promote", { twin, row, now });
    result.promoted++;
    if (twin.preconfirmedAt !== null) result.leadTimesMs.push(now - twin.preconfirmedAt);
  }
  const counts = yield* ask("insert", { rows: fresh, now });
  result.inserted = counts.inserted;
  result.byEvent = counts.byEvent;
  result.duplicates += counts.duplicates;
  for (const row of yield* ask("unlanded", { blockNumber })) {
    if (!stillPending.has(row.txHash)) result.dropped += yield* ask("drop", { id: row.id, now });
  }
  return result;
}

/**
 * A change of the canonical chain (store.ts ChainChange): orphaned blocks flagged removed, then per
 * block the other branches' rows at its height flagged removed and its rows applied, then the
 * ranges recorded as synced.
 */
export function* chainChangePlan(
  change: ChainChange,
  now: number,
): LifecyclePlan<ChainChangeApplied> {
  let removed = 0;
  const blocks: BlockApplied[] = [];
  for (const block of change.orphaned) removed += yield* ask("removeBlock", { block, now });
  for (const block of change.blocks) {
    if (block.canonicalHash !== undefined)
      removed += yield* ask("removeOtherBranches", {
        blockNumber: block.number,
        canonicalHash: block.canonicalHash,
        now,
      });
    blocks.push(yield* canonicalBlockPlan(block.number, block.rows, now, change.stillPending));
  }
  for (const { token, range } of change.synced) yield* ask("addSynced", { token, range });
  return { removed, blocks };
}

/** Runs a plan with synchronous statements (SQLite); call inside a transaction. */
export function runLifecyclePlan<T>(plan: LifecyclePlan<T>, statements: LifecycleStatements): T {
  for (let next = plan.next(); ;) {
    if (next.done === true) return next.value;
    next = plan.next(answerWith(statements, next.value));
  }
}

/** Runs a plan with statements that answer promises (Postgres), one step after the other; call inside a transaction. */
export async function runLifecyclePlanAsync<T>(
  plan: LifecyclePlan<T>,
  statements: AsyncLifecycleStatements,
): Promise<T> {
  for (let next = plan.next(); ;) {
    if (next.done === true) return next.value;
    next = plan.next(await answerWith(statements, next.value));
  }
}

/** The statement for a step's kind, called with the step. */
function answerWith(
  statements: LifecycleStatements | AsyncLifecycleStatements,
  step: LifecycleStep,
): unknown {
  const statement = statements[step.kind] as (step: LifecycleStep) => unknown;
  return statement(step);
}
