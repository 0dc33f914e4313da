import { decodeFunctionResult, encodeFunctionData, type Address, type Hex } from "viem";
import type { RpcClient } from "../chain/rpcClient.js";
import { RetryableError } from "../errors/base.js";
import { EIP3009_ABI } from "./eip3009Abi.js";
import { readTokenDomain, type TokenDomain } from "./eip3009.js";
import { withViem } from "../chain/viemOverRpcClient.js";

/** The FiatToken v2.2 functions read here (the devnet's test token has the same signatures). */
const abi = EIP3009_ABI;

function parseHex(result: unknown): Hex {
  // Note: a node may answer "0x" for a call to an address without code; that is garbage for us.
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]+$/.test(result) || result === "0x")
    throw new RetryableError(`eth_call returned ${JSON.stringify(result)} instead of ABI data`);
  return result as Hex;
}

async function call(client: RpcClient, token: Address, data: Hex, blockTag: string): Promise<Hex> {
  return client.request("eth_call", [{ to: token, data }, blockTag], parseHex);
}

/** The token's EIP-712 domain (readTokenDomain) read over the project's RPC client, with the configured, verified chain id. */
export async function readTokenDomainOverRpc(
  client: RpcClient,
  token: Address,
  chainId: number,
): Promise<TokenDomain> {
  return withViem(client, (viem) => readTokenDomain(viem, token, chainId));
}

/** `authorizationState(authorizer, nonce)`: true once the nonce is used or canceled. `blockTag` as in eth_call. */
export async function readAuthorizationState(
  client: RpcClient,
  token: Address,
  authorizer: Address,
  nonce: Hex,
  blockTag = "latest",
): Promise<boolean> {
  const data = await call(
    client,
    token,
    encodeFunctionData({ abi, functionName: "authorizationState", args: [authorizer, nonce] }),
    blockTag,
  );
  return decodeFunctionResult({ abi, functionName: "authorizationState", data });
}
