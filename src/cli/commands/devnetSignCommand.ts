import { getAddress, toHex, type Address, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import {
  signCancelAuthorization,
  signReceiveAuthorization,
  signTransferAuthorization,
} from "../../authorization/eip3009.js";
import { readTokenDomainOverRpc } from "../../authorization/tokenReads.js";
import { UsageError } from "../../errors/base.js";
import type { Shutdown } from "../../ops/shutdown.js";
import {
  parseAddressFlag,
  parseBytes32Flag,
  parseChoiceFlag,
  parseUint256Flag,
  parseUnixSecondsFlag,
} from "../authorizationFlags.js";
import type { CommandValues } from "../commandLine.js";
import { createContext, verifyChain } from "../context.js";
import { printJson } from "../output.js";

/** An authorization signed here stays valid this long unless --valid-before says otherwise. */
export const DEFAULT_VALIDITY_SECONDS = 3_600;
/** anvil's key 1: a buyer the devnet funds with test USDC. */
const DEFAULT_KEY_INDEX = 1;

/** The flags of `flashindex devnet sign-authorization` (in the devnet command's one definition). */
export const SIGN_OPTIONS = {
  key: {
    type: "string",
    value: "N",
    description: "sign-authorization: devnet key 0-9 that signs (default 1, a funded buyer)",
  },
  kind: {
    type: "string",
    value: "KIND",
    description: "sign-authorization: transfer (default), receive or cancel",
  },
  token: {
    type: "string",
    value: "ADDRESS",
    description: "sign-authorization: the token (default: the config's only token)",
  },
  to: {
    type: "string",
    value: "ADDRESS",
    description: "sign-authorization: the payee (transfer, receive)",
  },
  value: {
    type: "string",
    value: "V",
    description: "sign-authorization: the amount in the token's smallest unit (transfer, receive)",
  },
  "valid-after": {
    type: "string",
    value: "N",
    description: "sign-authorization: unix seconds (default 0)",
  },
  "valid-before": {
    type: "string",
    value: "N",
    description: `sign-authorization: unix seconds (default: now + ${DEFAULT_VALIDITY_SECONDS})`,
  },
  nonce: {
    type: "string",
    value: "0x…",
    description: "sign-authorization: 32 bytes (default: random)",
  },
  json: {
    type: "boolean",
    description: "sign-authorization: print one JSON object instead of the command's flags",
  },
} as const;

/**
 * Signs an EIP-3009 authorization with one of anvil's public test keys, the token's domain read over
 * the config's RPC (a devnet config: the running devnet's), and prints the flags of the command
 * that uses it. Test keys only: never a key that holds value.
 */
export async function signAuthorization(
  values: CommandValues<typeof SIGN_OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  const { ANVIL_PRIVATE_KEYS } = await import("../../devnet/anvil.js");
  const keyIndex = values.key === undefined ? DEFAULT_KEY_INDEX : Number(values.key);
  if (values.key !== undefined && !/^[0-9]$/.test(values.key))
    throw new UsageError(
      `--key: expected a devnet key index from 0 to 9, got ${JSON.stringify(values.key)}`,
    );
  const account = privateKeyToAccount(ANVIL_PRIVATE_KEYS[keyIndex]!);
  const kind =
    values.kind === undefined
      ? "transfer"
      : parseChoiceFlag("--kind", values.kind, ["transfer", "receive", "cancel"] as const);
  const nonce: Hex =
    values.nonce === undefined
      ? toHex(crypto.getRandomValues(new Uint8Array(32)))
      : parseBytes32Flag("--nonce", values.nonce);
  const transfer =
    kind === "cancel"
      ? undefined
      : {
          to: getAddress(parseAddressFlag("--to", values.to)),
          value: parseUint256Flag("--value", values.value),
          validAfter:
            values["valid-after"] === undefined
              ? 0
              : parseUnixSecondsFlag("--valid-after", values["valid-after"]),
          validBefore:
            values["valid-before"] === undefined
              ? Math.floor(Date.now() / 1_000) + DEFAULT_VALIDITY_SECONDS
              : parseUnixSecondsFlag("--valid-before", values["valid-before"]),
        };
  if (transfer !== undefined && transfer.validBefore <= transfer.validAfter)
    throw new UsageError(
      `--valid-before: ${transfer.validBefore} must be after --valid-after ${transfer.validAfter}`,
    );

  const context = createContext(values, shutdown);
  const token =
    values.token === undefined
      ? onlyToken(context.config.tokens.map((t) => t.address))
      : getAddress(parseAddressFlag("--token", values.token));
  await verifyChain(context);
  const domain = await readTokenDomainOverRpc(context.client, token, context.config.chainId);
  if (transfer === undefined) {
    const signed = await signCancelAuthorization(account, domain, {
      authorizer: account.address,
      nonce,
    });
    const result = { token, authorizer: account.address, nonce, signature: signed.signature };
    if (values.json) return printJson({ kind, ...result });
    return void console.log(
      `cancel --token ${token} --authorizer ${account.address} --nonce ${nonce} --signature ${signed.signature}`,
    );
  }
  const message = {
    from: account.address,
    to: transfer.to,
    value: transfer.value,
    validAfter: BigInt(transfer.validAfter),
    validBefore: BigInt(transfer.validBefore),
    nonce,
  };
  const signed = await (kind === "receive" ? signReceiveAuthorization : signTransferAuthorization)(
    account,
    domain,
    message,
  );
  if (values.json)
    return printJson({
      kind,
      token,
      from: account.address,
      to: transfer.to,
      value: transfer.value.toString(),
      validAfter: transfer.validAfter,
      validBefore: transfer.validBefore,
      nonce,
      signature: signed.signature,
    });
  console.log(
    `order add --token ${token} --from ${account.address} --to ${transfer.to} --value ${transfer.value} --valid-after ${transfer.validAfter} --valid-before ${transfer.validBefore} --nonce ${nonce} --signature ${signed.signature}${kind === "receive" ? " --kind receive" : ""}`,
  );
}

function onlyToken(tokens: readonly Address[]): Address {
  if (tokens.length !== 1)
    throw new UsageError(
      `devnet sign-authorization: --token is required when the config lists ${tokens.length} tokens`,
    );
  return tokens[0]!;
}
