import {
  decodeErrorResult,
  encodeFunctionData,
  isAddressEqual,
  keccak256,
  parseAbi,
  toHex,
  type Address,
  type Hex,
  type LocalAccount,
} from "viem";
import { isHexBytes } from "../chain/hexPatterns.js";
import { RpcRequestError, WrongChainError } from "../errors/rpc.js";
import { ConfigError, FatalError, RetryableError } from "../errors/base.js";
import {
  AlreadyCanceledError,
  AlreadyCapturedError,
  AlreadyUsedError,
  BadSignatureError,
  CancelNotAppliedError,
  CancelRevertedError,
  CancelTimeoutError,
  RelayerFundsError,
  RpcStepError,
  WrongSignerError,
} from "../errors/cancel.js";
import {
  waitForCanonicalReceipt,
  type CanonicalReceipt,
  type ConfirmationWait,
} from "./cancelConfirmations.js";
import { EIP3009_ABI } from "./eip3009Abi.js";
import { AUTHORIZATION_TYPES, type TokenDomain } from "./eip3009.js";
import type { IndexedStateLookup } from "./indexedAuthorizationState.js";
import type { RelayerNonces } from "./relayerNonces.js";
import { cancelHolder } from "../store/nonceBook.js";
import { readAuthorizationState, readTokenDomainOverRpc } from "./tokenReads.js";
import {
  cancelAuthorizationDigest,
  verifyAuthorizerSignature,
  type SignatureInput,
  type VerifiedSignature,
} from "./verifyAuthorization.js";

// The test token carries FiatToken v2.2's EIP-3009 ABI (circlefin/stablecoin-evm `contracts/v2/EIP3009.sol`), so its ABI serves any such token.
const abi = EIP3009_ABI;
const ERROR_STRING_ABI = parseAbi(["error Error(string)"]);

/** Headroom over eth_estimateGas for the gas limit, in percent. */
const GAS_LIMIT_HEADROOM_PERCENT = 20n;
/** maxFeePerGas = base fee × this + priority fee: room for the base fee to rise for a few blocks. */
const BASE_FEE_MULTIPLIER = 2n;
export { CONFIRMATION_POLL_INTERVAL_MS } from "./cancelConfirmations.js";

/** Where the CancelAuthorization signature comes from: the buyer's key, or one the buyer (or the buyer's wallet) made. */
export type CancelAuthority =
  | { kind: "key"; account: LocalAccount }
  /** 65 bytes r ‖ s ‖ v from an EOA, or a smart wallet's signature of any length. */
  | { kind: "signature"; signature: Hex }
  | { kind: "vrs"; v: number; r: Hex; s: Hex };

export type CancelRequest = {
  token: Address;
  authorizer: Address;
  nonce: Hex;
  authority: CancelAuthority;
};

/** The wait for confirmations' settings (cancelConfirmations.ts), and what sending takes. */
export type CancelRelayDeps = ConfirmationWait & {
  /** The account that pays for and sends the transaction; a dry run may go without. */
  relayer: LocalAccount | undefined;
  /** The relayers' shared nonce book (relayerNonces.ts): the daemon's captures and settles take theirs there too. */
  relayerNonces?: RelayerNonces | undefined;
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
  /** As the token will check it: ECDSA (sent through the v,r,s overload) or ERC-1271 (the bytes overload). */
  signature: VerifiedSignature;
  /** The account the simulation ran as (the relayer, or the authorizer when there is none). */
  simulatedFrom: Address;
};

export type CancelCost = { gas: bigint; gasPriceWei: bigint; costWei: bigint };

export type CancelResult = {
  txHash: Hex;
  blockNumber: bigint;
  /** head − block + 1 on the canonical chain when the relay returned; at least the configured confirmations. */
  confirmations: number;
  relayerNonce: number;
  gasUsed: bigint;
  authorizationState: boolean;
};

/**
 * Steps 1–3 and the simulation: reads the domain from the contract, checks the signature as the token
 * will (ERC-1271 for an authorizer with code, ECDSA otherwise), checks the nonce is unused, then
 * simulates cancelAuthorization. Sends nothing; every refusal is thrown.
 */
export async function prepareCancel(
  deps: CancelRelayDeps,
  request: CancelRequest,
): Promise<PreparedCancel> {
  const { client } = deps;
  const { token, authorizer, nonce } = request;
  const chainId = await rpc("reading the chain id", () =>
    client.request("eth_chainId", [], parseQuantity).then(Number),
  );
  const tokenCode = await rpc(`reading the code of ${token}`, () =>
    client.request("eth_getCode", [token, "latest"], parseData),
  );
  if (tokenCode === "0x")
    throw new FatalError(`${token} has no code on chain ${chainId}: not an EIP-3009 token`);
  const domain = await rpc(`reading name() and version() of ${token}`, () =>
    readTokenDomainOverRpc(client, token, chainId),
  ).catch((error: unknown) => {
    if (!(error instanceof RpcRequestError)) throw error;
    throw new FatalError(
      `${token} does not answer name() and version() on chain ${chainId}: not an EIP-3009 token?`,
      { cause: error },
    );
  });
  const message = { authorizer, nonce };
  const digest = cancelAuthorizationDigest(domain, message);
  const input = await signatureOf(deps, request.authority, domain, message);
  const signature = await rpc("checking the signature", () =>
    verifyAuthorizerSignature(client, authorizer, digest, input),
  ).catch((error: unknown) => {
    if (error instanceof WrongSignerError)
      throw new WrongSignerError(
        `${error.shortMessage} (or it was made for another nonce, token or chain); nothing was sent`,
        { cause: error },
      );
    throw error;
  });

  await assertUnused(deps, chainId, token, authorizer, nonce);

  const simulatedFrom = deps.relayer?.address ?? authorizer;
  // At the pending view, as the nonce check: a capture pre-confirmed a moment ago makes it revert here, before any gas is spent.
  await rpc("simulating cancelAuthorization", () =>
    client.request("eth_call", [
      { from: simulatedFrom, to: token, data: callData(signature, authorizer, nonce) },
      "pending",
    ]),
  ).catch((error: unknown) => {
    throw revertError(error, undefined, "the simulation of cancelAuthorization reverted");
  });
  return { token, authorizer, nonce, domain, signature, simulatedFrom };
}

/** The on-chain path's price: estimated gas × the current gas price, in wei. */
export async function estimateCancelCost(
  deps: CancelRelayDeps,
  prepared: PreparedCancel,
): Promise<CancelCost> {
  const gas = await estimateGas(deps, prepared, prepared.simulatedFrom);
  const gasPriceWei = await rpc("reading the gas price", () =>
    deps.client.request("eth_gasPrice", [], parseQuantity),
  );
  return { gas, gasPriceWei, costWei: gas * gasPriceWei };
}

/**
 * Steps 4–5: sends cancelAuthorization from the relayer with a nonce reserved in the relayers' shared
 * nonce book (the node's pending count its floor), waits for the configured confirmations on
 * canonical blocks within the timeout, then checks authorizationState at a block at or after the
 * receipt's. A nonce nothing was broadcast with goes back to the book.
 */
export async function relayCancel(
  deps: CancelRelayDeps,
  prepared: PreparedCancel,
): Promise<CancelResult> {
  const { client, relayer } = deps;
  if (relayer === undefined)
    throw new FatalError("no relayer account to send cancelAuthorization from");
  if (deps.relayerNonces === undefined)
    throw new FatalError("no nonce book to take the relayer's nonce from");
  const nonces = deps.relayerNonces;
  const estimated = await estimateGas(deps, prepared, relayer.address);
  const gas = estimated + (estimated * GAS_LIMIT_HEADROOM_PERCENT) / 100n;
  const chainId = await rpc("reading the chain id", () =>
    client.request("eth_chainId", [], parseQuantity).then(Number),
  );
  const [latest, priorityFee, balance] = await rpc("reading fees and balance", () =>
    Promise.all([
      client.request("eth_getBlockByNumber", ["latest", false], parseBaseFee),
      client.request("eth_maxPriorityFeePerGas", [], parseQuantity),
      client.request("eth_getBalance", [relayer.address, "latest"], parseQuantity),
    ]),
  );
  const maxFeePerGas = latest.baseFeePerGas * BASE_FEE_MULTIPLIER + priorityFee;
  const maxCostWei = gas * maxFeePerGas;
  if (balance < maxCostWei)
    throw new RelayerFundsError(
      `the relayer ${relayer.address} holds ${balance} wei, the transaction may cost up to ${maxCostWei} wei; nothing was sent`,
    );

  const holder = cancelHolder(prepared.token, prepared.authorizer, prepared.nonce);
  const relayerNonce = await nonces.reserve(relayer.address, holder);
  let txHash: Hex | undefined;
  try {
    const serialized = await relayer.signTransaction({
      type: "eip1559",
      chainId,
      to: prepared.token,
      data: callData(prepared.signature, prepared.authorizer, prepared.nonce),
      gas,
      nonce: relayerNonce,
      maxFeePerGas,
      maxPriorityFeePerGas: priorityFee,
    });
    txHash = keccak256(serialized);
    await nonces.mark(relayer.address, relayerNonce, holder, "signed", txHash);
    await rpc("sending cancelAuthorization", () =>
      client.request("eth_sendRawTransaction", [serialized]),
    ).catch((error: unknown) => {
      // A retry after a lost answer re-sends the same bytes: the node already has them.
      if (
        error instanceof RpcRequestError &&
        /already known|known transaction/i.test(error.shortMessage)
      )
        return;
      if (error instanceof RpcRequestError && /insufficient funds/i.test(error.shortMessage))
        throw new RelayerFundsError(
          `the relayer ${relayer.address} lacks the ETH for gas (${error.shortMessage}); nothing was sent`,
          { cause: error },
        );
      throw error;
    });
  } catch (error) {
    // A node's refusal (or nothing sent): nothing was broadcast with the nonce, the book hands it
    // out again. An unanswered send may have reached a node: the nonce stays taken (a gap, if it
    // never lands, is filled by the capture driver), never handed to another transaction.
    const refused =
      txHash === undefined ||
      error instanceof RpcRequestError ||
      error instanceof RelayerFundsError;
    if (refused) await nonces.release(relayer.address, relayerNonce, holder);
    else {
      const maybeSent = txHash!;
      await nonces.mark(relayer.address, relayerNonce, holder, "broadcast", maybeSent);
      throw new CancelTimeoutError(
        `sending ${maybeSent} (relayer nonce ${relayerNonce}) got no answer; it may still land: check it before sending again`,
        maybeSent,
        { cause: error },
      );
    }
    throw error;
  }
  await nonces.mark(relayer.address, relayerNonce, holder, "broadcast", txHash);
  deps.onSent?.({ txHash, relayerNonce });

  const receipt: CanonicalReceipt = await waitForCanonicalReceipt(deps, {
    txHash,
    relayerNonce,
    gas,
  });
  const state = await rpc("checking authorizationState after the cancel", () =>
    // At the block the confirmations were counted on (the receipt's or later), never a lagging "latest".
    readAuthorizationState(
      client,
      prepared.token,
      prepared.authorizer,
      prepared.nonce,
      toHex(receipt.head),
    ),
  );
  if (!state)
    throw new CancelNotAppliedError(
      `${txHash} was confirmed in block ${receipt.blockNumber}, yet authorizationState(${prepared.authorizer}, ${prepared.nonce}) at block ${receipt.head} is still false`,
    );
  return {
    txHash,
    blockNumber: receipt.blockNumber,
    confirmations: Number(receipt.head - receipt.blockNumber) + 1,
    relayerNonce,
    gasUsed: receipt.gasUsed,
    authorizationState: state,
  };
}

/**
 * The calldata the token will run: the v,r,s overload for a plain 65-byte ECDSA signature, the
 * `bytes signature` overload (0xb7b72899) for anything a wallet signed, of whatever length.
 */
export function callData(signature: VerifiedSignature, authorizer: Address, nonce: Hex): Hex {
  if (signature.scheme === "ecdsa") {
    const { v, r, s } = signature.parts;
    return encodeFunctionData({
      abi,
      functionName: "cancelAuthorization",
      args: [authorizer, nonce, v, r, s],
    });
  }
  return encodeFunctionData({
    abi,
    functionName: "cancelAuthorization",
    args: [authorizer, nonce, signature.signature],
  });
}

async function estimateGas(
  deps: CancelRelayDeps,
  prepared: PreparedCancel,
  from: Address,
): Promise<bigint> {
  const data = callData(prepared.signature, prepared.authorizer, prepared.nonce);
  return rpc("estimating the gas of cancelAuthorization", () =>
    deps.client.request(
      "eth_estimateGas",
      [{ from, to: prepared.token, data }, "pending"],
      parseQuantity,
    ),
  ).catch((error: unknown) => {
    throw revertError(error, undefined, "the gas estimate of cancelAuthorization reverted");
  });
}

/** The signature to check; refuses (before anything is signed or sent) a key that cannot be the authorizer's. */
async function signatureOf(
  deps: CancelRelayDeps,
  authority: CancelAuthority,
  domain: TokenDomain,
  message: { authorizer: Address; nonce: Hex },
): Promise<SignatureInput> {
  if (authority.kind === "signature") return authority.signature;
  if (authority.kind === "vrs") return { v: authority.v, r: authority.r, s: authority.s };
  // A cancellation signed by any other account must never be produced (interface spec, cancel flow 1). An
  // authorizer with code (a wallet, an EIP-7702 delegated EOA) is signed for by its owner's key: the wallet decides.
  const code = await rpc("reading the authorizer's code", () =>
    deps.client.request("eth_getCode", [message.authorizer, "latest"], parseData),
  );
  if (code === "0x" && !isAddressEqual(authority.account.address, message.authorizer))
    throw new WrongSignerError(
      `the buyer key belongs to ${authority.account.address}, not the authorizer ${message.authorizer}; nothing was signed or sent`,
    );
  return authority.account.signTypedData({
    domain,
    types: AUTHORIZATION_TYPES,
    primaryType: "CancelAuthorization",
    message,
  });
}

async function assertUnused(
  deps: CancelRelayDeps,
  chainId: number,
  token: Address,
  authorizer: Address,
  nonce: Hex,
): Promise<void> {
  // The pending view: a capture pre-confirmed but not yet in a block already used the nonce.
  const used = await rpc("reading authorizationState", () =>
    readAuthorizationState(deps.client, token, authorizer, nonce, "pending"),
  );
  if (!used) return;
  const indexed = await deps.lookupIndexedState?.(token, authorizer, nonce);
  const where =
    indexed === undefined
      ? ""
      : ` in block ${indexed.blockNumber}, tx ${indexed.txHash} (${indexed.status})`;
  if (indexed?.state === "captured")
    throw new AlreadyCapturedError(
      `the authorization ${nonce} of ${authorizer} was already captured${where}; nothing to cancel`,
    );
  if (indexed?.state === "canceled")
    throw new AlreadyCanceledError(
      `the authorization ${nonce} of ${authorizer} was already canceled${where}`,
    );
  throw new AlreadyUsedError(
    `the authorization ${nonce} of ${authorizer} is already used or canceled on chain (the indexed database does not say which)`,
  );
}

/** Maps a node's revert to the matching failure: a nonce burned in the meantime, a refused signature, or a plain revert. */
function revertError(error: unknown, txHash: Hex | undefined, what: string): unknown {
  if (!(error instanceof RpcRequestError)) return error;
  if (/insufficient funds/i.test(error.shortMessage))
    return new RelayerFundsError(`${what}: the relayer lacks the ETH for gas; nothing was sent`, {
      cause: error,
    });
  const reason = revertReason(error);
  if (/used or canceled/.test(reason))
    return new AlreadyUsedError(
      `${what}: the authorization was used or canceled in the meantime (${reason})`,
      { cause: error },
    );
  if (/invalid signature/i.test(reason))
    return new BadSignatureError(`${what}: the token refuses the signature (${reason})`, {
      cause: error,
    });
  return new CancelRevertedError(`${what}: ${reason}`, txHash, { cause: error });
}

/** The Error(string) reason in a revert's data, else the node's message. */
export function revertReason(error: RpcRequestError): string {
  const data =
    typeof error.data === "string"
      ? error.data
      : (error.data as { data?: unknown } | undefined)?.data;
  if (typeof data === "string" && data.startsWith("0x08c379a0")) {
    try {
      return decodeErrorResult({ abi: ERROR_STRING_ABI, data: data as Hex }).args[0];
    } catch {
      // fall through to the message
    }
  }
  return error.shortMessage;
}

/**
 * Runs one RPC step. The client has already retried and failed over: a retryable failure left means
 * the RPC did not answer (an RpcTransportError, exit 75, named by step); an endpoint on another chain
 * is a configuration error (exit 2).
 */
export async function rpc<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof WrongChainError)
      throw new ConfigError("rpc.http", error.shortMessage, { cause: error });
    if (
      error instanceof RetryableError &&
      !(error instanceof CancelTimeoutError) &&
      !isNamedStep(error)
    )
      throw new RpcStepError(`${what}: the RPC did not answer (${error.shortMessage})`, {
        cause: error,
      });
    throw error;
  }
}

function isNamedStep(error: unknown): boolean {
  return error instanceof RpcStepError;
}

export function parseQuantity(result: unknown): bigint {
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(result))
    throw new RetryableError(`expected a hex quantity, got ${JSON.stringify(result)}`);
  return BigInt(result);
}

export function parseData(result: unknown): Hex {
  if (typeof result !== "string" || !isHexBytes(result))
    throw new RetryableError(`expected hex data, got ${JSON.stringify(result)}`);
  return result.toLowerCase() as Hex;
}

export function parseBaseFee(result: unknown): { baseFeePerGas: bigint } {
  const fee = (result as { baseFeePerGas?: unknown } | null)?.baseFeePerGas;
  return { baseFeePerGas: parseQuantity(fee) };
}
