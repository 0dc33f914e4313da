import { createRegistrationClient, parseWallet } from "../../attribution/registrationClient.js";
import { readUrl } from "../../config/fields.js";
import { UsageError } from "../../errors/base.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openStore } from "../../store/openStore.js";
import { createContext, createStoreContext } from "../context.js";
import { defineCommand, type ParsedCommand } from "../commandLine.js";
import { printJson } from "../output.js";

const OPTIONS = {
  "base-url": {
    type: "string",
    value: "URL",
    description: "registration API (overrides registration.baseUrl; default https://api.base.dev)",
  },
  json: { type: "boolean", description: "print one JSON object instead of the code" },
} as const;

export const REGISTER_COMMAND = defineCommand({
  name: "register",
  summary: "register an agent wallet for a builder code and store it",
  usage: "<wallet> [options]",
  description: `Registers an agent wallet with the builder-code API (POST {base-url}/v1/agents/builder-codes) and
stores wallet -> code in the database. Safe to repeat: the same wallet always gets the same code.
Prints the code. With a config that runs the bundled devnet, the API is the registration stand-in
of the devnet the daemon runs for that database. Logs go to stderr.`,
  options: OPTIONS,
  positionals: true,
  epilog: `Exit 0 on success, 2 for a bad address or option, 75 when the API is unreachable,
times out or fails temporarily (try again later), 1 when it refuses the request.`,
  run: runRegisterCommand,
});

async function runRegisterCommand(
  { values, positionals }: ParsedCommand<typeof OPTIONS>,
  shutdown: Shutdown,
): Promise<void> {
  if (positionals.length !== 1)
    throw new UsageError(
      `register: expected one wallet address, got ${positionals.length} arguments (see flashindex register --help)`,
    );
  // A bad address is refused before the config is read or anything is sent.
  const wallet = parseWallet("<wallet>", positionals[0]);
  const baseUrl =
    values["base-url"] === undefined
      ? undefined
      : readUrl("--base-url", values["base-url"], ["http:", "https:"]);

  // The RPC is never contacted: registration needs only the API and the database. With a devnet
  // config and no --base-url, the API is the running devnet's registration stand-in.
  const { config, metrics } =
    baseUrl === undefined ? createContext(values, shutdown) : createStoreContext(values, shutdown);
  const store = await openStore(config, { metrics });
  shutdown.add(() => store.close());
  const client = createRegistrationClient({
    baseUrl: baseUrl ?? config.registration.baseUrl,
    timeoutMs: config.registration.timeoutMs,
  });
  const { builderCode } = await client.register(wallet, { signal: shutdown.signal });
  const saved = await store.saveRegistration(wallet, builderCode, Date.now());

  if (saved.status === "changed")
    console.error(
      `flashindex: warning: the builder code of ${wallet} changed from ${saved.previousCode} to ${builderCode}`,
    );
  if (values.json) {
    const { registeredAt, lastConfirmedAt } = saved.row;
    const previousCode = saved.status === "changed" ? saved.previousCode : null;
    return printJson({
      walletAddress: wallet,
      builderCode,
      status: saved.status,
      previousCode,
      registeredAt,
      lastConfirmedAt,
    });
  }
  console.log(builderCode);
}
