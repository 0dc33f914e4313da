import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { createRelayerPool, leastBusyRelayer } from "../../src/authorization/relayerPool.js";

const keys = [1, 2, 3].map((n) => privateKeyToAccount(`0x${n.toString(16).padStart(64, "0")}`));
const [a, b, c] = keys as [(typeof keys)[0], (typeof keys)[0], (typeof keys)[0]];

describe("createRelayerPool()", () => {
  test("pick() takes the relayer with the least pending work, ties in configuration order", () => {
    const pool = createRelayerPool(keys, { stuckAfterMs: 1_000 });
    expect(pool.pick(0)).toBe(a);
    pool.begin(1, a.address, 0);
    expect(pool.pick(0)).toBe(b);
    pool.begin(2, b.address, 0);
    pool.begin(3, c.address, 0);
    pool.begin(4, c.address, 0);
    expect(pool.pick(0)).toBe(a);
    pool.end(1);
    pool.end(2);
    expect(pool.pick(0)).toBe(a);
  });

  test("a relayer whose capture waits stuckAfterMs for a pre-confirmation takes no new work, even with the least, until it is seen", () => {
    const pool = createRelayerPool([a, b], { stuckAfterMs: 1_000 });
    pool.begin(1, a.address, 0);
    pool.sent(1, 0);
    for (const id of [2, 3, 4]) pool.begin(id, b.address, 500);
    expect(pool.pick(999)).toBe(a);
    pool.begin(5, a.address, 999);
    pool.end(5);
    expect(pool.pick(1_000)).toBe(b);
    expect(pool.standings(1_000)).toEqual([
      { address: a.address, pending: 1, stuck: true, oldestSentAt: 0 },
      { address: b.address, pending: 3, stuck: false, oldestSentAt: null },
    ]);
    pool.end(1);
    expect(pool.pick(1_000)).toBe(a);
  });

  test("when every relayer is stuck the least loaded one is taken all the same: a pool of one keeps sending", () => {
    const one = createRelayerPool([a], { stuckAfterMs: 10 });
    one.begin(1, a.address, 0);
    one.sent(1, 0);
    expect(one.pick(100)).toBe(a);
    expect(createRelayerPool([]).pick(0)).toBeUndefined();
  });

  test("when every relayer is stuck, the one still moving takes the work, not the one that stopped with the fewest pending", () => {
    const pool = createRelayerPool([a, b], { stuckAfterMs: 1_000 });
    // a stopped at 0 with two captures waiting; b, slowed by a busy node, has many but its
    // oldest waiting one was sent at 4,000.
    for (const id of [1, 2]) {
      pool.begin(id, a.address, 0);
      pool.sent(id, 0);
    }
    for (const id of [3, 4, 5, 6]) {
      pool.begin(id, b.address, 4_000);
      pool.sent(id, 4_000);
    }
    expect(pool.standings(6_000).map((s) => s.stuck)).toEqual([true, true]);
    expect(pool.pick(6_000)).toBe(b);
  });

  test("prune() ends sent work whose order is no longer live, and leaves work not yet sent to its capture() call", () => {
    const pool = createRelayerPool([a, b]);
    pool.begin(1, a.address, 0);
    pool.sent(1, 0);
    pool.begin(2, b.address, 0);
    pool.prune(() => false);
    expect(pool.standings(0).map((s) => s.pending)).toEqual([0, 1]);
  });

  test("one key twice is refused: it would share its nonces", () => {
    expect(() => createRelayerPool([a, privateKeyToAccount(`0x${"1".padStart(64, "0")}`)])).toThrow(
      /twice/,
    );
  });
});

describe("leastBusyRelayer()", () => {
  test("takes the relayer with the fewest live intents in the store, ties in configuration order", () => {
    expect(leastBusyRelayer(keys, [{ relayer: a.address }, { relayer: b.address }])).toBe(c);
    expect(leastBusyRelayer(keys, [{ relayer: a.address }])).toBe(b);
    expect(leastBusyRelayer(keys, [])).toBe(a);
  });
});
