import type { Hex } from "viem";
// ox's module, not viem's index (the same decoder): importing viem whole costs every command about 150 ms at start.
import { decode as decodeAbiParameters, from as parseAbiParameters } from "ox/AbiParameters";

/**
 * Well-known EntryPoint deployments (the same address on every chain). A transaction is read as a
 * bundle only when it calls one of `attribution.entryPoints` (these by default): a contract of any
 * other address can carry the same selector and calldata, and emit look-alike events.
 */
export const ENTRY_POINT_ADDRESSES = {
  "0.6": "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789",
  "0.7": "0x0000000071727De22E5E9d8BAf0edAc6f37da032",
  "0.8": "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108",
  "0.9": "0x433709009B8330FDa32311DF1C2AFA402eD8D009",
} as const satisfies Record<string, Hex>;

/** `BeforeExecution()`: emitted once per bundle after validation, before the first operation executes (v0.6 to v0.9). */
export const BEFORE_EXECUTION_TOPIC =
  "0xbb47ee3e183a558b1a2ff0874b079f3fc5478b7454eacf2bfc5af2ff5878f972";
/**
 * `UserOperationEvent(bytes32 indexed userOpHash, address indexed sender, address indexed paymaster,
 * uint256 nonce, bool success, uint256 actualGasCost, uint256 actualGasUsed)`: emitted once per
 * operation, after its execution and its paymaster's postOp (v0.6 to v0.9).
 */
export const USER_OPERATION_EVENT_TOPIC =
  "0x49628fd1471006c1482da88028e9ce4dbb080b815c9b0344d39e5a8e6ec1419f";

/** `handleOps((address,uint256,bytes,bytes,uint256,uint256,uint256,uint256,uint256,bytes,bytes)[],address)`, EntryPoint v0.6. */
export const HANDLE_OPS_V06_SELECTOR = "0x1fad948c";
/** `handleOps((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes)[],address)`, EntryPoint v0.7, v0.8 and v0.9 (PackedUserOperation). */
export const HANDLE_OPS_V07_SELECTOR = "0x765e827f";
/** `handleAggregatedOps(((UserOperation)[],address,bytes)[],address)`, EntryPoint v0.6. */
export const HANDLE_AGGREGATED_OPS_V06_SELECTOR = "0x4b1d7cf5";
/** `handleAggregatedOps(((PackedUserOperation)[],address,bytes)[],address)`, EntryPoint v0.7, v0.8 and v0.9. */
export const HANDLE_AGGREGATED_OPS_V07_SELECTOR = "0xdbed18e0";

const USER_OPERATION_V06_STRUCT =
  "struct UserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; uint256 callGasLimit; uint256 verificationGasLimit; uint256 preVerificationGas; uint256 maxFeePerGas; uint256 maxPriorityFeePerGas; bytes paymasterAndData; bytes signature; }";
const PACKED_USER_OPERATION_STRUCT =
  "struct UserOperation { address sender; uint256 nonce; bytes initCode; bytes callData; bytes32 accountGasLimits; uint256 preVerificationGas; bytes32 gasFees; bytes paymasterAndData; bytes signature; }";
const GROUP_STRUCT =
  "struct UserOpsPerAggregator { UserOperation[] userOps; address aggregator; bytes signature; }";

const HANDLE_OPS_V06_PARAMETERS = parseAbiParameters([
  USER_OPERATION_V06_STRUCT,
  "UserOperation[] ops, address beneficiary",
]);
const HANDLE_OPS_V07_PARAMETERS = parseAbiParameters([
  PACKED_USER_OPERATION_STRUCT,
  "UserOperation[] ops, address beneficiary",
]);
const HANDLE_AGGREGATED_OPS_V06_PARAMETERS = parseAbiParameters([
  USER_OPERATION_V06_STRUCT,
  GROUP_STRUCT,
  "UserOpsPerAggregator[] opsPerAggregator, address beneficiary",
]);
const HANDLE_AGGREGATED_OPS_V07_PARAMETERS = parseAbiParameters([
  PACKED_USER_OPERATION_STRUCT,
  GROUP_STRUCT,
  "UserOpsPerAggregator[] opsPerAggregator, address beneficiary",
]);

/**
 * One user operation of a bundle; `sender` is lowercase. `index` counts across the whole bundle:
 * for `handleAggregatedOps` it runs on through the aggregator groups in order, as the EntryPoint's
 * own `opIndex` does (the number its `FailedOp` errors report). `aggregator` (lowercase) is set only
 * for operations of a `handleAggregatedOps` group.
 */
export type UserOperationCall = {
  index: number;
  sender: Hex;
  nonce: bigint;
  callData: Hex;
  aggregator?: Hex;
};

type DecodedOp = { sender: Hex; nonce: bigint; callData: Hex };

/**
 * Returns the user operations of an EntryPoint `handleOps` or `handleAggregatedOps` call (v0.6,
 * v0.7, v0.8, v0.9), or undefined when `calldata` (`0x…` hex) is anything else or does not ABI-decode.
 * Never throws.
 */
export function decodeHandleOps(calldata: Hex): UserOperationCall[] | undefined {
  if (typeof calldata !== "string" || calldata.length < 10) return undefined;
  const selector = calldata.slice(0, 10).toLowerCase();
  const data: Hex = `0x${calldata.slice(10)}`;
  try {
    // ox bounds-checks every read and caps repeated reads of one position (ABI "bombs").
    switch (selector) {
      case HANDLE_OPS_V06_SELECTOR:
        return fromOps(decodeAbiParameters(HANDLE_OPS_V06_PARAMETERS, data)[0]);
      case HANDLE_OPS_V07_SELECTOR:
        return fromOps(decodeAbiParameters(HANDLE_OPS_V07_PARAMETERS, data)[0]);
      case HANDLE_AGGREGATED_OPS_V06_SELECTOR:
        return fromGroups(decodeAbiParameters(HANDLE_AGGREGATED_OPS_V06_PARAMETERS, data)[0]);
      case HANDLE_AGGREGATED_OPS_V07_SELECTOR:
        return fromGroups(decodeAbiParameters(HANDLE_AGGREGATED_OPS_V07_PARAMETERS, data)[0]);
      default:
        return undefined;
    }
  } catch {
    return undefined;
  }
}

function fromOps(ops: readonly DecodedOp[]): UserOperationCall[] {
  return ops.map((op, index) => ({
    index,
    sender: op.sender.toLowerCase() as Hex,
    nonce: op.nonce,
    callData: op.callData,
  }));
}

/** Flattens aggregator groups in calldata order, numbering operations across groups. */
function fromGroups(
  groups: ReadonlyArray<{ userOps: readonly DecodedOp[]; aggregator: Hex }>,
): UserOperationCall[] {
  const calls: UserOperationCall[] = [];
  for (const group of groups) {
    const aggregator = group.aggregator.toLowerCase() as Hex;
    for (const op of group.userOps) {
      calls.push({
        index: calls.length,
        sender: op.sender.toLowerCase() as Hex,
        nonce: op.nonce,
        callData: op.callData,
        aggregator,
      });
    }
  }
  return calls;
}
