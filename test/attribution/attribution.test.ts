import { Attribution as OxAttribution } from "ox/erc8021";
import { encodeFunctionData, toHex, type Address, type Hex } from "viem";
import { afterAll, afterEach, describe, expect, test } from "vitest";
import { schema0Suffix, schema2Suffix } from "../../src/attribution/erc8021Suffix.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import {
  miniAccountAbi,
  miniAccountBytecode,
} from "../../src/devnet/contracts/generated/miniAccount.js";
import { miniEntryPointAbi } from "../../src/devnet/contracts/generated/miniEntryPoint.js";
import {
  expectMixedBundleCredited,
  installEntryPoint,
  sendMixedBundle,
  devnetSender as sender,
} from "../helpers/bundles.js";
import { waitFor } from "../helpers/devnetPayments.js";
import {
  startFollower as startBackendFollower,
  type FollowerOptions,
} from "../helpers/followerHarness.js";
import { BACKENDS, stopFileBackends, type TableReader } from "../helpers/backends.js";

const open: Array<{ stop: () => Promise<void> }> = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.stop();
});
afterAll(() => stopFileBackends());

const SHOP: Address = "0x000000000000000000000000000000000000c0de";
const MARKER = "80218021802180218021802180218021";

/** The first column of the first row (SQLite's `pluck().get()`), on either backend. */
const value = async (db: TableReader, sql: string, params: unknown[] = []) => {
  const [row] = await db.all(sql, params);
  return row === undefined ? undefined : Object.values(row)[0];
};
const column = async (db: TableReader, sql: string, params: unknown[] = []) =>
  (await db.all(sql, params)).map((row) => Object.values(row)[0]);

describe.each(BACKENDS)("attribution on $name", (backend) => {
  const startFollower = async (
    options: FollowerOptions,
    open: Array<{ stop: () => Promise<void> }>,
  ) => {
    const follower = await startBackendFollower({ ...options, backend }, open);
    return { ...follower, db: follower.reader };
  };

  test("records each payment's ERC-8021 codes (schema 0, schema 2, none, malformed) and the views answer per code", async () => {
    const { db, devnet } = await startFollower({ pendingPoll: 0 }, open);
    const buyer = sender(devnet, 1);
    await buyer.init();
    const schema0 = await buyer.transfer(SHOP, 10n, schema0Suffix(["bc_b8nos5a8"]));
    const schema2 = await buyer.transfer(
      SHOP,
      20n,
      schema2Suffix({ app: "baseapp", wallet: "bc_k2x9q7m1" }),
    );
    const plain = await buyer.transfer(SHOP, 30n);
    const malformed = await buyer.transfer(
      SHOP,
      40n,
      `0xdddddddd62617365617070200${"0"}${MARKER}` as Hex,
    );
    await buyer.rpc("devnet_flashblock");
    // Pre-confirmed logs get their attribution too, before any block exists.
    const attributed = () =>
      value(db, "SELECT COUNT(*) FROM transactions WHERE tx_hash IN (?, ?, ?, ?)", [
        schema0,
        schema2,
        plain,
        malformed,
      ]);
    await waitFor(async () => (await attributed()) === 4, 5_000, "pre-confirmed attribution");
    expect(
      await column(db, "SELECT DISTINCT status FROM logs WHERE tx_hash = ?", [schema0]),
    ).toEqual(["preconfirmed"]);
    await buyer.rpc("devnet_mine");
    await waitFor(
      async () =>
        (await value(
          db,
          "SELECT COUNT(*) FROM live_transfers WHERE status = 'confirmed' AND to_address = ?",
          [SHOP],
        )) === 4,
      5_000,
      "confirmed",
    );

    const tx = async (hash: Hex) =>
      (
        await db.all(
          "SELECT attribution, schema_id, selector, from_address FROM transactions WHERE tx_hash = ?",
          [hash],
        )
      )[0];
    expect(await tx(schema0)).toEqual({
      attribution: "codes",
      schema_id: 0,
      selector: "0xa9059cbb",
      from_address: buyer.address.toLowerCase(),
    });
    expect(await tx(schema2)).toMatchObject({ attribution: "codes", schema_id: 2 });
    expect(await tx(plain)).toMatchObject({ attribution: "none", schema_id: null });
    expect(await tx(malformed)).toMatchObject({ attribution: "malformed" });
    const codes = (hash: Hex) =>
      db.all("SELECT code, role FROM attribution_codes WHERE tx_hash = ? ORDER BY position", [
        hash,
      ]);
    expect(await codes(schema0)).toEqual([{ code: "bc_b8nos5a8", role: "code" }]);
    expect(await codes(schema2)).toEqual([
      { code: "baseapp", role: "app" },
      { code: "bc_k2x9q7m1", role: "wallet" },
    ]);
    expect(await codes(malformed)).toEqual([]);

    expect(
      await db.all(
        "SELECT code, payments, CAST(volume AS REAL) AS volume FROM builder_code_volume ORDER BY code",
      ),
    ).toEqual([
      { code: "baseapp", payments: 1, volume: 20 },
      { code: "bc_b8nos5a8", payments: 1, volume: 10 },
      { code: "bc_k2x9q7m1", payments: 1, volume: 20 },
    ]);
    expect(
      await column(
        db,
        "SELECT value FROM unattributed_transfers WHERE to_address = ? ORDER BY value",
        [SHOP],
      ),
    ).toEqual(["30", "40"]);
    expect(
      await column(db, "SELECT code FROM wallet_codes WHERE wallet = ? ORDER BY code", [
        buyer.address.toLowerCase(),
      ]),
    ).toEqual(["baseapp", "bc_b8nos5a8", "bc_k2x9q7m1"]);
  });

  test("decodes each user operation of an ERC-4337 handleOps bundle with its sender", async () => {
    const { db, devnet } = await startFollower({ pendingPoll: 0 }, open);
    const bundler = sender(devnet, 9);
    await bundler.init();
    const { entryPoint } = await installEntryPoint(devnet, bundler);
    const accountTx = await bundler.deploy(miniAccountAbi, miniAccountBytecode);
    await bundler.rpc("devnet_mine");
    const receipt = async (hash: Hex) =>
      bundler.rpc<{ contractAddress: Address }>("eth_getTransactionReceipt", [hash]);
    const account = (await receipt(accountTx)).contractAddress;
    const funder = sender(devnet, 1);
    await funder.init();
    await funder.transfer(account, 1_000n);
    await funder.rpc("devnet_mine");

    const op = (value: bigint, suffix: Hex | undefined) => ({
      sender: account,
      nonce: 0n,
      initCode: "0x" as Hex,
      callData:
        `${encodeFunctionData({ abi: miniAccountAbi, functionName: "execute", args: [devnet.token, 0n, encodeFunctionData({ abi: flashTestTokenAbi, functionName: "transfer", args: [SHOP, value] })] })}${suffix?.slice(2) ?? ""}` as Hex,
      accountGasLimits: toHex(0n, { size: 32 }),
      preVerificationGas: 0n,
      gasFees: toHex(0n, { size: 32 }),
      paymasterAndData: "0x" as Hex,
      signature: "0x" as Hex,
    });
    const bundle = await bundler.send(
      entryPoint,
      encodeFunctionData({
        abi: miniEntryPointAbi,
        functionName: "handleOps",
        args: [
          [
            op(5n, schema0Suffix(["bc_demo0001"])),
            op(6n, undefined),
            op(7n, schema2Suffix({ app: "morpho" })),
          ],
          bundler.address,
        ],
      }),
    );
    await bundler.rpc("devnet_mine");
    await waitFor(
      async () =>
        (await value(db, "SELECT user_operations FROM transactions WHERE tx_hash = ?", [
          bundle,
        ])) === 3,
      5_000,
      "bundle attributed",
    );

    expect(
      await db.all(
        "SELECT op_index, sender, attribution, schema_id FROM user_operations WHERE tx_hash = ? ORDER BY op_index",
        [bundle],
      ),
    ).toEqual([
      { op_index: 0, sender: account.toLowerCase(), attribution: "codes", schema_id: 0 },
      { op_index: 1, sender: account.toLowerCase(), attribution: "none", schema_id: null },
      { op_index: 2, sender: account.toLowerCase(), attribution: "codes", schema_id: 2 },
    ]);
    expect(
      await db.all(
        "SELECT op_index, code, role FROM attribution_codes WHERE tx_hash = ? ORDER BY op_index",
        [bundle],
      ),
    ).toEqual([
      { op_index: 0, code: "bc_demo0001", role: "code" },
      { op_index: 2, code: "morpho", role: "app" },
    ]);
    expect(
      await column(db, "SELECT code FROM wallet_codes WHERE wallet = ? ORDER BY code", [
        account.toLowerCase(),
      ]),
    ).toEqual(["bc_demo0001", "morpho"]);
  });

  test("decodes a handleAggregatedOps bundle's user operations across groups, with each code's registry", async () => {
    const { db, devnet } = await startFollower({ pendingPoll: 0 }, open);
    const bundler = sender(devnet, 8);
    await bundler.init();
    const { entryPoint } = await installEntryPoint(devnet, bundler);
    const accountTxs = [
      await bundler.deploy(miniAccountAbi, miniAccountBytecode),
      await bundler.deploy(miniAccountAbi, miniAccountBytecode),
    ];
    await bundler.rpc("devnet_mine");
    const receipt = async (hash: Hex) =>
      bundler.rpc<{ contractAddress: Address }>("eth_getTransactionReceipt", [hash]);
    const [first, second] = [
      (await receipt(accountTxs[0]!)).contractAddress,
      (await receipt(accountTxs[1]!)).contractAddress,
    ];
    const funder = sender(devnet, 2);
    await funder.init();
    await funder.transfer(first, 1_000n);
    await funder.transfer(second, 1_000n);
    await funder.rpc("devnet_mine");

    const registry = "0x00000000000000000000000000000000000c0c0a";
    const op = (account: Address, value: bigint, suffix: Hex | undefined) => ({
      sender: account,
      nonce: 0n,
      initCode: "0x" as Hex,
      callData:
        `${encodeFunctionData({ abi: miniAccountAbi, functionName: "execute", args: [devnet.token, 0n, encodeFunctionData({ abi: flashTestTokenAbi, functionName: "transfer", args: [SHOP, value] })] })}${suffix?.slice(2) ?? ""}` as Hex,
      accountGasLimits: toHex(0n, { size: 32 }),
      preVerificationGas: 0n,
      gasFees: toHex(0n, { size: 32 }),
      paymasterAndData: "0x" as Hex,
      signature: "0x" as Hex,
    });
    // {a: "shopapp", r: {a: 7}}: a malformed app registry.
    const malformedCbor = `a2616167${Buffer.from("shopapp").toString("hex")}6172a1616107`;
    const malformedRegistry =
      `0x${malformedCbor}${toHex(malformedCbor.length / 2, { size: 2 }).slice(2)}02${MARKER}` as Hex;
    const groups = [
      {
        userOps: [op(first, 11n, schema0Suffix(["shopapp"]))],
        aggregator: "0x000000000000000000000000000000000000a991" as Address,
        signature: "0x" as Hex,
      },
      {
        userOps: [],
        aggregator: "0x000000000000000000000000000000000000a992" as Address,
        signature: "0x" as Hex,
      },
      {
        userOps: [
          op(
            second,
            12n,
            OxAttribution.toDataSuffix({
              appCode: "shopapp",
              registries: { app: { address: registry, chainId: 8453 } },
            }),
          ),
          op(first, 13n, malformedRegistry),
        ],
        aggregator: "0x000000000000000000000000000000000000a993" as Address,
        signature: "0x" as Hex,
      },
    ];
    const bundle = await bundler.send(
      entryPoint,
      encodeFunctionData({
        abi: miniEntryPointAbi,
        functionName: "handleAggregatedOps",
        args: [groups, bundler.address],
      }),
    );
    await bundler.rpc("devnet_mine");
    await waitFor(
      async () =>
        (await value(db, "SELECT user_operations FROM transactions WHERE tx_hash = ?", [
          bundle,
        ])) === 3,
      5_000,
      "aggregated bundle attributed",
    );
    await waitFor(
      async () =>
        (await value(db, "SELECT COUNT(*) FROM live_transfers WHERE tx_hash = ?", [bundle])) === 3,
      5_000,
      "bundle transfers",
    );

    expect(
      await db.all(
        "SELECT op_index, sender, aggregator, attribution, schema_id, registry_error FROM user_operations WHERE tx_hash = ? ORDER BY op_index",
        [bundle],
      ),
    ).toEqual([
      {
        op_index: 0,
        sender: first.toLowerCase(),
        aggregator: "0x000000000000000000000000000000000000a991",
        attribution: "codes",
        schema_id: 0,
        registry_error: null,
      },
      {
        op_index: 1,
        sender: second.toLowerCase(),
        aggregator: "0x000000000000000000000000000000000000a993",
        attribution: "codes",
        schema_id: 2,
        registry_error: null,
      },
      {
        op_index: 2,
        sender: first.toLowerCase(),
        aggregator: "0x000000000000000000000000000000000000a993",
        attribution: "codes",
        schema_id: 2,
        registry_error: '"r"."a": not a map',
      },
    ]);
    expect(
      await db.all(
        "SELECT op_index, code, registry, registry_chain_id, registry_address FROM attribution_codes WHERE tx_hash = ? ORDER BY op_index",
        [bundle],
      ),
    ).toEqual([
      {
        op_index: 0,
        code: "shopapp",
        registry: "canonical",
        registry_chain_id: null,
        registry_address: null,
      },
      {
        op_index: 1,
        code: "shopapp",
        registry: "custom",
        registry_chain_id: "8453",
        registry_address: registry,
      },
      {
        op_index: 2,
        code: "shopapp",
        registry: "malformed",
        registry_chain_id: null,
        registry_address: null,
      },
    ]);
    // The bundle's three payments all carry "shopapp", in three different registries: three rows, never merged.
    // Each payment is its own operation's, across aggregator groups.
    await waitFor(
      async () =>
        (await value(db, "SELECT operation_logs FROM transactions WHERE tx_hash = ?", [bundle])) ===
        "mapped",
      5_000,
      "aggregated bundle mapped",
    );
    expect(
      await db.all(
        "SELECT registry, registry_chain_id, payments, CAST(volume AS REAL) AS volume FROM builder_code_volume WHERE code = 'shopapp' ORDER BY registry",
      ),
    ).toEqual([
      { registry: "canonical", registry_chain_id: null, payments: 1, volume: 11 },
      { registry: "custom", registry_chain_id: "8453", payments: 1, volume: 12 },
      { registry: "malformed", registry_chain_id: null, payments: 1, volume: 13 },
    ]);
    expect(
      await column(
        db,
        "SELECT registry FROM wallet_codes WHERE wallet = ? AND code = 'shopapp' ORDER BY registry",
        [first.toLowerCase()],
      ),
    ).toEqual(["canonical", "malformed"]);
  });

  test("credits each payment of a bundle to its own user operation's codes, and the bundler's codes only outside every operation", async () => {
    const { db, devnet } = await startFollower({ pendingPoll: 0 }, open);
    const { bundle, lookalike } = await sendMixedBundle(devnet, 7, 3, { flashblock: true });
    await waitFor(
      async () =>
        (await value(db, "SELECT COUNT(*) FROM transactions WHERE tx_hash IN (?, ?)", [
          bundle,
          lookalike,
        ])) === 2,
      5_000,
      "bundles attributed",
    );
    await waitFor(
      async () =>
        (await value(
          db,
          "SELECT COUNT(*) FROM live_transfers WHERE status = 'confirmed' AND tx_hash IN (?, ?)",
          [bundle, lookalike],
        )) === 8,
      5_000,
      "bundle payments confirmed",
    );

    await expectMixedBundleCredited(db, { bundle, lookalike });
    expect(
      await column(db, "SELECT COUNT(*) FROM unattributed_transfers WHERE tx_hash IN (?, ?)", [
        bundle,
        lookalike,
      ]),
    ).toEqual([0]);
    expect(await column(db, "SELECT COUNT(*) FROM unmapped_bundle_transfers")).toEqual([0]);
  });
});
