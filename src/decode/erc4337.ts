import { decodeAbiParameters, parseAbiParameters, type Hex } from "viem";

/** Well-known EntryPoint deployments, for information: bundles are detected by selector, not address. */
export const ENTRY_POINT_ADDRESSES = {
  "0.6": "0x5FF137D4b0FDCD49DcA30c7CF57E578a026d2789",
  "0.7": "0x0000000071727De22E5E9d8BAf0edAc6f37da032",
  "0.8": "0x4337084D9E255Ff0702461CF8895CE9E3b5Ff108",
} as const satisfies Record<string, Hex>;

/** `handleOps((address,uint256,bytes,bytes,uint256,uint256,uint256,uint256,uint256,bytes,bytes)[],address)`, EntryPoint v0.6. */
export const HANDLE_OPS_V06_SELECTOR = "0x1fad948c";
/** `handleOps((address,uint256,bytes,bytes,bytes32,uint256,bytes32,bytes,bytes)[],address)`, EntryPoint v0.7 and v0.8 (PackedUserOperation). */
export const HANDLE_OPS_V07_SELECTOR = "0x765e827f";

const HANDLE_OPS_V06_PARAMETERS = parseAbiParameters(
  "(address sender, uint256 nonce, bytes initCode, bytes callData, uint256 callGasLimit, uint256 verificationGasLimit, uint256 preVerificationGas, uint256 maxFeePerGas, uint256 maxPriorityFeePerGas, bytes paymasterAndData, bytes signature)[] ops, address beneficiary",
);
const HANDLE_OPS_V07_PARAMETERS = parseAbiParameters(
  "(address sender, uint256 nonce, bytes initCode, bytes callData, bytes32 accountGasLimits, uint256 preVerificationGas, bytes32 gasFees, bytes paymasterAndData, bytes signature)[] ops, address beneficiary",
);

/** One user operation of a bundle; `index` is its position in `ops`, `sender` is lowercase. */
export type UserOperationCall = { index: number; sender: Hex; callData: Hex };

/**
 * Returns the user operations of an EntryPoint `handleOps` call (v0.6, v0.7, v0.8), or undefined
 * when `calldata` (`0x…` hex) is anything else or does not ABI-decode. Never throws.
 */
export function decodeHandleOps(calldata: Hex): UserOperationCall[] | undefined {
  if (typeof calldata !== "string" || calldata.length < 10) return undefined;
  const selector = calldata.slice(0, 10).toLowerCase();
  const isV06 = selector === HANDLE_OPS_V06_SELECTOR;
  if (!isV06 && selector !== HANDLE_OPS_V07_SELECTOR) return undefined;
  try {
    const data: Hex = `0x${calldata.slice(10)}`;
    // viem bounds-checks every read and caps repeated reads of one position (ABI "bombs").
    const [ops] = isV06
      ? decodeAbiParameters(HANDLE_OPS_V06_PARAMETERS, data)
      : decodeAbiParameters(HANDLE_OPS_V07_PARAMETERS, data);
    return ops.map((op, index) => ({ index, sender: op.sender.toLowerCase() as Hex, callData: op.callData }));
  } catch {
    return undefined;
  }
}
