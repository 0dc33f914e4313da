import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { CRASH_AT_ENV } from "../../src/ops/crashPoint.js";
import { waitFor } from "../helpers/fixtures.js";
import {
  createSettleCrashHarness,
  STEP_TIMEOUT_MS,
  type SettleCrashHarness,
} from "../helpers/settleCrashHarness.js";
import { referencePaymentBody } from "../helpers/x402.js";

/*
 * kill -9 mid-settle on a relayer pool (issue 43), as settleCrashPoints.test.ts does for one key:
 * a daemon with two relayers takes several settles at once and dies at the first "sent" step; a
 * second daemon on the same database finishes what was broadcast and sends nothing twice.
 */

const SETTLES = 6;
let h: SettleCrashHarness;

/** A /settle answer, or "no answer" when the daemon died before giving one. */
const settle = (url: string, body: unknown) =>
  h.settle(url, body).catch(() => "no answer" as const);
const payer = () => privateKeyToAccount(h.devnet.privateKeys[1]!);

beforeAll(async () => {
  h = await createSettleCrashHarness({
    dirPrefix: "flashindex-pool-crash-",
    relayerKeys: { POOL_RELAYER_1: 6, POOL_RELAYER_2: 7 },
    facilitator: { relayers: [{ keyEnv: "POOL_RELAYER_1" }, { keyEnv: "POOL_RELAYER_2" }] },
  });
}, 60_000);

afterAll(() => h?.tearDown());

describe("a relayer pool killed with SIGKILL mid-settle", () => {
  test("settles in flight on two relayers, killed at the first send: after a restart each authorization is carried by at most one transaction, and the pool settles on", async () => {
    const bodies = await Promise.all(
      Array.from({ length: SETTLES }, () => referencePaymentBody(payer(), h.offer)),
    );
    const nonces = bodies.map(
      (b) => (b.paymentPayload.payload.authorization as { nonce: Hex }).nonce,
    );

    const first = await h.startDaemon({ [CRASH_AT_ENV]: "sent" });
    const exited = h.exitOf(first.daemon, STEP_TIMEOUT_MS);
    const answers = await Promise.all(bodies.map((body) => settle(first.url, body)));
    await exited;
    expect(first.daemon.signalCode).toBe("SIGKILL");
    expect(first.daemon.output().stderr).toContain("test crash point sent");
    expect(answers.filter((a) => a !== "no answer")).toEqual([]);

    const second = await h.startDaemon();
    try {
      // Every order of the killed settles comes to rest: captured if broadcast, authorized if not.
      const resting = () => {
        const states = nonces.map(
          (n) =>
            h.query<{ state: string }>(
              "SELECT state FROM orders WHERE nonce = ?",
              n.toLowerCase(),
            )[0]?.state,
        );
        return states.every((s) => s === undefined || s === "captured" || s === "authorized")
          ? states
          : undefined;
      };
      const states = await waitFor(resting, 30_000, "the killed settles at rest", 100);
      expect(states.filter((s) => s === "captured").length).toBeGreaterThan(0);

      // The chain: each authorization used once or never, by at most one transaction of the pool.
      for (const [i, nonce] of nonces.entries()) {
        const carrying = await h.relayedCarrying(nonce);
        expect(carrying.length, `payment ${i}`).toBeLessThanOrEqual(1);
        expect(await h.used(payer().address, nonce), `payment ${i}`).toBe(carrying.length === 1);
        expect(states[i] === "captured", `payment ${i}`).toBe(carrying.length === 1);
      }

      // The pool settles on, on both relayers' next nonces: no gap, no gap filler.
      const next = await Promise.all(
        Array.from({ length: 4 }, async () =>
          settle(second.url, await referencePaymentBody(payer(), h.offer)),
        ),
      );
      expect(
        next.filter((a) => a === "no answer" || a.success !== true),
        JSON.stringify(next),
      ).toEqual([]);
      for (const relayer of h.relayers) {
        const count = await waitFor(
          async () => {
            const [latest, pending] = await Promise.all([
              h.client.getTransactionCount({ address: relayer, blockTag: "latest" }),
              h.client.getTransactionCount({ address: relayer, blockTag: "pending" }),
            ]);
            return latest === pending ? latest : undefined;
          },
          30_000,
          `${relayer}'s transactions sealed`,
          100,
        );
        const book = h.query<{ nonce: number; state: string }>(
          "SELECT nonce, state FROM relayer_nonces WHERE relayer = ? ORDER BY nonce",
          relayer.toLowerCase(),
        );
        expect(
          book.filter((e) => e.nonce < count && !["broadcast", "landed"].includes(e.state)),
          relayer,
        ).toEqual([]);
        expect(
          book.filter((e) => e.nonce >= count && e.state !== "released"),
          relayer,
        ).toEqual([]);
      }
      expect(second.daemon.output().stdout).not.toContain("Filled relayer nonce gap");
    } finally {
      await h.stop(second.daemon);
    }
  }, 240_000);
});
