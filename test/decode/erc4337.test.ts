import { Attribution as OxAttribution } from "ox/erc8021";
import { concat, encodeFunctionData, isAddress, pad, parseAbi, toFunctionSelector, type Hex } from "viem";
import { describe, expect, test } from "vitest";
import { attributeTransaction } from "../../src/decode/attributeTransaction.js";
import {
  decodeHandleOps,
  ENTRY_POINT_ADDRESSES,
  HANDLE_OPS_V06_SELECTOR,
  HANDLE_OPS_V07_SELECTOR,
} from "../../src/decode/erc4337.js";

const entryPointV06Abi = parseAbi([
  "struct UserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; uint256 callGasLimit; uint256 verificationGasLimit; uint256 preVerificationGas; uint256 maxFeePerGas; uint256 maxPriorityFeePerGas; bytes paymasterAndData; bytes signature; }",
  "function handleOps(UserOperation[] ops, address beneficiary)",
]);
const entryPointV07Abi = parseAbi([
  "struct PackedUserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }",
  "function handleOps(PackedUserOperation[] ops, address beneficiary)",
]);
const accountAbi = parseAbi(["function execute(address dest, uint256 value, bytes func)"]);
const usdcAbi = parseAbi(["function transfer(address to, uint256 value)"]);

const SENDERS = [
  "0x1111111111111111111111111111111111111111",
  "0xabCDeF0123456789AbcdEf0123456789aBCDEF01",
  "0x2222222222222222222222222222222222222222",
] as const;
const BENEFICIARY = "0x3333333333333333333333333333333333333333";
const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const EMPTY: Hex = "0x";
const SIGNATURE: Hex = `0x${"ab".repeat(65)}`;
const PAYMASTER_AND_DATA: Hex = `0x${"cd".repeat(52)}`;

/** An account `execute` that pays USDC, optionally followed by an ERC-8021 suffix. */
function accountCall(suffix?: Hex): Hex {
  const transfer = encodeFunctionData({ abi: usdcAbi, args: [BENEFICIARY, 1_000_000n] });
  const call = encodeFunctionData({ abi: accountAbi, args: [USDC, 0n, transfer] });
  return suffix === undefined ? call : concat([call, suffix]);
}

const opCallData = [
  accountCall(OxAttribution.toDataSuffix({ codes: ["baseapp"] })),
  accountCall(),
  accountCall(OxAttribution.toDataSuffix({ appCode: "bc_b8nos5a8", walletCode: "privy" })),
];

function handleOpsV06(callDatas: readonly Hex[]): Hex {
  return encodeFunctionData({
    abi: entryPointV06Abi,
    args: [
      callDatas.map((callData, i) => ({
        sender: SENDERS[i % SENDERS.length] as Hex,
        nonce: BigInt(i),
        initCode: EMPTY,
        callData,
        callGasLimit: 100_000n,
        verificationGasLimit: 200_000n,
        preVerificationGas: 50_000n,
        maxFeePerGas: 1_000_000_000n,
        maxPriorityFeePerGas: 1_000_000n,
        paymasterAndData: EMPTY,
        signature: SIGNATURE,
      })),
      BENEFICIARY,
    ],
  });
}

function handleOpsV07(callDatas: readonly Hex[]): Hex {
  return encodeFunctionData({
    abi: entryPointV07Abi,
    args: [
      callDatas.map((callData, i) => ({
        sender: SENDERS[i % SENDERS.length] as Hex,
        nonce: BigInt(i) << 64n,
        initCode: EMPTY,
        callData,
        accountGasLimits: pad("0x030d40000186a0"),
        preVerificationGas: 50_000n,
        gasFees: pad("0x0f424000000000003b9aca00"),
        paymasterAndData: PAYMASTER_AND_DATA,
        signature: SIGNATURE,
      })),
      BENEFICIARY,
    ],
  });
}

describe("decodeHandleOps()", () => {
  test("the hard-coded selectors are those of both handleOps signatures", () => {
    expect(
      toFunctionSelector(
        "handleOps((address,uint256,bytes,bytes,uint256,uint256,uint256,uint256,uint256,bytes,bytes)[],address)",
      ),
    ).toBe(HANDLE_OPS_V06_SELECTOR);
    expect(
      toFunctionSelector("handleOps((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes)[],address)"),
    ).toBe(HANDLE_OPS_V07_SELECTOR);
    expect(toFunctionSelector(entryPointV06Abi[0])).toBe(HANDLE_OPS_V06_SELECTOR);
    expect(toFunctionSelector(entryPointV07Abi[0])).toBe(HANDLE_OPS_V07_SELECTOR);
  });

  test("the EntryPoint addresses are valid checksummed addresses", () => {
    for (const address of Object.values(ENTRY_POINT_ADDRESSES)) expect(isAddress(address, { strict: true })).toBe(true);
  });

  test.each([
    ["v0.6", handleOpsV06],
    ["v0.7/v0.8", handleOpsV07],
  ])("a %s bundle yields each user operation's index, sender and callData", (_, encode) => {
    expect(decodeHandleOps(encode(opCallData))).toEqual(
      opCallData.map((callData, index) => ({ index, sender: SENDERS[index]?.toLowerCase(), callData })),
    );
  });

  test("a bundle with upper-case hex and a bundle with no operations decode too", () => {
    const upper = `0x${handleOpsV07(opCallData).slice(2).toUpperCase()}` as Hex;
    expect(decodeHandleOps(upper)?.map((op) => op.callData)).toEqual(opCallData);
    expect(decodeHandleOps(handleOpsV06([]))).toEqual([]);
  });

  test("calls to other functions return undefined", () => {
    expect(decodeHandleOps("0x")).toBeUndefined();
    expect(decodeHandleOps("0x1fad94")).toBeUndefined();
    expect(decodeHandleOps(opCallData[0] as Hex)).toBeUndefined();
    expect(decodeHandleOps(encodeFunctionData({ abi: usdcAbi, args: [BENEFICIARY, 1n] }))).toBeUndefined();
  });

  test.each([
    ["v0.6", handleOpsV06],
    ["v0.7/v0.8", handleOpsV07],
  ])("truncated %s bundles return undefined", (_, encode) => {
    const full = encode(opCallData);
    const size = (full.length - 2) / 2;
    // Cut anywhere before the last operation's signature ends (a cut inside its final padding may still decode).
    for (const keep of [4, 5, 36, 68, 100, Math.floor(size / 3), Math.floor(size / 2), size - 96]) {
      expect(decodeHandleOps(full.slice(0, 2 + keep * 2) as Hex), `first ${keep} bytes`).toBeUndefined();
    }
  });

  test("garbage after a handleOps selector returns undefined without throwing", () => {
    let state = 4337;
    const byte = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return (state >> 16) & 0xff;
    };
    for (let i = 0; i < 300; i++) {
      const selector = i % 2 === 0 ? HANDLE_OPS_V06_SELECTOR : HANDLE_OPS_V07_SELECTOR;
      const body = Array.from({ length: (i * 7) % 400 }, () => byte().toString(16).padStart(2, "0")).join("");
      expect(decodeHandleOps(`${selector}${body}`)).toBeUndefined();
    }
    expect(decodeHandleOps(`${HANDLE_OPS_V07_SELECTOR}zz${handleOpsV07(opCallData).slice(12)}` as Hex)).toBeUndefined();
    expect(decodeHandleOps(`${handleOpsV07(opCallData)}0` as Hex)).toBeUndefined();
    expect(decodeHandleOps(42 as unknown as Hex)).toBeUndefined();
  });

  test("many offsets pointing at one user operation (an ABI bomb) are refused", () => {
    // ops = [N offset words all pointing at one encoded tuple]; a real bundle never shares a tuple.
    const word = (value: number) => value.toString(16).padStart(64, "0");
    const tuple = handleOpsV06([opCallData[0] as Hex]).slice(10 + 0x80 * 2);
    const shared = (count: number) =>
      `${HANDLE_OPS_V06_SELECTOR}${word(0x40)}${word(0)}${word(count)}${word(count * 32).repeat(count)}${tuple}` as Hex;
    expect(decodeHandleOps(shared(10))).toHaveLength(10);
    // viem's cursor stops after 8,192 re-reads of the same positions.
    expect(decodeHandleOps(shared(2000))).toBeUndefined();
  });
});

describe("attributeTransaction()", () => {
  test("a bundle yields the bundler's suffix and one attribution per user operation", () => {
    const input = concat([handleOpsV07(opCallData), OxAttribution.toDataSuffix({ codes: ["bundler"] })]);
    const result = attributeTransaction({ input });
    expect(result.attribution).toMatchObject({ kind: "codes", codes: [{ code: "bundler", role: "code" }] });
    expect(result.userOperations).toEqual([
      { userOpIndex: 0, sender: SENDERS[0], attribution: expect.objectContaining({ kind: "codes", codes: [{ code: "baseapp", role: "code" }] }) },
      { userOpIndex: 1, sender: SENDERS[1].toLowerCase(), attribution: { kind: "none" } },
      {
        userOpIndex: 2,
        sender: SENDERS[2],
        attribution: expect.objectContaining({
          schemaId: 2,
          codes: [
            { code: "bc_b8nos5a8", role: "app" },
            { code: "privy", role: "wallet" },
          ],
        }),
      },
    ]);
  });

  test("a plain transaction yields its own suffix and no user operations", () => {
    const result = attributeTransaction({ input: opCallData[0] as Hex });
    expect(result).toEqual({
      attribution: expect.objectContaining({ kind: "codes", codes: [{ code: "baseapp", role: "code" }] }),
      userOperations: undefined,
    });
    expect(attributeTransaction({ input: "0x" })).toEqual({ attribution: { kind: "none" }, userOperations: undefined });
  });
});
