import {
  getAddress,
  parseSignature,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { EIP3009_ABI } from "./eip3009Abi.js";

// The data model owns the topic0 values (rows/paymentEvents.ts); re-exported so tests of the token need one import.
export {
  AUTHORIZATION_CANCELED_TOPIC,
  AUTHORIZATION_USED_TOPIC,
  TRANSFER_TOPIC,
} from "../rows/paymentEvents.js";

/** Fields shared by TransferWithAuthorization and ReceiveWithAuthorization. */
const TRANSFER_AUTHORIZATION_FIELDS = [
  { name: "from", type: "address" },
  { name: "to", type: "address" },
  { name: "value", type: "uint256" },
  { name: "validAfter", type: "uint256" },
  { name: "validBefore", type: "uint256" },
  { name: "nonce", type: "bytes32" },
] as const;

/** EIP-712 types of FiatToken v2.2's (USDC's) EIP-3009 authorizations and their cancellation. */
export const AUTHORIZATION_TYPES = {
  TransferWithAuthorization: TRANSFER_AUTHORIZATION_FIELDS,
  ReceiveWithAuthorization: TRANSFER_AUTHORIZATION_FIELDS,
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

export type TokenDomain = {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: Address;
};
/** The message of TransferWithAuthorization and ReceiveWithAuthorization; times in unix seconds. */
export type TransferAuthorization = {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
};
export type CancelAuthorizationMessage = { authorizer: Address; nonce: Hex };
/** A 65-byte signature (r ‖ s ‖ v) and its parts, for the `bytes signature` and the v,r,s overloads. */
export type SignedParts = { signature: Hex; v: number; r: Hex; s: Hex };

/**
 * The token's EIP-712 domain: name() and version() read from the contract (never hard-coded: USDC's
 * name differs per chain), the given chain id (a verified one) or the node's, the token as verifying
 * contract. The one reader: the daemon's commands call it over their RpcClient (tokenReads.ts).
 */
export async function readTokenDomain(
  client: PublicClient,
  token: Address,
  chainId?: number,
): Promise<TokenDomain> {
  const [name, version, servedChainId] = await Promise.all([
    client.readContract({ address: token, abi: EIP3009_ABI, functionName: "name" }),
    client.readContract({ address: token, abi: EIP3009_ABI, functionName: "version" }),
    chainId ?? client.getChainId(),
  ]);
  return { name, version, chainId: servedChainId, verifyingContract: getAddress(token) };
}

/**
 * The v FiatToken accepts (ECRecover.sol: 27 or 28): 0/1 (a yParity, as some signers produce) map
 * onto 27/28; anything else is returned as is for the caller to refuse. The one normalisation of v.
 */
export function toTokenV(v: number): number {
  return v === 0 || v === 1 ? v + 27 : v;
}

function split(signature: Hex): SignedParts {
  const { r, s, v, yParity } = parseSignature(signature);
  return { signature, r, s, v: toTokenV(Number(v ?? yParity ?? 0)) };
}

/** Signs a TransferWithAuthorization: anyone holding the signature may submit it. */
export async function signTransferAuthorization(
  account: LocalAccount,
  domain: TokenDomain,
  message: TransferAuthorization,
): Promise<SignedParts> {
  return split(
    await account.signTypedData({
      domain,
      types: AUTHORIZATION_TYPES,
      primaryType: "TransferWithAuthorization",
      message,
    }),
  );
}

/** Signs a ReceiveWithAuthorization: only `message.to` may submit it (no front-running). */
export async function signReceiveAuthorization(
  account: LocalAccount,
  domain: TokenDomain,
  message: TransferAuthorization,
): Promise<SignedParts> {
  return split(
    await account.signTypedData({
      domain,
      types: AUTHORIZATION_TYPES,
      primaryType: "ReceiveWithAuthorization",
      message,
    }),
  );
}

/** Signs a CancelAuthorization, which burns `message.nonce` so no authorization with it can be captured. */
export async function signCancelAuthorization(
  account: LocalAccount,
  domain: TokenDomain,
  message: CancelAuthorizationMessage,
): Promise<SignedParts> {
  return split(
    await account.signTypedData({
      domain,
      types: AUTHORIZATION_TYPES,
      primaryType: "CancelAuthorization",
      message,
    }),
  );
}
