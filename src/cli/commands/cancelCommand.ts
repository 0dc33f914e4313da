import { formatEther, formatGwei, type Address } from "viem";
import { CANCEL_EXIT_CODES_HELP } from "../../errors/cancel.js";
import {
  estimateCancelCost,
  prepareCancel,
  relayCancel,
  type CancelAuthority,
  type CancelCost,
  type CancelRelayDeps,
  type PreparedCancel,
} from "../../authorization/cancelRelay.js";
import { createIndexedStateLookup } from "../../authorization/indexedAuthorizationState.js";
import { createRelayerNonces } from "../../authorization/relayerNonces.js";
import {
  AlreadyCanceledError,
  AlreadyCapturedError,
  CancelNotAppliedError,
  CancelRevertedError,
  CancelTimeoutError,
  OutOfGasError,
} from "../../errors/cancel.js";
import { OrderStateError } from "../../errors/orders.js";
import {
  BUYER_KEY_ENV,
  readKeyAccount,
  readRelayerPool,
  RELAYER_KEY_ENV,
  relayerKeyHint,
} from "../../authorization/keySources.js";
import { leastBusyRelayer } from "../../authorization/relayerPool.js";
import { readAddress } from "../../config/fields.js";
import { UsageError } from "../../errors/base.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openReadOnlyStore, openStore } from "../../store/openStore.js";
import type { Store } from "../../store/store.js";
import { parseBytes32Flag, parseSignatureFlag } from "../authorizationFlags.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { createContext } from "../context.js";
import { printJson } from "../output.js";

const OPTIONS = {
  token: {
    type: "string",
    value: "ADDRESS",
    description: "token contract (default: the only token of the config)",
  },
  authorizer: {
    type: "string",
    value: "ADDRESS",
    description: "the authorization's from (the buyer)",
  },
  nonce: { type: "string", value: "0x…", description: "the authorization's nonce (32 bytes)" },
  signature: {
    type: "string",
    value: "0x…",
    description: "a ready CancelAuthorization signature (65 bytes, or a wallet's, any length)",
  },
  v: {
    type: "string",
    value: "N",
    description: "the same signature in parts: v (with --r and --s)",
  },
  r: { type: "string", value: "0x…", description: "r (32 bytes)" },
  s: { type: "string", value: "0x…", description: "s (32 bytes)" },
  "buyer-key-file": {
    type: "string",
    value: "PATH",
    description: "file holding the buyer's private key (hex)",
  },
  "relayer-key-file": {
    type: "string",
    value: "PATH",
    description: "file holding the relayer's private key (hex)",
  },
  confirmations: {
    type: "string",
    value: "N",
    description:
      "canonical blocks to wait for, the receipt's included (overrides cancel.confirmations; default 2)",
  },
  "dry-run": {
    type: "boolean",
    description:
      "check, simulate and estimate only; send nothing; print the cost of both voiding paths",
  },
  json: { type: "boolean", description: "print one JSON object" },
} as const;

export const CANCEL_COMMAND = defineCommand({
  name: "cancel",
  summary: "relay a buyer's cancelAuthorization on chain (or --dry-run: compare voiding costs)",
  // Two lines, the second under the first's flags: on one line it was the only help line past 100 columns.
  usage:
    "--authorizer A --nonce 0x… [--token T]\n                         (--signature 0x… | --v N --r 0x… --s 0x… | buyer key) [options]",
  description: `Voids a signed transfer authorization on chain: relays the buyer's CancelAuthorization to the
token's cancelAuthorization from the relayer account, waits for the confirmations, and checks that
authorizationState(authorizer, nonce) is then true. Before anything is sent it reads the token's
domain, checks the signature exactly as the token will, refuses a nonce already used at the
pending (pre-confirmed) view, and simulates the call there.

An order stored for the authorization moves to canceling first, in one database transaction, so
order capture and the facilitator's settle refuse it from then on; a refused or reverted cancel
sends it back to the state it came from, with the cause. The relayer's nonce comes from the nonce
book the daemon's captures share (docs/authorizations.md).

The signature check follows FiatToken v2.2: an authorizer with code (a smart-contract wallet, or an
EOA delegated under EIP-7702) must answer ERC-1271 isValidSignature with 0x1626ba7e, and its
signature may have any length (sent through cancelAuthorization's bytes overload); an authorizer
without code needs a 65-byte ECDSA signature, v 27/28 (0/1 are mapped onto them), low s.

Confirmations are counted on canonical blocks only: a Base node with Flashblocks answers a receipt
for a pre-confirmed transaction (zero block hash) before its block exists; the relay reports it and
keeps waiting. Reads and sends go through the configured rpc.http endpoints with retries and
failover.

The buyer's CancelAuthorization comes from --signature (65 bytes r ‖ s ‖ v, or a wallet's signature
of any length), from --v/--r/--s, or is signed here with the buyer's key (for a wallet authorizer:
its owner's key). Keys are never taken from the command line and never printed:
  buyer key     ${BUYER_KEY_ENV} or --buyer-key-file PATH
  relayer key   --relayer-key-file PATH, else facilitator.relayerKeyFile, else the variable
                facilitator.relayerKeyEnv names (${RELAYER_KEY_ENV} by default); not needed
                with --dry-run

The database (--db, or database.url) holds the nonce book and the orders, and tells captured from
canceled; it is opened for writing (--dry-run only reads it). Logs go to stderr.`,
  options: OPTIONS,
  epilog: CANCEL_EXIT_CODES_HELP,
  run: runCancelCommand,
});

async function runCancelCommand(
  { values }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  // Logs (RPC retries, failovers) go to stderr: stdout carries the result, --json or not.
  const { config, client, metrics } = createContext(values, shutdown);

  const authorizer = required("--authorizer", values.authorizer, (v) =>
    readAddress("--authorizer", v),
  );
  const nonce = required("--nonce", values.nonce, (v) => parseBytes32Flag("--nonce", v));
  const token =
    values.token === undefined
      ? onlyToken(config.tokens.map((t) => t.address))
      : readAddress("--token", values.token);
  const confirmations =
    values.confirmations === undefined
      ? config.cancel.confirmations
      : positiveInteger("--confirmations", values.confirmations);
  const authority = authorityOf(values);
  const dryRun = values["dry-run"] === true;
  const relayers = readRelayerPool(config.facilitator, values["relayer-key-file"]);
  if (relayers.length === 0 && !dryRun)
    throw new UsageError(
      `cancel: no relayer key: ${relayerKeyHint(config.facilitator)} (or use --dry-run)`,
    );

  // A real cancel takes its nonce from the relayers' shared book and moves the order it voids: the
  // database is opened for writing (created if absent). A dry run only reads it, if it exists.
  const store: Store | undefined = dryRun ? undefined : await openStore(config, { metrics });
  if (store !== undefined) shutdown.add(() => store.close());
  // Of a pool, the relayer the fewest live captures wait on (every process's, from the store).
  const relayer =
    store === undefined || relayers.length <= 1
      ? relayers[0]
      : leastBusyRelayer(
          relayers,
          (await store.captures.pending()).map((p) => p.capture),
        );
  const deps: CancelRelayDeps = {
    client,
    relayer,
    relayerNonces:
      store === undefined ? undefined : createRelayerNonces({ client, book: store.nonces }),
    confirmations,
    receiptTimeoutMs: config.cancel.receiptTimeoutMs,
    lookupIndexedState:
      store === undefined
        ? createIndexedStateLookup(() => openReadOnlyStore(config, metrics))
        : (t, a, n) => store.authorizationState(t, a, n).catch(() => undefined),
    onSent: ({ txHash, relayerNonce }) =>
      console.error(
        `flashindex: sent ${txHash} (relayer nonce ${relayerNonce}), waiting for ${confirmations} canonical confirmation(s)`,
      ),
    onPreconfirmed: ({ txHash, pendingBlockNumber }) =>
      console.error(
        `flashindex: ${txHash} is pre-confirmed for block ${pendingBlockNumber} (zero block hash: the block does not exist yet); still waiting for ${confirmations} canonical confirmation(s)`,
      ),
  };

  if (store === undefined) {
    const prepared = await prepareCancel(deps, { token, authorizer, nonce, authority });
    return printDryRun(
      prepared,
      await estimateCancelCost(deps, prepared),
      relayer?.address,
      values.json === true,
    );
  }
  const result = await cancelStoredOrder(store, config.chainId, deps, {
    token,
    authorizer,
    nonce,
    authority,
  });
  if (values.json)
    return printJson({
      token,
      authorizer,
      nonce,
      txHash: result.txHash,
      blockNumber: Number(result.blockNumber),
      confirmations: result.confirmations,
      relayer: relayer?.address,
      relayerNonce: result.relayerNonce,
      gasUsed: result.gasUsed.toString(),
      authorizationState: result.authorizationState,
    });
  console.log(
    [
      `canceled   ${authorizer} nonce ${nonce} on ${token}`,
      `tx         ${result.txHash} (relayer ${relayer?.address}, nonce ${result.relayerNonce}, gas used ${result.gasUsed})`,
      `block      ${result.blockNumber}`,
      `confirmations ${result.confirmations}`,
      `authorizationState ${result.authorizationState}`,
    ].join("\n"),
  );
}

/**
 * The interface spec's rule: the order state changes atomically before a cancellation is accepted.
 * The order holding the authorization (if one is stored) moves to `canceling` in one write
 * transaction first, so a capture or settle racing the cancel is refused from then on, and one
 * started before makes this cancel refused. Then the nonce is checked at the pending view,
 * simulated, and relayed. A cancel refused or reverted sends the order back to the state it came
 * from with the cause; one that may still land (a timeout) leaves it `canceling`, and the indexer
 * moves it to canceled (or captured, if a capture landed first) when it sees the event.
 */
async function cancelStoredOrder(
  store: Store,
  chainId: number,
  deps: CancelRelayDeps,
  request: Parameters<typeof prepareCancel>[1],
) {
  const begun = await store.cancels
    .begin(request.token, request.authorizer, request.nonce, Date.now())
    .catch(async (error: unknown) => {
      if (!(error instanceof OrderStateError)) throw error;
      const state = (
        await store.captures.findOrder(chainId, request.token, request.authorizer, request.nonce)
      )?.state;
      if (state === "captured" || state === "capturing")
        throw new AlreadyCapturedError(`${error.shortMessage} (its capture was sent)`, {
          cause: error,
        });
      if (state === "canceled" || state === "canceling")
        throw new AlreadyCanceledError(error.shortMessage, { cause: error });
      throw error;
    });
  let sent = false;
  try {
    const prepared = await prepareCancel(deps, request);
    return await relayCancel(
      { ...deps, onSent: (tx) => ((sent = true), deps.onSent?.(tx)) },
      prepared,
    );
  } catch (error) {
    if (begun !== undefined && !(error instanceof CancelTimeoutError)) {
      const reverted =
        error instanceof CancelRevertedError ||
        error instanceof OutOfGasError ||
        error instanceof CancelNotAppliedError;
      await store.cancels.fail(
        begun.order.id,
        sent && reverted ? "cancel_reverted" : sent ? "cancel_failed" : "cancel_refused",
        Date.now(),
      );
    }
    throw error;
  }
}

/** The one line that compares the two voiding paths (interface spec, cost comparison). */
export function costLine(cost: CancelCost): string {
  return (
    `cost: off chain (mark void, let validBefore pass): no transaction, 0 gas, 0 ETH | ` +
    `on chain (cancelAuthorization): 1 transaction, ${cost.gas} gas × ${formatGwei(cost.gasPriceWei)} gwei = ${formatEther(cost.costWei)} ETH`
  );
}

function printDryRun(
  prepared: PreparedCancel,
  cost: CancelCost,
  relayer: Address | undefined,
  json: boolean,
): void {
  const { domain } = prepared;
  if (json)
    return printJson({
      dryRun: true,
      sent: false,
      token: prepared.token,
      domain,
      authorizer: prepared.authorizer,
      nonce: prepared.nonce,
      authorizationState: false,
      simulatedFrom: prepared.simulatedFrom,
      relayer: relayer ?? null,
      cost: {
        offChain: { transactions: 0, gas: "0", costWei: "0" },
        onChain: {
          transactions: 1,
          gas: cost.gas.toString(),
          gasPriceWei: cost.gasPriceWei.toString(),
          costWei: cost.costWei.toString(),
          costEth: formatEther(cost.costWei),
        },
      },
    });
  console.log(
    [
      `dry run: nothing was sent`,
      `token      ${prepared.token} (name ${JSON.stringify(domain.name)}, version ${JSON.stringify(domain.version)}, chain ${domain.chainId})`,
      `authorizer ${prepared.authorizer} (the signer)`,
      `nonce      ${prepared.nonce} (authorizationState false: unused)`,
      `simulation cancelAuthorization succeeds from ${prepared.simulatedFrom}`,
      costLine(cost),
    ].join("\n"),
  );
}

type Values = ParsedCommand<typeof OPTIONS>["values"];

function authorityOf(values: Values): CancelAuthority {
  const parts = [values.v, values.r, values.s];
  const givenParts = parts.filter((p) => p !== undefined).length;
  const sources =
    (values.signature === undefined ? 0 : 1) +
    (givenParts > 0 ? 1 : 0) +
    (values["buyer-key-file"] === undefined ? 0 : 1);
  if (sources > 1)
    throw new UsageError("cancel: give one of --signature, --v/--r/--s or --buyer-key-file");
  if (values.signature !== undefined)
    return { kind: "signature", signature: parseSignatureFlag("--signature", values.signature) };
  if (givenParts > 0) {
    if (givenParts < 3) throw new UsageError("cancel: --v, --r and --s go together");
    if (!/^(?:0|[1-9][0-9]{0,2})$/.test(values.v!) || Number(values.v) > 255)
      throw new UsageError(`--v: expected 27 or 28 (or 0/1), got ${JSON.stringify(values.v)}`);
    return {
      kind: "vrs",
      v: Number(values.v),
      r: parseBytes32Flag("--r", values.r),
      s: parseBytes32Flag("--s", values.s),
    };
  }
  const buyer = readKeyAccount({
    envName: BUYER_KEY_ENV,
    fileFlag: "--buyer-key-file",
    filePath: values["buyer-key-file"],
  });
  if (buyer === undefined)
    throw new UsageError(
      `cancel: no CancelAuthorization: pass --signature or --v/--r/--s, or give the buyer key (${BUYER_KEY_ENV} or --buyer-key-file)`,
    );
  return { kind: "key", account: buyer };
}

function required<T>(flag: string, value: string | undefined, read: (value: string) => T): T {
  if (value === undefined)
    throw new UsageError(`cancel: ${flag} is required (see flashindex cancel --help)`);
  return read(value);
}

function positiveInteger(flag: string, value: string): number {
  if (!/^[1-9][0-9]{0,3}$/.test(value))
    throw new UsageError(
      `${flag}: expected a whole number from 1 to 9999, got ${JSON.stringify(value)}`,
    );
  return Number(value);
}

function onlyToken(tokens: Address[]): Address {
  if (tokens.length !== 1)
    throw new UsageError(
      `cancel: --token is required when the config lists ${tokens.length} tokens`,
    );
  return tokens[0]!;
}
