import {
  concat,
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  http,
  toHex,
  type Address,
  type Hex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { expect } from "vitest";
import { schema0Suffix, schema2Suffix } from "../../src/attribution/erc8021Suffix.js";
import { ENTRY_POINT_ADDRESSES } from "../../src/decode/erc4337.js";
import { flashTestTokenAbi } from "../../src/devnet/contracts/generated/flashTestToken.js";
import {
  miniAccountAbi,
  miniAccountBytecode,
} from "../../src/devnet/contracts/generated/miniAccount.js";
import {
  miniEntryPointAbi,
  miniEntryPointBytecode,
} from "../../src/devnet/contracts/generated/miniEntryPoint.js";
import type { Devnet } from "../../src/devnet/startDevnet.js";
import type { TableReader } from "./backends.js";

/** Where the bundles' payments go. */
export const BUNDLE_SHOP: Address = "0x000000000000000000000000000000000000c0de";

/** A sender on a manual-mode devnet with a local nonce (automine is off there). */
export function devnetSender(devnet: Devnet, keyIndex: number) {
  const account = privateKeyToAccount(devnet.privateKeys[keyIndex]!);
  const wallet = createWalletClient({ account, transport: http(devnet.httpUrl) });
  let nonce = 0;
  const rpc = <T>(method: string, params: unknown[] = []) =>
    wallet.request({ method, params } as never) as Promise<T>;
  return {
    address: account.address,
    rpc,
    async init() {
      nonce = Number(await rpc<string>("eth_getTransactionCount", [account.address, "pending"]));
    },
    transfer: (to: Address, value: bigint, dataSuffix?: Hex) =>
      wallet.writeContract({
        address: devnet.token,
        abi: flashTestTokenAbi,
        functionName: "transfer",
        args: [to, value],
        chain: null,
        gas: 200_000n,
        nonce: nonce++,
        ...(dataSuffix ? { dataSuffix } : {}),
      }),
    deploy: (abi: readonly unknown[], bytecode: Hex) =>
      wallet.deployContract({
        abi,
        bytecode,
        chain: null,
        gas: 2_000_000n,
        nonce: nonce++,
      } as never),
    send: (to: Address, data: Hex) =>
      wallet.sendTransaction({ to, data, chain: null, gas: 1_000_000n, nonce: nonce++ }),
  };
}

export type DevnetSender = ReturnType<typeof devnetSender>;

/**
 * MiniEntryPoint's code at EntryPoint v0.7's address (bundles are recognised by address): deployed
 * once by `deployer` to read its runtime code, which anvil_setCode puts in place. Returns both addresses.
 */
export async function installEntryPoint(
  devnet: Devnet,
  deployer: DevnetSender,
): Promise<{ entryPoint: Address; elsewhere: Address }> {
  const tx = await deployer.deploy(miniEntryPointAbi, miniEntryPointBytecode);
  await deployer.rpc("devnet_mine");
  const elsewhere = (
    await deployer.rpc<{ contractAddress: Address }>("eth_getTransactionReceipt", [tx])
  ).contractAddress;
  const code = await deployer.rpc<Hex>("eth_getCode", [elsewhere, "latest"]);
  const entryPoint = ENTRY_POINT_ADDRESSES["0.7"];
  await createPublicClient({ transport: http(devnet.anvilUrl) }).request({
    method: "anvil_setCode",
    params: [entryPoint, code],
  } as never);
  return { entryPoint, elsewhere };
}

/**
 * One bundle of three user operations with their own codes, behind the bundler's code `bundlerx`:
 * validation pays 3 (the bundler's), operation 0 pays 5 (`app_one`), operation 1's execution fails
 * and is reverted but its paymaster's postOp pays 2 (`app_two`), operation 2 pays 6 (`app_three`).
 * The same calldata is also sent to a MiniEntryPoint at another address (`lookalike`: no bundle).
 * Both are mined (after a flashblock when `flashblock`).
 */
export async function sendMixedBundle(
  devnet: Devnet,
  bundlerKey: number,
  funderKey: number,
  options: { flashblock?: boolean } = {},
): Promise<{ bundle: Hex; lookalike: Hex }> {
  const bundler = devnetSender(devnet, bundlerKey);
  await bundler.init();
  const { entryPoint, elsewhere } = await installEntryPoint(devnet, bundler);
  const deployed: Hex[] = [];
  for (let i = 0; i < 4; i++)
    deployed.push(await bundler.deploy(miniAccountAbi, miniAccountBytecode));
  await bundler.rpc("devnet_mine");
  const [alice, bob, factory, paymaster] = await Promise.all(
    deployed.map(
      async (hash) =>
        (await bundler.rpc<{ contractAddress: Address }>("eth_getTransactionReceipt", [hash]))
          .contractAddress,
    ),
  );
  const funder = devnetSender(devnet, funderKey);
  await funder.init();
  for (const account of [alice!, bob!, factory!, paymaster!]) await funder.transfer(account, 100n);
  await funder.rpc("devnet_mine");

  /** MiniAccount.execute paying BUNDLE_SHOP `value` of the token. */
  const pay = (value: bigint): Hex =>
    encodeFunctionData({
      abi: miniAccountAbi,
      functionName: "execute",
      args: [
        devnet.token,
        0n,
        encodeFunctionData({
          abi: flashTestTokenAbi,
          functionName: "transfer",
          args: [BUNDLE_SHOP, value],
        }),
      ],
    });
  const op = (
    account: Address,
    nonce: bigint,
    callData: Hex,
    extra: { initCode?: Hex; paymasterAndData?: Hex } = {},
  ) => ({
    sender: account,
    nonce,
    initCode: extra.initCode ?? ("0x" as Hex),
    callData,
    accountGasLimits: toHex(0n, { size: 32 }),
    preVerificationGas: 0n,
    gasFees: toHex(0n, { size: 32 }),
    paymasterAndData: extra.paymasterAndData ?? ("0x" as Hex),
    signature: "0x" as Hex,
  });
  const ops = [
    // Validation (the factory's call) pays 3: no operation's, so the bundler's. Execution pays 5.
    op(alice!, 0n, concat([pay(5n), schema0Suffix(["app_one"])]), {
      initCode: concat([factory!, pay(3n)]),
    }),
    // Execution fails (more than bob holds) and is reverted; the paymaster's postOp still pays 2.
    op(bob!, 1n << 64n, concat([pay(1_000n), schema2Suffix({ app: "app_two" })]), {
      paymasterAndData: concat([paymaster!, pay(2n)]),
    }),
    op(alice!, 1n, concat([pay(6n), schema0Suffix(["app_three"])])),
  ];
  const calldata = concat([
    encodeFunctionData({
      abi: miniEntryPointAbi,
      functionName: "handleOps",
      args: [ops, bundler.address],
    }),
    schema0Suffix(["bundlerx"]),
  ]);
  const bundle = await bundler.send(entryPoint, calldata);
  const lookalike = await bundler.send(elsewhere, calldata);
  if (options.flashblock === true) await bundler.rpc("devnet_flashblock");
  await bundler.rpc("devnet_mine");
  return { bundle, lookalike };
}

/** What sendMixedBundle's transactions must be credited with, once stored and mapped. */
export async function expectMixedBundleCredited(
  db: TableReader,
  { bundle, lookalike }: { bundle: Hex; lookalike: Hex },
): Promise<void> {
  expect(
    await db.all(
      "SELECT user_operations, operation_logs, operation_logs_error FROM transactions WHERE tx_hash = ?",
      [bundle],
    ),
  ).toEqual([{ user_operations: 3, operation_logs: "mapped", operation_logs_error: null }]);
  const credited = async (hash: Hex) =>
    db.all<{ value: string; code: string; op_index: number }>(
      "SELECT value, code, op_index FROM attributed_transfers WHERE tx_hash = ? ORDER BY log_index, code",
      [hash],
    );
  expect(await credited(bundle)).toEqual([
    { value: "3", code: "bundlerx", op_index: -1 },
    { value: "5", code: "app_one", op_index: 0 },
    { value: "2", code: "app_two", op_index: 1 },
    { value: "6", code: "app_three", op_index: 2 },
  ]);
  // The same calldata to a contract that is no configured EntryPoint is no bundle: its codes are the transaction's own.
  expect(
    await db.all("SELECT user_operations, operation_logs FROM transactions WHERE tx_hash = ?", [
      lookalike,
    ]),
  ).toEqual([{ user_operations: 0, operation_logs: null }]);
  expect((await credited(lookalike)).map((row) => [row.value, row.code])).toEqual([
    ["3", "bundlerx"],
    ["5", "bundlerx"],
    ["2", "bundlerx"],
    ["6", "bundlerx"],
  ]);
  expect(
    await db.all(
      "SELECT code, payments, CAST(volume AS REAL) AS volume FROM builder_code_volume ORDER BY code",
    ),
  ).toEqual([
    { code: "app_one", payments: 1, volume: 5 },
    { code: "app_three", payments: 1, volume: 6 },
    { code: "app_two", payments: 1, volume: 2 },
    { code: "bundlerx", payments: 5, volume: 19 },
  ]);
}
