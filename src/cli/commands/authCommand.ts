import type { Address, Hex } from "viem";
import { readAuthorizationState } from "../../authorization/tokenReads.js";
import { FatalError, UsageError } from "../../errors/base.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openReadOnlyStore } from "../../store/openStore.js";
import { parseAddressFlag, parseBytes32Flag } from "../authorizationFlags.js";
import { createContext, verifyChain } from "../context.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { printJson } from "../output.js";

const OPTIONS = {
  json: { type: "boolean", description: "print one JSON object instead of text" },
} as const;

type IndexedState = {
  state: "captured" | "canceled";
  status: "preconfirmed" | "confirmed" | "finalized";
  block_number: number;
  tx_hash: Hex;
  captured_from: Address | null;
  captured_to: Address | null;
  captured_value: string | null;
};

/** The indexer's answer compared with the contract's. */
export type AuthorizationComparison = "agree" | "disagree" | "pending" | "not_indexed";

/**
 * Compares the indexed state with `authorizationState`: a confirmed or finalized event must match a
 * used nonce. A pre-confirmed event may not be in the latest block yet, and a used nonce without an
 * event means the indexer is behind (or the event lies before the start block): neither is a disagreement.
 */
export function compareAuthorization(
  indexed: IndexedState | undefined,
  used: boolean,
): AuthorizationComparison {
  if (indexed === undefined) return used ? "not_indexed" : "agree";
  if (indexed.status === "preconfirmed") return used ? "agree" : "pending";
  return used ? "agree" : "disagree";
}

export const AUTH_COMMAND = defineCommand({
  name: "auth",
  summary: "show an authorization's indexed state against the contract's",
  usage: "<token> <authorizer> <nonce> [--json] [options]",
  description: `Prints what the indexed events say about one EIP-3009 authorization: captured (with the from, to
and value of the capture's Transfer), canceled, or not seen, with the event's status
(preconfirmed, confirmed, finalized); and the contract's authorizationState(authorizer, nonce),
which cannot tell a capture from a cancel. Once the event is confirmed or finalized the two must
agree: a disagreement is printed as such and exits 1. Logs go to stderr.`,
  options: OPTIONS,
  positionals: true,
  epilog:
    "Exit 0 when they agree (or cannot disagree yet), 1 on a disagreement, 2 for a bad argument,\n75 when the RPC is unreachable (or the config's devnet is not running).",
  run: runAuthCommand,
});

async function runAuthCommand(
  { values, positionals }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  if (positionals.length !== 3)
    throw new UsageError(
      `auth: expected <token> <authorizer> <nonce>, got ${positionals.length} arguments (see flashindex auth --help)`,
    );
  const token = parseAddressFlag("<token>", positionals[0]);
  const authorizer = parseAddressFlag("<authorizer>", positionals[1]);
  const nonce = parseBytes32Flag("<nonce>", positionals[2]);

  const context = createContext(values, shutdown);
  const store = await openReadOnlyStore(context.config, context.metrics);
  shutdown.add(() => store.close());
  const found = await store.authorizationState(token, authorizer, nonce);
  // The --json document keeps its snake_case names.
  const indexed: IndexedState | undefined =
    found === undefined
      ? undefined
      : {
          state: found.state,
          status: found.status,
          block_number: found.blockNumber,
          tx_hash: found.txHash,
          captured_from: found.capturedFrom,
          captured_to: found.capturedTo,
          captured_value: found.capturedValue,
        };
  await verifyChain(context);
  const used = await readAuthorizationState(context.client, token, authorizer, nonce);
  const comparison = compareAuthorization(indexed, used);

  if (values.json) {
    printJson({
      token,
      authorizer,
      nonce,
      indexed: indexed ?? null,
      state: indexed?.state ?? "not_seen",
      contractUsed: used,
      comparison,
    });
  } else {
    if (indexed === undefined)
      console.log("not seen: no live AuthorizationUsed or AuthorizationCanceled indexed");
    else {
      const capture =
        indexed.state === "captured"
          ? `  from ${indexed.captured_from ?? "?"} to ${indexed.captured_to ?? "?"} value ${indexed.captured_value ?? "?"}`
          : "";
      console.log(
        `${indexed.state} (${indexed.status})  block ${indexed.block_number}  tx ${indexed.tx_hash}${capture}`,
      );
    }
    console.log(`contract authorizationState: ${used} (${used ? "used" : "unused"})`);
    console.log(
      {
        agree: "agree",
        pending: "pending: the event is pre-confirmed, the latest block does not hold it yet",
        not_indexed:
          "not indexed yet: the contract says used but no event is indexed (indexer behind, or before the start block)",
        disagree: `DISAGREEMENT: the indexer says ${indexed?.state} (${indexed?.status}) but the contract says unused`,
      }[comparison],
    );
  }
  if (comparison === "disagree")
    throw new FatalError(
      `auth: the indexer and the contract disagree on ${authorizer} nonce ${nonce}`,
    );
}
