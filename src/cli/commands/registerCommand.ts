import { createRegistrationClient, parseWallet } from "../../attribution/registrationClient.js";
import { readUrl } from "../../config/fields.js";
import { UsageError } from "../../errors.js";
import type { Shutdown } from "../../ops/shutdown.js";
import { openDatabase } from "../../store/openDatabase.js";
import { saveRegistration } from "../../store/registrations.js";
import { parseCommandArgs } from "../args.js";
import { loadCommandSettings, resolveCommandConfig } from "../resolveConfig.js";
import { printJson } from "../output.js";

export const REGISTER_HELP = `Usage: flashindex register <wallet> [options]

Registers an agent wallet with the builder-code API (POST {base-url}/v1/agents/builder-codes) and
stores wallet -> code in the database. Safe to repeat: the same wallet always gets the same code.
Prints the code. Exit 0 on success, 2 for a bad address or option, 75 when the API is unreachable,
times out or fails temporarily (try again later), 1 when it refuses the request.

Options:
  --base-url URL      registration API (overrides registration.baseUrl; default https://api.base.dev)
  --json              print one JSON object instead of the code
  -c, --config PATH   config file (default: indexer.config.json)
  --db PATH           SQLite file (overrides database.path and FLASHINDEX_DB_PATH)
  --log-level LEVEL   trace, debug, info, warn, error, fatal or silent (logs go to stderr)
  -h, --help          show this help`;

export async function registerCommand(args: string[], shutdown: Shutdown): Promise<void> {
  const { values, positionals } = parseCommandArgs(
    "register",
    args,
    { "base-url": { type: "string" }, json: { type: "boolean" } },
    true,
  );
  if (values.help) return void console.log(REGISTER_HELP);
  if (positionals.length !== 1)
    throw new UsageError(`register: expected one wallet address, got ${positionals.length} arguments (see flashindex register --help)`);
  // A bad address is refused before the config is read or anything is sent.
  const wallet = parseWallet("<wallet>", positionals[0]);
  const baseUrl = values["base-url"] === undefined ? undefined : readUrl("--base-url", values["base-url"], ["http:", "https:"]);

  // The RPC is never contacted: registration needs only the API and the database. With a devnet
  // config and no --base-url, the API is the running devnet's registration stand-in.
  const config = baseUrl === undefined ? resolveCommandConfig(values) : loadCommandSettings(values);
  const db = openDatabase(config.database.path, config.chainId);
  shutdown.add(() => db.close());
  const client = createRegistrationClient({ baseUrl: baseUrl ?? config.registration.baseUrl, timeoutMs: config.registration.timeoutMs });
  const { builderCode } = await client.register(wallet, { signal: shutdown.signal });
  const saved = saveRegistration(db, wallet, builderCode, Date.now());

  if (saved.status === "changed")
    console.error(`flashindex: warning: the builder code of ${wallet} changed from ${saved.previousCode} to ${builderCode}`);
  if (values.json) {
    const { registeredAt, lastConfirmedAt } = saved.row;
    const previousCode = saved.status === "changed" ? saved.previousCode : null;
    return printJson({ walletAddress: wallet, builderCode, status: saved.status, previousCode, registeredAt, lastConfirmedAt });
  }
  console.log(builderCode);
}
