import {
  BaseError as ViemBaseError,
  ContractFunctionRevertedError,
  HttpRequestError,
  InsufficientFundsError,
  TimeoutError,
  WaitForTransactionReceiptTimeoutError,
  encodeFunctionData,
  isAddressEqual,
  parseSignature,
  recoverTypedDataAddress,
  serializeSignature,
  type Address,
  type Hex,
  type LocalAccount,
  type PublicClient,
} from "viem";
import { EIP3009_ABI } from "./eip3009Abi.js";
import { AUTHORIZATION_TYPES, readTokenDomain, signCancelAuthorization, type TokenDomain } from "./eip3009.js";
import { BaseError, FatalError } from "../errors.js";
import {
  AlreadyCanceledError,
  AlreadyCapturedError,
  AlreadyUsedError,
  BadSignatureError,
  CancelNotAppliedError,
  CancelRevertedError,
  CancelTimeoutError,
  OutOfGasError,
  RelayerFundsError,
  RpcUnavailableError,
  WrongSignerError,
} from "./cancelErrors.js";
import type { IndexedStateLookup } from "./indexedAuthorizationState.js";

// The test token carries FiatToken v2.2's EIP-3009 ABI (protocol-notes §4), so its ABI serves any such token.
const abi = EIP3009_ABI;

/** Half the secp256k1 order: FiatToken's ECRecover refuses a higher s (EIP-2 malleability). */
const SECP256K1_HALF_N = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;
/** Headroom over eth_estimateGas for the gas limit, in percent. */
const GAS_LIMIT_HEADROOM_PERCENT = 20n;
/** How often the relay polls for the receipt and new blocks while waiting for confirmations. */
export const RECEIPT_POLL_INTERVAL_MS = 250;

/** Where the CancelAuthorization signature comes from: the buyer's key, or one the buyer made. */
export type CancelAuthority =
  | { kind: "key"; account: LocalAccount }
  /** 65 bytes r ‖ s ‖ v. */
  | { kind: "signature"; signature: Hex }
  | { kind: "vrs"; v: number; r: Hex; s: Hex };

export type CancelRequest = { token: Address; authorizer: Address; nonce: Hex; authority: CancelAuthority };

export type CancelRelayDeps = {
  client: PublicClient;
  /** The account that pays for and sends the transaction; a dry run may go without. */
  relayer: LocalAccount | undefined;
  /** Blocks to wait for, the receipt's block included. */
  confirmations: number;
  receiptTimeoutMs: number;
  pollingIntervalMs?: number;
  /** Tells captured from canceled when the nonce is already used; the chain alone cannot. */
  lookupIndexedState?: IndexedStateLookup;
  /** Called once the transaction is accepted by the node, before the wait for confirmations. */
  onSent?: (sent: { txHash: Hex; relayerNonce: number }) => void;
};

/** A cancellation that passed steps 1–3 and the simulation: nothing has been sent yet. */
export type PreparedCancel = {
  token: Address;
  authorizer: Address;
  nonce: Hex;
  domain: TokenDomain;
  signature: { v: number; r: Hex; s: Hex };
  /** The account the simulation ran as (the relayer, or the authorizer when there is none). */
  simulatedFrom: Address;
};

export type CancelCost = { gas: bigint; gasPriceWei: bigint; costWei: bigint };

export type CancelResult = {
  txHash: Hex;
  blockNumber: bigint;
  /** head − block + 1 when the relay returned; at least the configured confirmations. */
  confirmations: number;
  relayerNonce: number;
  gasUsed: bigint;
  authorizationState: boolean;
};

/**
 * Steps 1–3 and the simulation: reads the domain from the contract, checks the signer is the authorizer,
 * checks the nonce is unused, then simulates cancelAuthorization. Sends nothing; every refusal is thrown.
 */
export async function prepareCancel(deps: CancelRelayDeps, request: CancelRequest): Promise<PreparedCancel> {
  const { client } = deps;
  const { token, authorizer, nonce } = request;
  const chainId = await rpc("reading the chain id", () => client.getChainId());
  const domain = await rpc(`reading name() and version() of ${token}`, () => readTokenDomain(client, token)).catch((error: unknown) => {
    if (error instanceof BaseError) throw error;
    throw new FatalError(`${token} does not answer name() and version() on chain ${chainId}: not an EIP-3009 token?`, { cause: error });
  });
  const message = { authorizer, nonce };
  const signature = await signatureOf(request.authority, domain, message);

  const recovered = await recoverTypedDataAddress({
    domain,
    types: AUTHORIZATION_TYPES,
    primaryType: "CancelAuthorization",
    message,
    signature: serializeSignature({ r: signature.r, s: signature.s, v: BigInt(signature.v) }),
  }).catch((error: unknown) => {
    throw new BadSignatureError("the CancelAuthorization signature does not recover to any address", { cause: error });
  });
  if (!isAddressEqual(recovered, authorizer))
    throw new WrongSignerError(
      `the signature was made by ${recovered}, not the authorizer ${authorizer} (or for another nonce, token or chain); nothing was sent`,
    );

  await assertUnused(deps, chainId, token, authorizer, nonce);

  const simulatedFrom = deps.relayer?.address ?? authorizer;
  await rpc("simulating cancelAuthorization", () =>
    client.simulateContract({ address: token, abi, functionName: "cancelAuthorization", args: [authorizer, nonce, signature.v, signature.r, signature.s], account: simulatedFrom }),
  ).catch((error: unknown) => {
    throw revertError(error, undefined, "the simulation of cancelAuthorization reverted");
  });
  return { token, authorizer, nonce, domain, signature, simulatedFrom };
}

/** The on-chain path's price: estimated gas × the current gas price, in wei. */
export async function estimateCancelCost(deps: CancelRelayDeps, prepared: PreparedCancel): Promise<CancelCost> {
  const [gas, gasPriceWei] = await rpc("estimating the gas of cancelAuthorization", () =>
    Promise.all([deps.client.estimateContractGas({ ...callOf(prepared), account: prepared.simulatedFrom }), deps.client.getGasPrice()]),
  ).catch((error: unknown) => {
    throw revertError(error, undefined, "the gas estimate of cancelAuthorization reverted");
  });
  return { gas, gasPriceWei, costWei: gas * gasPriceWei };
}

/**
 * Steps 4–5: sends cancelAuthorization from the relayer (nonce from eth_getTransactionCount "pending"),
 * waits for the configured confirmations within the timeout, then checks authorizationState is true.
 */
export async function relayCancel(deps: CancelRelayDeps, prepared: PreparedCancel): Promise<CancelResult> {
  const { client, relayer } = deps;
  if (relayer === undefined) throw new FatalError("no relayer account to send cancelAuthorization from");
  const call = callOf(prepared);
  const estimated = await rpc("estimating the gas of cancelAuthorization", () => client.estimateContractGas({ ...call, account: relayer.address })).catch(
    (error: unknown) => {
      throw revertError(error, undefined, "the gas estimate of cancelAuthorization reverted");
    },
  );
  const gas = estimated + (estimated * GAS_LIMIT_HEADROOM_PERCENT) / 100n;
  // "pending" counts pre-confirmed transactions too: no nonce gap, no replacement of our own earlier send.
  const relayerNonce = await rpc("reading the relayer's pending nonce", () => client.getTransactionCount({ address: relayer.address, blockTag: "pending" }));
  const data = encodeFunctionData({ abi, functionName: "cancelAuthorization", args: call.args });
  const transaction = await rpc("preparing the transaction", () =>
    client.prepareTransactionRequest({ account: relayer, chain: null, to: prepared.token, data, gas, nonce: relayerNonce, type: "eip1559" }),
  );
  const balance = await rpc("reading the relayer's balance", () => client.getBalance({ address: relayer.address }));
  const maxCostWei = gas * (transaction.maxFeePerGas ?? 0n);
  if (balance < maxCostWei)
    throw new RelayerFundsError(`the relayer ${relayer.address} holds ${balance} wei, the transaction may cost up to ${maxCostWei} wei; nothing was sent`);

  const serialized = await relayer.signTransaction({ ...transaction, chainId: transaction.chainId ?? (await client.getChainId()) } as Parameters<LocalAccount["signTransaction"]>[0]);
  const txHash = await rpc("sending cancelAuthorization", () => client.sendRawTransaction({ serializedTransaction: serialized }));
  deps.onSent?.({ txHash, relayerNonce });

  const receipt = await client
    .waitForTransactionReceipt({
      hash: txHash,
      confirmations: deps.confirmations,
      timeout: deps.receiptTimeoutMs,
      pollingInterval: deps.pollingIntervalMs ?? RECEIPT_POLL_INTERVAL_MS,
      retryCount: 0,
    })
    .catch((error: unknown) => {
      if (error instanceof WaitForTransactionReceiptTimeoutError || isOutage(error))
        throw new CancelTimeoutError(
          `sent ${txHash} (relayer nonce ${relayerNonce}) but saw no receipt with ${deps.confirmations} confirmation(s) within ${deps.receiptTimeoutMs} ms; it may still land: check it before sending again`,
          txHash,
          { cause: error },
        );
      throw error;
    });
  if (receipt.status !== "success") {
    if (receipt.gasUsed >= gas) throw new OutOfGasError(`${txHash} ran out of gas (limit ${gas}) in block ${receipt.blockNumber}`);
    throw new CancelRevertedError(`${txHash} reverted in block ${receipt.blockNumber}`, txHash);
  }
  const [head, state] = await rpc("checking authorizationState after the cancel", () =>
    Promise.all([
      client.getBlockNumber({ cacheTime: 0 }),
      client.readContract({ address: prepared.token, abi, functionName: "authorizationState", args: [prepared.authorizer, prepared.nonce] }),
    ]),
  );
  if (!state)
    throw new CancelNotAppliedError(`${txHash} was confirmed in block ${receipt.blockNumber}, yet authorizationState(${prepared.authorizer}, ${prepared.nonce}) is still false`);
  return {
    txHash,
    blockNumber: receipt.blockNumber,
    confirmations: Number(head - receipt.blockNumber) + 1,
    relayerNonce,
    gasUsed: receipt.gasUsed,
    authorizationState: state,
  };
}

function callOf(prepared: PreparedCancel) {
  const { v, r, s } = prepared.signature;
  return { address: prepared.token, abi, functionName: "cancelAuthorization", args: [prepared.authorizer, prepared.nonce, v, r, s] } as const;
}

/** The v,r,s the token will check; refuses (before any RPC send) a key that is not the authorizer's and parts the token rejects. */
async function signatureOf(authority: CancelAuthority, domain: TokenDomain, message: { authorizer: Address; nonce: Hex }): Promise<{ v: number; r: Hex; s: Hex }> {
  let parts: { v: number; r: Hex; s: Hex };
  if (authority.kind === "key") {
    // A cancellation signed by any other account must never be produced (interface spec, cancel flow 1).
    if (!isAddressEqual(authority.account.address, message.authorizer))
      throw new WrongSignerError(`the buyer key belongs to ${authority.account.address}, not the authorizer ${message.authorizer}; nothing was signed or sent`);
    const { v, r, s } = await signCancelAuthorization(authority.account, domain, message);
    parts = { v, r, s };
  } else if (authority.kind === "signature") {
    if (!/^0x[0-9a-fA-F]{130}$/.test(authority.signature)) throw new BadSignatureError("--signature: expected 65 bytes of hex (0x + 130 digits: r ‖ s ‖ v)");
    let parsed: ReturnType<typeof parseSignature>;
    try {
      parsed = parseSignature(authority.signature);
    } catch (error) {
      throw new BadSignatureError("--signature: not a valid secp256k1 signature", { cause: error });
    }
    parts = { r: parsed.r, s: parsed.s, v: Number(parsed.v ?? BigInt(27 + (parsed.yParity ?? 0))) };
  } else {
    parts = { v: authority.v, r: authority.r, s: authority.s };
  }
  // FiatToken's ECRecover accepts only v = 27/28; a yParity (0/1) maps onto them.
  const v = parts.v === 0 || parts.v === 1 ? parts.v + 27 : parts.v;
  if (v !== 27 && v !== 28) throw new BadSignatureError(`v must be 27 or 28 (or 0/1), got ${parts.v}`);
  if (BigInt(parts.s) > SECP256K1_HALF_N) throw new BadSignatureError("s is in the upper half of the curve order: the token refuses such (malleable) signatures");
  if (BigInt(parts.r) === 0n || BigInt(parts.s) === 0n) throw new BadSignatureError("r and s must not be zero");
  return { v, r: parts.r, s: parts.s };
}

async function assertUnused(deps: CancelRelayDeps, chainId: number, token: Address, authorizer: Address, nonce: Hex): Promise<void> {
  const used = await rpc("reading authorizationState", () =>
    deps.client.readContract({ address: token, abi, functionName: "authorizationState", args: [authorizer, nonce] }),
  );
  if (!used) return;
  const indexed = deps.lookupIndexedState?.(chainId, token, authorizer, nonce);
  const where = indexed === undefined ? "" : ` in block ${indexed.blockNumber}, tx ${indexed.txHash} (${indexed.status})`;
  if (indexed?.state === "captured") throw new AlreadyCapturedError(`the authorization ${nonce} of ${authorizer} was already captured${where}; nothing to cancel`);
  if (indexed?.state === "canceled") throw new AlreadyCanceledError(`the authorization ${nonce} of ${authorizer} was already canceled${where}`);
  throw new AlreadyUsedError(`the authorization ${nonce} of ${authorizer} is already used or canceled on chain (the indexed database does not say which)`);
}

/** Maps a revert to the matching failure: a nonce burned in the meantime, a refused signature, or a plain revert. */
function revertError(error: unknown, txHash: Hex | undefined, what: string): unknown {
  if (error instanceof BaseError) return error;
  if (!(error instanceof ViemBaseError)) return error;
  if (error.walk((e) => e instanceof InsufficientFundsError)) return new RelayerFundsError("the relayer lacks the ETH for gas; nothing was sent", { cause: error });
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
  const reason = reverted instanceof ContractFunctionRevertedError ? (reverted.reason ?? reverted.shortMessage) : error.shortMessage;
  if (/used or canceled/.test(reason)) return new AlreadyUsedError(`${what}: the authorization was used or canceled in the meantime (${reason})`, { cause: error });
  if (/invalid signature/i.test(reason)) return new BadSignatureError(`${what}: the token refuses the signature (${reason})`, { cause: error });
  return new CancelRevertedError(`${what}: ${reason}`, txHash, { cause: error });
}

function isOutage(error: unknown): boolean {
  return error instanceof ViemBaseError && error.walk((e) => e instanceof HttpRequestError || e instanceof TimeoutError) !== null;
}

/** Runs one RPC step; an unreachable or timed-out endpoint becomes RpcUnavailableError (exit 75), named by step. */
async function rpc<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (isOutage(error)) throw new RpcUnavailableError(`${what}: the RPC did not answer (${(error as ViemBaseError).shortMessage})`, { cause: error });
    if (error instanceof ViemBaseError && error.walk((e) => e instanceof InsufficientFundsError))
      throw new RelayerFundsError(`${what}: the relayer lacks the ETH for gas`, { cause: error });
    throw error;
  }
}
