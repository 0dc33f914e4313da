import { getAddress } from "viem";
import { ORDER_STATES, OrderNotFoundError, type Order } from "../../store/orderStates.js";
import { readTokenDomainOverRpc } from "../../authorization/tokenReads.js";
import {
  BadSignatureError,
  verifyTransferAuthorization,
  WrongSignerError,
} from "../../authorization/verifyAuthorization.js";
import type { Config } from "../../config/types.js";
import { FatalError, UsageError } from "../../errors/base.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openReadOnlyStore, openStore } from "../../store/openStore.js";
import type { Store } from "../../store/store.js";
import {
  parseAddressFlag,
  parseBytes32Flag,
  parseChoiceFlag,
  parseIdFlag,
  parseSignatureFlag,
  parseUint256Flag,
  parseUnixSecondsFlag,
} from "../authorizationFlags.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import {
  createContext,
  createStoreContext,
  verifyChain,
  type CommonFlags,
  type StoreContext,
} from "../context.js";
import { printJson } from "../output.js";
import { RELAYER_KEY_ENV } from "../../authorization/keySources.js";
import { runOrderCapture } from "./orderCapture.js";
import { simulateCapture } from "../../authorization/simulateCapture.js";
import { CaptureRevertedError } from "../../errors/capture.js";

const OPTIONS = {
  token: {
    type: "string",
    value: "T",
    description: "add: the token contract (one of tokens[].address)",
  },
  from: { type: "string", value: "A", description: "add: the authorizer (payer)" },
  to: { type: "string", value: "B", description: "add: the payee" },
  value: {
    type: "string",
    value: "V",
    description: "add: the amount in the token's smallest unit",
  },
  "valid-after": {
    type: "string",
    value: "N",
    description: "add: unix seconds after which it is valid",
  },
  "valid-before": {
    type: "string",
    value: "N",
    description: "add: unix seconds before which it is valid",
  },
  nonce: {
    type: "string",
    value: "0x..",
    description: "add: the authorization's nonce (32 bytes)",
  },
  signature: {
    type: "string",
    value: "0x..",
    description: "add: the EIP-712 signature (65 bytes, or a wallet's)",
  },
  kind: { type: "string", value: "KIND", description: "add: transfer (default) or receive" },
  state: { type: "string", value: "S", description: "list: only orders in this state" },
  confirmations: {
    type: "string",
    value: "N",
    description: "capture: wait for N canonical blocks (default 0: until pre-confirmed)",
  },
  "relayer-key-file": {
    type: "string",
    value: "PATH",
    description: "capture: file holding the relayer's private key (hex)",
  },
  json: {
    type: "boolean",
    description: "print JSON instead of text (add, void, capture, show, list)",
  },
} as const;

export const ORDER_COMMAND = defineCommand({
  name: "order",
  summary: "add, void, capture, show and list merchant orders (signed authorizations)",
  usage: "<add|void|capture|show|list> [options]",
  description: `Merchant orders: signed EIP-3009 transfer authorizations kept off chain in the database, with their
state (authorized, voided_offchain, capturing, canceling, captured, canceled, expired). The daemon
moves orders to captured/canceled as the events arrive (pre-confirmed, then confirmed) and to
expired when validBefore passes unused.

  order add --token T --from A --to B --value V --valid-after N --valid-before N
            --nonce 0x.. --signature 0x.. [--kind transfer|receive]
      Verifies the EIP-712 signature as the token will (domain: name() and version() read over the
      configured RPC, or the running devnet's with a devnet config) and stores the order. A --from
      with code (a smart-contract wallet, or an EOA delegated under EIP-7702) must answer ERC-1271
      isValidSignature with 0x1626ba7e, and its signature may have any length; a --from without code
      needs a 65-byte ECDSA signature, v 27/28 (0/1 are stored as 27/28), low s. Then the
      token's own call is simulated (eth_call from --to on the pre-confirmed state): validity
      window, balance, nonce, pause, a wallet whose check behaves differently inside the token.
      Exit 1 when the signer is not --from or the token would refuse the authorization now.
      'flashindex devnet sign-authorization' prints these flags for a devnet key.
  order void <id>      marks an authorized order voided off chain (its signature is never
                       submitted); refused once a capture is under way (capturing)
  order capture <id> [--confirmations N]
      Submits the authorization: transferWithAuthorization (receiveWithAuthorization for --kind
      receive orders, which the token accepts only from the payee: the relayer key must be the
      payee's, else exit 2). It simulates the call first (a revert: exit 8 with the token's reason,
      the order stays authorized), then moves the order to capturing with the signed transaction
      stored, in one step, and sends it. Running it again, or after a crash, sends nothing new: it
      reports the stored transaction and re-sends its same bytes if the node lost them. The daemon
      (start) re-sends a dropped or reorged-out capture while it can still land, replaces one stuck
      unconfirmed (same nonce, higher fee), and moves the order to captured as the event arrives.
      Waits until pre-confirmed, or --confirmations canonical blocks (timeout:
      cancel.receiptTimeoutMs). Relayer key: --relayer-key-file PATH, else
      facilitator.relayerKeyFile, else the variable facilitator.relayerKeyEnv names
      (${RELAYER_KEY_ENV} by default; never an argument, never printed).
  order show <id>      prints the order and its transitions
  order list [--state S]`,
  options: OPTIONS,
  positionals: true,
  epilog: `Exit 0 on success, 2 for a bad flag (the message names it), 1 for a bad signature, an unknown order
or a transition its state does not allow. order capture: 8 the token refuses it (simulation), 9 the
relayer lacks gas money, 75 timed out waiting (the transaction is stored: run it again).`,
  run: runOrderCommand,
});

async function runOrderCommand(
  { values, positionals }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  const [sub, ...rest] = positionals;
  const json = values.json === true;
  const common: CommonFlags = {
    config: values.config,
    db: values.db,
    "log-level": values["log-level"],
  };
  switch (sub) {
    case "add": {
      noPositionals("order add", rest);
      // Every flag is checked before the config is read or the RPC contacted.
      const token = parseAddressFlag("--token", values.token);
      const message = {
        from: parseAddressFlag("--from", values.from),
        to: parseAddressFlag("--to", values.to),
        value: parseUint256Flag("--value", values.value),
        validAfter: parseUnixSecondsFlag("--valid-after", values["valid-after"]),
        validBefore: parseUnixSecondsFlag("--valid-before", values["valid-before"]),
        nonce: parseBytes32Flag("--nonce", values.nonce),
      };
      const signature = parseSignatureFlag("--signature", values.signature);
      const kind =
        values.kind === undefined
          ? "transfer"
          : parseChoiceFlag("--kind", values.kind, ["transfer", "receive"] as const);
      if (message.validBefore <= message.validAfter)
        throw new UsageError(
          `--valid-before: ${message.validBefore} must be after --valid-after ${message.validAfter}`,
        );

      const context = createContext(common, shutdown);
      checkConfiguredToken(context.config, token);
      await verifyChain(context);
      const domain = await readTokenDomainOverRpc(context.client, token, context.config.chainId);
      const verified = await verifyTransferAuthorization(
        context.client,
        domain,
        kind,
        {
          ...message,
          from: getAddress(message.from),
          to: getAddress(message.to),
          validAfter: BigInt(message.validAfter),
          validBefore: BigInt(message.validBefore),
        },
        signature,
      ).catch((error: unknown) => {
        // `order add` documents exit 1 for every refusal (cancel has its own codes, 6 and 7, for the same errors).
        if (error instanceof WrongSignerError || error instanceof BadSignatureError)
          throw new FatalError(`order add: ${error.shortMessage}; not stored`, { cause: error });
        throw error;
      });
      // The token's own call, from the payee: what a signature check cannot see (a wallet whose check
      // writes state, pause, blacklist, the validity window, the balance, a used nonce).
      await simulateCapture(
        context.client,
        {
          token,
          kind,
          ...message,
          validAfter: BigInt(message.validAfter),
          validBefore: BigInt(message.validBefore),
          signature: verified.signature,
        },
        message.to,
      ).catch((error: unknown) => {
        if (error instanceof CaptureRevertedError)
          throw new FatalError(
            `order add: ${error.shortMessage.replace(/; nothing was sent$/, "")}; not stored`,
            { cause: error },
          );
        throw error;
      });
      const store = await openOrders(context);
      // The signature stored is the one the token accepts (ECDSA with v 27/28), so a later capture can use it as is.
      const order = await store.addOrder(
        {
          chainId: context.config.chainId,
          token,
          authorizer: message.from,
          payee: message.to,
          value: message.value,
          validAfter: message.validAfter,
          validBefore: message.validBefore,
          nonce: message.nonce,
          kind,
          signature: verified.signature,
        },
        Date.now(),
      );
      return print(json, order, `order ${order.id} ${describe(order)}`);
    }
    case "void": {
      const id = parseIdFlag("<id>", single("order void", rest));
      const store = await openOrders(createStoreContext(common, shutdown));
      const order = await store.voidOrder(id, Date.now());
      return print(json, order, `order ${order.id} ${describe(order)}`);
    }
    case "capture": {
      const id = parseIdFlag("<id>", single("order capture", rest));
      return runOrderCapture(
        id,
        { confirmations: values.confirmations, relayerKeyFile: values["relayer-key-file"], json },
        common,
        shutdown,
      );
    }
    case "show": {
      const id = parseIdFlag("<id>", single("order show", rest));
      const store = await openOrders(createStoreContext(common, shutdown), "read");
      const order = await store.getOrder(id);
      if (order === undefined) throw new OrderNotFoundError(`no order ${id}`);
      const transitions = await store.listTransitions(id);
      if (json) return printJson({ ...order, transitions });
      console.log(`order ${order.id} ${describe(order)}`);
      console.log(
        `  token ${order.token}  ${order.kind}WithAuthorization  from ${order.authorizer}  to ${order.payee}  value ${order.value}`,
      );
      console.log(
        `  valid after ${order.validAfter}  before ${order.validBefore} (unix s)  nonce ${order.nonce}`,
      );
      if (order.eventTxHash !== null) console.log(`  event tx ${order.eventTxHash}`);
      for (const t of transitions)
        console.log(
          `  ${new Date(t.at).toISOString()}  ${t.fromState ?? "-"} -> ${t.toState}${t.eventStatus ? ` (${t.eventStatus})` : ""}  ${t.cause}${t.txHash ? `  ${t.txHash}` : ""}`,
        );
      return;
    }
    case "list": {
      noPositionals("order list", rest);
      const state =
        values.state === undefined
          ? undefined
          : parseChoiceFlag("--state", values.state, ORDER_STATES);
      const store = await openOrders(createStoreContext(common, shutdown), "read");
      const orders = await store.listOrders({ state });
      if (json) return printJson(orders);
      if (orders.length === 0) return void console.log("no orders");
      for (const o of orders)
        console.log(
          `${String(o.id).padStart(6)}  ${describe(o).padEnd(40)}  ${o.authorizer}  ${o.value}  before ${o.validBefore}`,
        );
      return;
    }
    case undefined:
    default:
      throw new UsageError(
        `order: expected a subcommand add, void, capture, show or list${sub === undefined ? "" : `, got ${JSON.stringify(sub)}`} (see flashindex order --help)`,
      );
  }
}

/** State, the status of the event behind it, and the voided-then-captured flag. */
function describe(order: Order): string {
  const status = order.eventStatus === null ? "" : ` (${order.eventStatus})`;
  return `${order.state}${status}${order.voidedThenCaptured ? " VOIDED THEN CAPTURED" : ""}`;
}

function print(json: boolean, order: Order, text: string): void {
  if (json) printJson(order);
  else console.log(text);
}

/**
 * void, show and list need only the database (createStoreContext: they run whether or not a devnet
 * config's devnet is up); show and list only read: they never create or change a database; add and
 * void write beside a running daemon.
 */
async function openOrders(
  { config, metrics, shutdown }: Pick<StoreContext, "config" | "metrics" | "shutdown">,
  mode: "read" | "write" = "write",
): Promise<Store> {
  const store =
    mode === "read"
      ? await openReadOnlyStore(config, metrics)
      : await openStore(config, { metrics });
  shutdown.add(() => store.close());
  return store;
}

/** An order for a token the daemon does not index would never be captured, canceled or expired by it. */
function checkConfiguredToken(config: Config, token: string): void {
  if (!config.tokens.some((t) => t.key === token))
    throw new UsageError(
      `--token: ${token} is not one of the configured tokens (tokens[].address)`,
    );
}

function single(command: string, rest: string[]): string | undefined {
  if (rest.length > 1)
    throw new UsageError(`${command}: expected one order id, got ${rest.length} arguments`);
  return rest[0];
}

function noPositionals(command: string, rest: string[]): void {
  if (rest.length > 0)
    throw new UsageError(`${command}: unexpected argument ${JSON.stringify(rest[0])}`);
}
