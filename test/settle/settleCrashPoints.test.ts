import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CRASH_AT_ENV, type CrashStep } from "../../src/ops/crashPoint.js";
import { waitFor } from "../helpers/fixtures.js";
import {
  createSettleCrashHarness,
  STEP_TIMEOUT_MS,
  tail,
  type SettleCrashHarness,
} from "../helpers/settleCrashHarness.js";
import { referencePaymentBody } from "../helpers/x402.js";

let h: SettleCrashHarness;

const authorizationOf = (body: Awaited<ReturnType<typeof referencePaymentBody>>) =>
  body.paymentPayload.payload.authorization as { from: Address; nonce: Hex };

/** A devnet (`flashblockIntervalMs` 0: no pre-confirmations, receipts only sealed) and a daemon config for one describe. */
function useDevnet(flashblockIntervalMs: number): void {
  beforeAll(async () => {
    h = await createSettleCrashHarness({
      dirPrefix: "flashindex-crash-points-",
      relayerKeys: { FLASHINDEX_RELAYER_KEY: 6 },
      flashblockIntervalMs,
    });
  }, 60_000);
  afterAll(() => h?.tearDown());
}

const payer = () => privateKeyToAccount(h.devnet.privateKeys[1]!);
const CASE =
  "killed at %s: the chain and the database agree after a restart, and the authorization is sent at most once";

describe("a settle killed with SIGKILL at each step", () => {
  useDevnet(50);
  // Broadcast before the kill (sent, pre-confirmed): it lands once and the order follows the chain.
  // Not broadcast (signed, stored): its caller got no answer, so nothing of it is ever sent, and
  // its relayer nonce is handed to the next settle: no gap, no gap filler.
  test.each<[CrashStep, boolean]>([
    ["signed", false],
    ["stored", false],
    ["sent", true],
    ["preconfirmed", true],
  ])(CASE, killAndRestart, 180_000);
});

describe("a settle killed with SIGKILL when the receipt it sees first is already sealed", () => {
  // No pre-confirmations: the wait's first receipt is a sealed one, the same step for a settle (a
  // poll on Base can miss a short pre-confirmation too). It used to answer instead of dying.
  useDevnet(0);
  test.each<[CrashStep, boolean]>([["preconfirmed", true]])(CASE, killAndRestart, 180_000);
});

/** One case: a daemon killed at `step` mid-settle, a second one started on the same database; `lands`: the payment was broadcast before the kill. */
async function killAndRestart(step: CrashStep, lands: boolean): Promise<void> {
  const relayer = h.relayers[0]!;
  const countBefore = await h.client.getTransactionCount({ address: relayer, blockTag: "latest" });
  const body = await referencePaymentBody(payer(), h.offer);
  const { from, nonce } = authorizationOf(body);

  const first = await h.startDaemon({ [CRASH_AT_ENV]: step });
  try {
    const exited = h.exitOf(first.daemon, STEP_TIMEOUT_MS, `the daemon to die at ${step}`);
    const answer = await h.settle(first.url, body).then(
      (a) => a,
      (error: unknown) => {
        if (error instanceof DOMException && error.name === "TimeoutError")
          throw new Error(
            `no answer and no crash at ${step} within ${STEP_TIMEOUT_MS} ms\n${tail(first.daemon)}`,
          );
        return "no answer" as const;
      },
    );
    // A daemon that answered did not die at the step: say so now, not at the test's timeout.
    if (answer !== "no answer")
      throw new Error(
        `the daemon answered instead of dying at ${step}: ${JSON.stringify(answer)}\n${tail(first.daemon)}`,
      );
    await exited;
  } finally {
    await h.stop(first.daemon, "SIGKILL");
  }
  expect(first.daemon.signalCode).toBe("SIGKILL");
  expect(first.daemon.output().stderr).toContain(`test crash point ${step}`);

  const second = await h.startDaemon();
  try {
    const orderId = h.query<{ id: number }>(
      "SELECT id FROM orders WHERE nonce = ?",
      nonce.toLowerCase(),
    )[0]!.id;
    if (lands) {
      await waitFor(
        () =>
          h.query<{ state: string }>("SELECT state FROM orders WHERE id = ?", orderId)[0]?.state ===
          "captured",
        30_000,
        "the order captured",
        100,
      );
    } else if (step === "stored") {
      await waitFor(
        () =>
          h.query<{ status: string }>(
            "SELECT status FROM order_captures WHERE order_id = ?",
            orderId,
          )[0]?.status === "abandoned",
        30_000,
        "the unsent settle abandoned",
        100,
      );
      expect(
        h.query(
          "SELECT cause FROM order_transitions WHERE order_id = ? ORDER BY id DESC LIMIT 1",
          orderId,
        ),
      ).toEqual([{ cause: "settle_never_sent" }]);
    } else {
      await waitFor(
        () =>
          h.query<{ state: string }>(
            "SELECT state FROM relayer_nonces WHERE holder = ?",
            `capture:${orderId}`,
          )[0]?.state === "released"
            ? true
            : undefined,
        30_000,
        "the reservation released",
        100,
      );
    }

    // The next payment takes the next nonce the chain expects (the released one, if any): it lands without a gap filler.
    const next = await referencePaymentBody(payer(), h.offer);
    const nextAnswer = await h.settle(second.url, next);
    expect(nextAnswer.success, JSON.stringify(nextAnswer)).toBe(true);
    const expected = countBefore + (lands ? 2 : 1);
    await waitFor(
      async () =>
        (await h.client.getTransactionCount({ address: relayer, blockTag: "latest" })) === expected
          ? true
          : undefined,
      30_000,
      `${expected} relayer transactions`,
      100,
    );
    expect(await h.client.getTransactionCount({ address: relayer, blockTag: "pending" })).toBe(
      expected,
    );
    expect(second.daemon.output().stdout).not.toContain("Filled relayer nonce gap");

    // The chain: the killed payment used once or never, carried by at most one relayer transaction.
    expect(await h.used(from, nonce)).toBe(lands);
    expect(await h.relayedCarrying(nonce)).toHaveLength(lands ? 1 : 0);
    const orderState = h.query<{ state: string }>(
      "SELECT state FROM orders WHERE id = ?",
      orderId,
    )[0]!.state;
    expect(orderState).toBe(lands ? "captured" : "authorized");

    // The book against the chain: every nonce below the relayer's count went to a broadcast; nothing is held above it.
    const count = await h.client.getTransactionCount({ address: relayer, blockTag: "latest" });
    const book = h.query<{ nonce: number; state: string }>(
      "SELECT nonce, state FROM relayer_nonces WHERE relayer = ? ORDER BY nonce",
      relayer.toLowerCase(),
    );
    expect(
      book.filter((e) => e.nonce < count && !["broadcast", "landed"].includes(e.state)),
    ).toEqual([]);
    expect(book.filter((e) => e.nonce >= count && e.state !== "released")).toEqual([]);
  } finally {
    await h.stop(second.daemon);
  }
}
