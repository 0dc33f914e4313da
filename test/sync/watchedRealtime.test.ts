import { afterAll, afterEach, describe, expect, test } from "vitest";
import { BACKENDS, stopFileBackends, type TableReader } from "../helpers/backends.js";
import { waitFor } from "../helpers/devnetPayments.js";
import { startFollower, type FollowerOptions, type Row } from "../helpers/followerHarness.js";

const SHOP = "0x000000000000000000000000000000000000c0de";
const ELSEWHERE = "0x000000000000000000000000000000000000beef";
const open: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.stop();
});
afterAll(() => stopFileBackends());

const rowsOf = (db: TableReader, tx: string) =>
  db.all<Row>("SELECT * FROM logs WHERE tx_hash = ? ORDER BY id", [tx.toLowerCase()]);

describe.each(BACKENDS)("a watched token followed live on $name", (backend) => {
  // Pre-confirmations by the pendingLogs subscription alone, then by the pending poll alone.
  const paths: Array<[string, FollowerOptions, string]> = [
    ["the pendingLogs subscription", { pendingPoll: 0 }, "pending_ws"],
    ["the pending poll", { ws: false }, "pending"],
  ];
  test.each(paths)(
    "pre-confirms and confirms only the payments to a watched address, by %s",
    async (_path, options, source) => {
      const {
        reader: db,
        payer,
        deps,
      } = await startFollower({ ...options, backend, watch: [SHOP] }, open);
      const other = await payer.pay(ELSEWHERE, 2);
      const paid = await payer.pay(SHOP, 2);
      await payer.rpc("devnet_flashblock");
      const pre = await waitFor(
        async () => (await rowsOf(db, paid)).length === 2 && (await rowsOf(db, paid)),
        5_000,
        "pre-confirmed rows",
      );
      expect(pre.map((r) => [r.status, r.source])).toEqual([
        ["preconfirmed", source],
        ["preconfirmed", source],
      ]);
      await payer.rpc("devnet_mine");
      await waitFor(
        async () => (await rowsOf(db, paid)).filter((r) => r.status === "confirmed").length === 2,
        5_000,
        "promotion",
      );
      // The other payment, in the same flashblock and block, was never asked for: nothing stored, nothing refused.
      expect(await rowsOf(db, other)).toEqual([]);
      expect(await db.all("SELECT DISTINCT to_address FROM transfers")).toEqual([
        { to_address: SHOP },
      ]);
      expect(deps.lines.filter((l) => String(l.msg).startsWith("Rejected"))).toEqual([]);
    },
  );

  test("a reorg of a block holding watched payments flags them removed and indexes the new branch, found by parent hash", async () => {
    const { reader: db, payer } = await startFollower(
      { backend, watch: [SHOP], finalityDepth: 20 },
      open,
    );
    const other = await payer.pay(ELSEWHERE);
    const paid = await payer.pay(SHOP, 2);
    await payer.rpc("devnet_mine");
    const confirmed = async () => (await rowsOf(db, paid)).filter((r) => r.status === "confirmed");
    const [first] = await waitFor(
      async () => (await confirmed()).length === 2 && (await confirmed()),
      5_000,
      "confirmed rows",
    );
    await payer.rpc("devnet_reorg", [1]);
    await payer.rpc("devnet_mine");
    const rows = await waitFor(
      async () => (await rowsOf(db, paid)).length === 4 && (await rowsOf(db, paid)),
      10_000,
      "new branch indexed",
    );
    expect(rows.filter((r) => r.status === "removed").map((r) => r.block_hash)).toEqual([
      first!.block_hash,
      first!.block_hash,
    ]);
    expect(
      rows.filter((r) => r.status === "confirmed").every((r) => r.block_hash !== first!.block_hash),
    ).toBe(true);
    expect(await rowsOf(db, other)).toEqual([]);
  });
});
