import type { Hex } from "viem";
import { describe, expect, test } from "vitest";
import type { RpcLog } from "../../src/rows/rpcLog.js";
import { type LogRow, type LogStatus } from "../../src/rows/logRow.js";
import { toLogRows } from "../../src/decode/toLogRows.js";
import { TRANSFER_TOPIC } from "../../src/rows/paymentEvents.js";
import {
  canonicalBlockPlan,
  chainChangePlan,
  preconfirmedPlan,
  runLifecyclePlan,
  runLifecyclePlanAsync,
  type AsyncLifecycleStatements,
  type LifecyclePlan,
  type LifecycleStatements,
  type LifecycleStep,
  type StoredTwin,
} from "../../src/store/lifecycleRules.js";
import type { InsertCounts } from "../../src/store/types.js";
import { word } from "../helpers/fixtures.js";

const TOKEN = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const TX = word("ab1");
const OTHER_TX = word("ab2");
const NOW = 10_000;

/** Transfers of `tx` at `blockNumber` with these log indexes, as decoded from a node's answer. */
function transfers(
  blockNumber: number,
  logIndexes: number[],
  status: LogStatus,
  tx: Hex = TX,
): LogRow[] {
  const logs: RpcLog[] = logIndexes.map((logIndex) => ({
    address: TOKEN,
    topics: [TRANSFER_TOPIC, word("a11ce"), word("b0b")],
    data: word("f4240"),
    blockNumber,
    blockHash: status === "preconfirmed" ? word("0") : word(`b${blockNumber}`),
    blockTimestamp: 1_700_000_000 + blockNumber,
    transactionHash: tx,
    transactionIndex: 0,
    logIndex,
    removed: false,
  }));
  return toLogRows(logs, {
    chainId: 8453,
    statusOf: () => status,
    source: status === "preconfirmed" ? "pending" : "head",
    timestampOf: () => 0,
  }).rows;
}

const stored = (
  id: number,
  status: LogStatus,
  blockNumber: number,
  txLogPosition: number,
  logIndex: number,
  preconfirmedAt: number | null = 1_000,
): StoredTwin => ({
  id,
  status,
  blockNumber,
  txLogPosition,
  logIndex,
  preconfirmedAt,
});

/** What a backend answers, by step kind; a kind left out answers as a database with nothing in it would. */
type Answers = {
  [K in LifecycleStep["kind"]]?: (step: Extract<LifecycleStep, { kind: K }>) => unknown;
};

const inserted = (rows: readonly LogRow[]): InsertCounts => ({
  inserted: rows.length,
  duplicates: 0,
  byEvent: [],
});

const EMPTY_DATABASE: Required<Answers> = {
  sameContent: () => [],
  move: () => undefined,
  findConfirmed: () => undefined,
  fold: () => undefined,
  promote: () => undefined,
  insert: (step) => inserted(step.rows),
  unlanded: () => [],
  drop: () => 1,
  removeBlock: () => 0,
  removeOtherBranches: () => 0,
  addSynced: () => undefined,
};

/** Statements answering from `answers`, each recording the step it was asked (describeStep) in `steps`. */
function recordingStatements(answers: Answers, steps: string[]): LifecycleStatements {
  const statements: Record<string, (step: LifecycleStep) => unknown> = {};
  for (const [kind, fallback] of Object.entries(EMPTY_DATABASE)) {
    const answer = ((answers as Record<string, unknown>)[kind] ?? fallback) as (
      step: LifecycleStep,
    ) => unknown;
    statements[kind] = (step) => {
      steps.push(describeStep(step));
      return answer(step);
    };
  }
  return statements as LifecycleStatements;
}

/** Runs `plan` against `answers`; returns its result and the steps it asked for, in order. */
function run<T>(plan: LifecyclePlan<T>, answers: Answers = {}): { result: T; steps: string[] } {
  const steps: string[] = [];
  return { result: runLifecyclePlan(plan, recordingStatements(answers, steps)), steps };
}

function describeStep(step: LifecycleStep): string {
  switch (step.kind) {
    case "sameContent":
      return `sameContent ${step.row.blockNumber}/${step.row.logIndex}${step.finalized ? " +finalized" : ""}`;
    case "move":
      return `move #${step.twin.id} to ${step.row.blockNumber}/${step.row.logIndex}`;
    case "findConfirmed":
      return `findConfirmed ${step.row.blockNumber}/${step.row.logIndex}`;
    case "fold":
      return `fold #${step.twin.id} into #${step.into}`;
    case "promote":
      return `promote #${step.twin.id} to ${step.row.blockNumber}/${step.row.logIndex} ${step.row.status}`;
    case "insert":
      return `insert [${step.rows.map((r) => `${r.blockNumber}/${r.logIndex}`).join(", ")}]`;
    case "unlanded":
      return `unlanded <= ${step.blockNumber}`;
    case "drop":
      return `drop #${step.id}`;
    case "removeBlock":
      return `removeBlock ${step.block.number}`;
    case "removeOtherBranches":
      return `removeOtherBranches ${step.blockNumber} not ${step.canonicalHash}`;
    case "addSynced":
      return `addSynced ${step.range.from}-${step.range.to}`;
  }
}

describe("preconfirmedPlan", () => {
  test("inserts a log nothing stored shares content with", () => {
    const { result, steps } = run(preconfirmedPlan(transfers(12, [0], "preconfirmed"), NOW));
    expect(steps).toEqual(["sameContent 12/0 +finalized", "insert [12/0]"]);
    expect(result).toEqual({ inserted: 1, duplicates: 0, byEvent: [], moved: 0, revived: 0 });
  });

  test("a log already confirmed or finalized, or stored for a later block, changes nothing", () => {
    for (const status of ["confirmed", "finalized", "preconfirmed"] as const) {
      const blockNumber = status === "preconfirmed" ? 13 : 11;
      const { result, steps } = run(preconfirmedPlan(transfers(12, [0], "preconfirmed"), NOW), {
        sameContent: () => [stored(7, status, blockNumber, 0, 0)],
      });
      expect(steps, status).toEqual(["sameContent 12/0 +finalized", "insert []"]);
      expect(result.moved).toBe(0);
    }
  });

  test("announced for a later block, the stored row moves there; a dropped one is revived", () => {
    const rows = [
      ...transfers(12, [3], "preconfirmed"),
      ...transfers(12, [4], "preconfirmed", OTHER_TX),
    ];
    const { result, steps } = run(preconfirmedPlan(rows, NOW), {
      sameContent: ({ row }) =>
        row.transactionHash === TX
          ? [stored(7, "dropped", 11, 0, 1)]
          : [stored(8, "preconfirmed", 11, 0, 2)],
    });
    expect(steps).toEqual([
      "sameContent 12/3 +finalized",
      "move #7 to 12/3",
      "sameContent 12/4 +finalized",
      "move #8 to 12/4",
      "insert []",
    ]);
    expect(result).toMatchObject({ inserted: 0, moved: 2, revived: 1 });
  });

  test("a row stored for the same block is no twin: the insert finds the log stored and counts a duplicate", () => {
    const { steps } = run(preconfirmedPlan(transfers(12, [0], "preconfirmed"), NOW), {
      sameContent: () => [stored(7, "preconfirmed", 12, 0, 0)],
    });
    expect(steps).toEqual(["sameContent 12/0 +finalized", "insert [12/0]"]);
  });
});

describe("canonicalBlockPlan", () => {
  test("promotes the twin at the log's position before one with a lower logIndex, and reports its lead time", () => {
    const rows = transfers(12, [5, 6], "confirmed");
    const { result, steps } = run(canonicalBlockPlan(12, rows, NOW), {
      sameContent: ({ row }) =>
        row.logIndex === 5
          ? [stored(1, "preconfirmed", 12, 1, 2), stored(2, "preconfirmed", 12, 0, 9, 4_000)]
          : [stored(1, "preconfirmed", 12, 1, 2)],
    });
    expect(steps).toEqual([
      "sameContent 12/5",
      "findConfirmed 12/5",
      "promote #2 to 12/5 confirmed",
      "sameContent 12/6",
      "findConfirmed 12/6",
      "promote #1 to 12/6 confirmed",
      "insert []",
      "unlanded <= 12",
    ]);
    expect(result).toEqual({
      inserted: 0,
      promoted: 2,
      dropped: 0,
      duplicates: 0,
      leadTimesMs: [NOW - 4_000, NOW - 1_000],
      byEvent: [],
    });
  });

  test("a twin of a log a backfill already stored confirmed is folded into that row, a duplicate", () => {
    const { result, steps } = run(canonicalBlockPlan(12, transfers(12, [0], "confirmed"), NOW), {
      sameContent: () => [stored(1, "dropped", 12, 0, 0, null)],
      findConfirmed: () => 42,
    });
    expect(steps).toEqual([
      "sameContent 12/0",
      "findConfirmed 12/0",
      "fold #1 into #42",
      "insert []",
      "unlanded <= 12",
    ]);
    expect(result).toMatchObject({ promoted: 0, duplicates: 1, leadTimesMs: [] });
  });

  test("only pre-confirmed and dropped rows are twins: a log whose content is stored confirmed is inserted", () => {
    const { result, steps } = run(canonicalBlockPlan(12, transfers(12, [0], "confirmed"), NOW), {
      sameContent: () => [stored(1, "confirmed", 11, 0, 0)],
    });
    expect(steps).toEqual(["sameContent 12/0", "insert [12/0]", "unlanded <= 12"]);
    expect(result).toMatchObject({ inserted: 1, promoted: 0 });
  });

  test("drops the pre-confirmations that did not land, except those the pending view still holds", () => {
    const { result, steps } = run(canonicalBlockPlan(12, [], NOW, new Set([TX])), {
      unlanded: () => [
        { id: 1, txHash: TX },
        { id: 2, txHash: OTHER_TX },
      ],
    });
    expect(steps).toEqual(["insert []", "unlanded <= 12", "drop #2"]);
    expect(result.dropped).toBe(1);
  });
});

describe("chainChangePlan", () => {
  test("flags orphaned blocks, then per block the other branches, applies its rows, then records the ranges", () => {
    const change = {
      kind: "reorg" as const,
      orphaned: [{ number: 12, hash: word("dead") }],
      blocks: [
        { number: 12, rows: transfers(12, [0], "confirmed"), canonicalHash: word("b12") },
        { number: 13, rows: [] },
      ],
      synced: [{ token: TOKEN as Hex, range: { from: 12, to: 13 } }],
    };
    const { result, steps } = run(chainChangePlan(change, NOW), {
      removeBlock: () => 3,
      removeOtherBranches: () => 2,
    });
    expect(steps).toEqual([
      "removeBlock 12",
      `removeOtherBranches 12 not ${word("b12")}`,
      "sameContent 12/0",
      "insert [12/0]",
      "unlanded <= 12",
      "insert []",
      "unlanded <= 13",
      "addSynced 12-13",
    ]);
    expect(result.removed).toBe(5);
    expect(result.blocks.map((b) => b.inserted)).toEqual([1, 0]);
  });

  test("runs the same with statements that answer promises", async () => {
    const steps: string[] = [];
    const answers: Answers = {
      sameContent: ({ row }) => (row.logIndex === 0 ? [stored(1, "preconfirmed", 12, 0, 0)] : []),
    };
    const statements = Object.fromEntries(
      Object.entries(recordingStatements(answers, steps)).map(([kind, statement]) => [
        kind,
        async (step: never) => statement(step),
      ]),
    );
    const result = await runLifecyclePlanAsync(
      canonicalBlockPlan(12, transfers(12, [0, 1], "confirmed"), NOW),
      statements as unknown as AsyncLifecycleStatements,
    );
    expect(steps).toEqual([
      "sameContent 12/0",
      "findConfirmed 12/0",
      "promote #1 to 12/0 confirmed",
      "sameContent 12/1",
      "insert [12/1]",
      "unlanded <= 12",
    ]);
    expect(result).toMatchObject({ promoted: 1, inserted: 1 });
  });
});
