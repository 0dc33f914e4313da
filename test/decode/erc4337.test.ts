import { Attribution as OxAttribution } from "ox/erc8021";
import {
  concat,
  encodeFunctionData,
  getAbiItem,
  isAddress,
  pad,
  parseAbi,
  toFunctionSelector,
  type Hex,
} from "viem";
import {
  entryPoint06Abi,
  entryPoint07Abi,
  entryPoint08Abi,
  entryPoint09Abi,
} from "viem/account-abstraction";
import { describe, expect, test } from "vitest";
import { attributeTransaction } from "../../src/decode/attributeTransaction.js";
import {
  decodeHandleOps,
  ENTRY_POINT_ADDRESSES,
  HANDLE_AGGREGATED_OPS_V06_SELECTOR,
  HANDLE_AGGREGATED_OPS_V07_SELECTOR,
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
const EP07 = ENTRY_POINT_ADDRESSES["0.7"];
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

/** A v0.6 UserOperation paying through `callData`; `i` picks the sender. */
function userOpV06(callData: Hex, i: number, sender: Hex = SENDERS[i % SENDERS.length] as Hex) {
  return {
    sender,
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
  };
}

/** A v0.7 PackedUserOperation paying through `callData`; `i` picks the sender. */
function userOpV07(callData: Hex, i: number, sender: Hex = SENDERS[i % SENDERS.length] as Hex) {
  return {
    sender,
    nonce: BigInt(i) << 64n,
    initCode: EMPTY,
    callData,
    accountGasLimits: pad("0x030d40000186a0"),
    preVerificationGas: 50_000n,
    gasFees: pad("0x0f424000000000003b9aca00"),
    paymasterAndData: PAYMASTER_AND_DATA,
    signature: SIGNATURE,
  };
}

const AGGREGATORS = [
  "0x000000000000000000000000000000000000a991",
  "0x000000000000000000000000000000000000a992",
  "0x000000000000000000000000000000000000A993",
] as const;

/** One aggregator group per entry of `groups`: that group's user operations as [callData, sender]. */
type Groups = ReadonlyArray<ReadonlyArray<readonly [Hex, Hex]>>;

/** handleAggregatedOps with viem's copy of the eth-infinitism v0.6 EntryPoint ABI. */
function handleAggregatedOpsV06(groups: Groups): Hex {
  return encodeFunctionData({
    abi: entryPoint06Abi,
    functionName: "handleAggregatedOps",
    args: [
      groups.map((ops, g) => ({
        userOps: ops.map(([callData, sender], i) => userOpV06(callData, i, sender)),
        aggregator: AGGREGATORS[g % AGGREGATORS.length] as Hex,
        signature: `0x${"ee".repeat(96)}` as Hex,
      })),
      BENEFICIARY,
    ],
  });
}

/** handleAggregatedOps with viem's copy of an eth-infinitism v0.7+ EntryPoint ABI. */
function handleAggregatedOpsV07(
  groups: Groups,
  abi: typeof entryPoint07Abi | typeof entryPoint08Abi | typeof entryPoint09Abi = entryPoint07Abi,
): Hex {
  return encodeFunctionData({
    abi: abi as typeof entryPoint07Abi,
    functionName: "handleAggregatedOps",
    args: [
      groups.map((ops, g) => ({
        userOps: ops.map(([callData, sender], i) => userOpV07(callData, i, sender)),
        aggregator: AGGREGATORS[g % AGGREGATORS.length] as Hex,
        signature: `0x${"ee".repeat(48)}` as Hex,
      })),
      BENEFICIARY,
    ],
  });
}

/** Three groups (the middle one empty, the last with two operations) over the four sample callDatas. */
const GROUPS: Groups = [
  [[opCallData[0] as Hex, SENDERS[0]]],
  [],
  [
    [opCallData[1] as Hex, SENDERS[1]],
    [opCallData[2] as Hex, SENDERS[2]],
  ],
  [[accountCall(OxAttribution.toDataSuffix({ codes: ["fourth"] })), SENDERS[0]]],
];

/** What decodeHandleOps() should return for GROUPS: indices run across groups, in calldata order. */
const GROUPS_DECODED = [
  { index: 0, sender: SENDERS[0], callData: opCallData[0], aggregator: AGGREGATORS[0] },
  {
    index: 1,
    sender: SENDERS[1].toLowerCase(),
    callData: opCallData[1],
    aggregator: AGGREGATORS[2].toLowerCase(),
  },
  {
    index: 2,
    sender: SENDERS[2],
    callData: opCallData[2],
    aggregator: AGGREGATORS[2].toLowerCase(),
  },
  { index: 3, sender: SENDERS[0], callData: GROUPS[3]?.[0]?.[0], aggregator: AGGREGATORS[0] },
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
      toFunctionSelector(
        "handleOps((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes)[],address)",
      ),
    ).toBe(HANDLE_OPS_V07_SELECTOR);
    expect(toFunctionSelector(entryPointV06Abi[0])).toBe(HANDLE_OPS_V06_SELECTOR);
    expect(toFunctionSelector(entryPointV07Abi[0])).toBe(HANDLE_OPS_V07_SELECTOR);
  });

  test("the hard-coded handleAggregatedOps selectors match their signatures and the real EntryPoint ABIs", () => {
    expect(
      toFunctionSelector(
        "handleAggregatedOps(((address,uint256,bytes,bytes,uint256,uint256,uint256,uint256,uint256,bytes,bytes)[],address,bytes)[],address)",
      ),
    ).toBe(HANDLE_AGGREGATED_OPS_V06_SELECTOR);
    expect(
      toFunctionSelector(
        "handleAggregatedOps(((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes)[],address,bytes)[],address)",
      ),
    ).toBe(HANDLE_AGGREGATED_OPS_V07_SELECTOR);
    expect(HANDLE_AGGREGATED_OPS_V06_SELECTOR).toBe("0x4b1d7cf5");
    expect(HANDLE_AGGREGATED_OPS_V07_SELECTOR).toBe("0xdbed18e0");
    const selector = (
      abi: typeof entryPoint06Abi | typeof entryPoint07Abi,
      name: "handleOps" | "handleAggregatedOps",
    ) => toFunctionSelector(getAbiItem({ abi: abi as typeof entryPoint07Abi, name }));
    expect(selector(entryPoint06Abi, "handleOps")).toBe(HANDLE_OPS_V06_SELECTOR);
    expect(selector(entryPoint06Abi, "handleAggregatedOps")).toBe(
      HANDLE_AGGREGATED_OPS_V06_SELECTOR,
    );
    for (const abi of [entryPoint07Abi, entryPoint08Abi, entryPoint09Abi]) {
      expect(selector(abi as typeof entryPoint07Abi, "handleOps")).toBe(HANDLE_OPS_V07_SELECTOR);
      expect(selector(abi as typeof entryPoint07Abi, "handleAggregatedOps")).toBe(
        HANDLE_AGGREGATED_OPS_V07_SELECTOR,
      );
    }
  });

  test("the EntryPoint addresses are valid checksummed addresses", () => {
    for (const address of Object.values(ENTRY_POINT_ADDRESSES))
      expect(isAddress(address, { strict: true })).toBe(true);
  });

  test.each([
    ["v0.6", handleOpsV06, 0n],
    ["v0.7/v0.8", handleOpsV07, 64n],
  ])(
    "a %s bundle yields each user operation's index, sender, nonce and callData",
    (_, encode, nonceShift) => {
      expect(decodeHandleOps(encode(opCallData))).toEqual(
        opCallData.map((callData, index) => ({
          index,
          sender: SENDERS[index]?.toLowerCase(),
          nonce: BigInt(index) << nonceShift,
          callData,
        })),
      );
    },
  );

  test.each([
    ["v0.6", (groups: Groups) => handleAggregatedOpsV06(groups), 0n],
    ["v0.7", (groups: Groups) => handleAggregatedOpsV07(groups, entryPoint07Abi), 64n],
    ["v0.8", (groups: Groups) => handleAggregatedOpsV07(groups, entryPoint08Abi), 64n],
    ["v0.9", (groups: Groups) => handleAggregatedOpsV07(groups, entryPoint09Abi), 64n],
  ])(
    "a %s handleAggregatedOps bundle numbers its user operations across aggregator groups, with sender and aggregator",
    (_, encode, nonceShift) => {
      // userOpV06/V07 number nonces within their group: GROUPS' operations sit at 0, 0, 1 and 0.
      const nonces = [0n, 0n, 1n, 0n].map((i) => i << nonceShift);
      expect(decodeHandleOps(encode(GROUPS))).toEqual(
        GROUPS_DECODED.map((op, i) => ({ ...op, nonce: nonces[i] })),
      );
    },
  );

  test("handleAggregatedOps with no groups, or only empty groups, has no user operations", () => {
    expect(decodeHandleOps(handleAggregatedOpsV06([]))).toEqual([]);
    expect(decodeHandleOps(handleAggregatedOpsV07([[], []]))).toEqual([]);
  });

  test("a v0.6 aggregated bundle is not read with the v0.7 layout, nor the other way round", () => {
    // Same groups, other version's selector: the tuple shapes differ, so decoding must fail or differ.
    const v06 = handleAggregatedOpsV06(GROUPS);
    const v07 = handleAggregatedOpsV07(GROUPS);
    const swapped06 = `${HANDLE_AGGREGATED_OPS_V07_SELECTOR}${v06.slice(10)}` as Hex;
    const swapped07 = `${HANDLE_AGGREGATED_OPS_V06_SELECTOR}${v07.slice(10)}` as Hex;
    const withoutNonce = (ops: ReturnType<typeof decodeHandleOps>) =>
      ops?.map(({ nonce: _, ...op }) => op);
    expect(withoutNonce(decodeHandleOps(swapped06))).not.toEqual(GROUPS_DECODED);
    expect(withoutNonce(decodeHandleOps(swapped07))).not.toEqual(GROUPS_DECODED);
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
    expect(
      decodeHandleOps(encodeFunctionData({ abi: usdcAbi, args: [BENEFICIARY, 1n] })),
    ).toBeUndefined();
  });

  test.each([
    ["v0.6", handleOpsV06],
    ["v0.7/v0.8", handleOpsV07],
    ["aggregated v0.6", () => handleAggregatedOpsV06(GROUPS)],
    ["aggregated v0.7", () => handleAggregatedOpsV07(GROUPS)],
  ])("truncated %s bundles return undefined", (_, encode) => {
    const full = encode(opCallData);
    const size = (full.length - 2) / 2;
    // Cut anywhere before the last operation's signature ends (a cut inside its final padding may still decode).
    for (const keep of [4, 5, 36, 68, 100, Math.floor(size / 3), Math.floor(size / 2), size - 96]) {
      expect(
        decodeHandleOps(full.slice(0, 2 + keep * 2) as Hex),
        `first ${keep} bytes`,
      ).toBeUndefined();
    }
  });

  test("garbage after a handleOps selector returns undefined without throwing", () => {
    let state = 4337;
    const byte = () => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return (state >> 16) & 0xff;
    };
    const selectors = [
      HANDLE_OPS_V06_SELECTOR,
      HANDLE_OPS_V07_SELECTOR,
      HANDLE_AGGREGATED_OPS_V06_SELECTOR,
      HANDLE_AGGREGATED_OPS_V07_SELECTOR,
    ];
    for (let i = 0; i < 600; i++) {
      const selector = selectors[i % selectors.length] as Hex;
      const body = Array.from({ length: (i * 7) % 400 }, () =>
        byte().toString(16).padStart(2, "0"),
      ).join("");
      expect(decodeHandleOps(`${selector}${body}`)).toBeUndefined();
    }
    expect(
      decodeHandleOps(`${HANDLE_OPS_V07_SELECTOR}zz${handleOpsV07(opCallData).slice(12)}` as Hex),
    ).toBeUndefined();
    expect(decodeHandleOps(`${handleOpsV07(opCallData)}0` as Hex)).toBeUndefined();
    expect(decodeHandleOps(42 as unknown as Hex)).toBeUndefined();
  });

  test("garbage spliced into a real aggregated bundle returns undefined or well-typed operations, never throws", () => {
    let state = 6;
    const next = (max: number) => {
      state = (state * 1103515245 + 12345) % 2 ** 31;
      return (state >> 8) % max;
    };
    const bundles = [handleAggregatedOpsV06(GROUPS), handleAggregatedOpsV07(GROUPS)];
    for (let i = 0; i < 400; i++) {
      const bundle = bundles[i % 2] as Hex;
      // Overwrite one 32-byte word (an offset, a length or a count) with a random value.
      const wordIndex = next((bundle.length - 10) / 64);
      const value = [0, 1, 0x20, 0xffffffff, next(4096), next(2 ** 30)][next(6)] as number;
      const at = 10 + wordIndex * 64;
      const mutated =
        `${bundle.slice(0, at)}${value.toString(16).padStart(64, "0")}${bundle.slice(at + 64)}` as Hex;
      let result: ReturnType<typeof decodeHandleOps>;
      expect(() => {
        result = decodeHandleOps(mutated);
      }).not.toThrow();
      for (const [index, op] of (result ?? []).entries()) {
        expect(op.index).toBe(index);
        expect(op.sender).toMatch(/^0x[0-9a-f]{40}$/);
        expect(op.aggregator).toMatch(/^0x[0-9a-f]{40}$/);
      }
    }
  });

  test("many group offsets pointing at one aggregator group (an ABI bomb) are refused", () => {
    const word = (value: number) => value.toString(16).padStart(64, "0");
    const full = handleAggregatedOpsV06([GROUPS[0] ?? []]);
    // Layout after the selector: offset of groups (0x40), beneficiary, group count, one group offset, the group.
    const group = full.slice(10 + 0x80 * 2);
    const shared = (count: number) =>
      `${HANDLE_AGGREGATED_OPS_V06_SELECTOR}${word(0x40)}${word(0)}${word(count)}${word(count * 32).repeat(count)}${group}` as Hex;
    expect(decodeHandleOps(shared(3))).toHaveLength(3);
    expect(decodeHandleOps(shared(3))?.map((op) => op.index)).toEqual([0, 1, 2]);
    expect(decodeHandleOps(shared(3000))).toBeUndefined();
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
    const input = concat([
      handleOpsV07(opCallData),
      OxAttribution.toDataSuffix({ codes: ["bundler"] }),
    ]);
    const result = attributeTransaction({ input, to: EP07 });
    expect(result.attribution).toMatchObject({
      kind: "codes",
      codes: [{ code: "bundler", role: "code" }],
    });
    expect(result.userOperations).toEqual([
      {
        userOpIndex: 0,
        sender: SENDERS[0],
        nonce: 0n,
        attribution: expect.objectContaining({
          kind: "codes",
          codes: [{ code: "baseapp", role: "code" }],
        }),
      },
      {
        userOpIndex: 1,
        sender: SENDERS[1].toLowerCase(),
        nonce: 1n << 64n,
        attribution: { kind: "none" },
      },
      {
        userOpIndex: 2,
        sender: SENDERS[2],
        nonce: 2n << 64n,
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

  test("an aggregated bundle yields one attribution per user operation, numbered across groups", () => {
    const result = attributeTransaction({ input: handleAggregatedOpsV07(GROUPS), to: EP07 });
    expect(result.attribution).toEqual({ kind: "none" });
    expect(
      result.userOperations?.map((op) => [
        op.userOpIndex,
        op.sender,
        op.aggregator,
        op.attribution.kind,
      ]),
    ).toEqual([
      [0, SENDERS[0], AGGREGATORS[0], "codes"],
      [1, SENDERS[1].toLowerCase(), AGGREGATORS[2].toLowerCase(), "none"],
      [2, SENDERS[2], AGGREGATORS[2].toLowerCase(), "codes"],
      [3, SENDERS[0], AGGREGATORS[0], "codes"],
    ]);
    expect(result.userOperations?.[3]?.attribution).toMatchObject({
      codes: [{ code: "fourth", role: "code" }],
    });
  });

  test("a plain transaction yields its own suffix and no user operations", () => {
    const result = attributeTransaction({ input: opCallData[0] as Hex, to: USDC });
    expect(result).toEqual({
      attribution: expect.objectContaining({
        kind: "codes",
        codes: [{ code: "baseapp", role: "code" }],
      }),
      userOperations: undefined,
    });
    expect(attributeTransaction({ input: "0x", to: null })).toEqual({
      attribution: { kind: "none" },
      userOperations: undefined,
    });
  });

  test("handleOps calldata sent to an address that is not a known EntryPoint is no bundle", () => {
    const input = concat([
      handleOpsV07(opCallData),
      OxAttribution.toDataSuffix({ codes: ["bundler"] }),
    ]);
    const elsewhere = attributeTransaction({
      input,
      to: "0x4444444444444444444444444444444444444444",
    });
    expect(elsewhere).toEqual({
      attribution: expect.objectContaining({ codes: [{ code: "bundler", role: "code" }] }),
      userOperations: undefined,
    });
    // The same calldata to a configured EntryPoint (any case) is a bundle.
    expect(
      attributeTransaction({ input, to: "0x4444444444444444444444444444444444444444" }, [
        "0x4444444444444444444444444444444444444444",
      ]).userOperations,
    ).toHaveLength(3);
    expect(
      attributeTransaction({ input, to: ENTRY_POINT_ADDRESSES["0.8"] }).userOperations,
    ).toHaveLength(3);
  });
});
