import { numberToHex, parseEther, type LocalAccount } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { startCaptureDriver } from "../authorization/captureDriver.js";
import type { CaptureRelay } from "../authorization/captureRelay.js";
import { readRelayerPool } from "../authorization/keySources.js";
import { readTokenDomainOverRpc } from "../authorization/tokenReads.js";
import type { Common } from "../common.js";
import { runsDevnet } from "../config/parseConfig.js";
import { ConfigError } from "../errors/base.js";
import type { Store } from "../store/store.js";
import { facilitatorBuilderCode } from "./builderCode.js";
import { createFacilitator } from "./facilitator.js";
import {
  facilitatorRecordPath,
  removeFacilitatorRecord,
  writeFacilitatorRecord,
} from "./facilitatorRecord.js";
import { startFacilitatorServer } from "./facilitatorServer.js";
import { evmNetwork } from "./wire.js";

/** anvil's default mnemonic: the devnet's keys. Index 10 is the first no demo part uses. */
const DEVNET_MNEMONIC = "test test test test test test test test test test test junk";
const DEVNET_RELAYER_INDEX = 10;
/** What the devnet relayer is given for gas. */
const DEVNET_RELAYER_ETH = "1000";
/** A shorter bearer token is guessable; 16 characters of hex are 64 bits. */
const AUTH_TOKEN_MIN_CHARS = 16;
/** RFC 9110 §11.2 token68 (as RFC 6750's b64token). */
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

/**
 * The daemon's settlement side: the capture driver (always: it drives what `order capture` and a
 * crash left), and, when `facilitator.enabled`, the x402 facilitator on its own port. Its URL goes
 * to the log and to `<database>.facilitator.json` beside a SQLite database, for other commands.
 * On the bundled devnet with no key configured, a devnet key is funded and used.
 */
export async function startSettlement(
  deps: Common & { store: Store },
): Promise<{ facilitatorUrl: string | undefined; relay: CaptureRelay }> {
  const settings = deps.config.facilitator;
  let relayers: LocalAccount[] = readRelayerPool(settings);
  if (relayers.length === 0 && settings.enabled && runsDevnet(deps.config))
    relayers = [await fundedDevnetRelayer(deps)];
  const relay = startCaptureDriver({ ...deps, relayers });
  if (!settings.enabled) return { facilitatorUrl: undefined, relay };
  const relayer = relayers[0];
  if (relayer === undefined)
    throw new ConfigError(
      "facilitator.relayerKeyEnv",
      `${settings.relayerKeyEnv} is not set: the facilitator sends settlements from the relayer's key (or set facilitator.relayerKeyFile)`,
    );
  const authToken =
    settings.authTokenEnv === undefined ? undefined : readAuthToken(settings.authTokenEnv);
  const tokens = await Promise.all(
    deps.config.tokens.map(async (token) => {
      const domain = await readTokenDomainOverRpc(deps.client, token.address, deps.config.chainId);
      return { address: token.address, name: domain.name, version: domain.version };
    }),
  );
  const builderCode = await facilitatorBuilderCode(deps, settings.builderCode, relayer.address);
  const facilitator = createFacilitator({
    client: deps.client,
    store: deps.store,
    relay,
    logger: deps.logger,
    metrics: deps.metrics,
    chainId: deps.config.chainId,
    tokens,
    relayer: relayer.address,
    signers: relayers.map((r) => r.address),
    payTo: settings.payTo as `0x${string}`[],
    minAmounts: new Map(settings.minAmount.map((floor) => [floor.token, floor.amount])),
    settleWaitsFor: settings.settleWaitsFor,
    settleTimeoutMs: settings.settleTimeoutMs,
    builderCode,
  });
  const server = await startFacilitatorServer(deps, facilitator, {
    host: settings.host,
    port: settings.port,
    authToken,
    maxBodyBytes: settings.maxBodyBytes,
    settleTimeoutMs: settings.settleTimeoutMs,
    network: evmNetwork(deps.config.chainId),
  });
  deps.shutdown.add(() => server.close());
  if (deps.config.database.url === undefined) {
    const recordPath = facilitatorRecordPath(deps.config.database.path);
    writeFacilitatorRecord(recordPath, {
      pid: process.pid,
      url: server.url,
      relayer: relayer.address,
      settleWaitsFor: settings.settleWaitsFor,
    });
    deps.shutdown.add(() => removeFacilitatorRecord(recordPath, process.pid));
  }
  deps.logger.info({
    msg: "Started x402 facilitator",
    url: server.url,
    relayer: relayer.address,
    relayers: relayers.map((r) => r.address),
    settle_waits_for: settings.settleWaitsFor,
    builder_code: builderCode ?? null,
    pay_to: settings.payTo.length === 0 ? "any" : settings.payTo,
  });
  return { facilitatorUrl: server.url, relay };
}

/**
 * The bearer token from the variable `envName` names. It must be a token68 (RFC 9110 §11.2, the
 * form `Authorization: Bearer` carries) of at least AUTH_TOKEN_MIN_CHARS characters. Errors name
 * the setting and the variable, never the value.
 */
export function readAuthToken(envName: string, env: NodeJS.ProcessEnv = process.env): string {
  const token = env[envName]?.trim();
  if (token === undefined || token === "")
    throw new ConfigError(
      "facilitator.authTokenEnv",
      `the environment variable ${envName} is not set (the bearer token /verify and /settle require)`,
    );
  if (token.length < AUTH_TOKEN_MIN_CHARS || !TOKEN68.test(token))
    throw new ConfigError(
      "facilitator.authTokenEnv",
      `${envName} must hold at least ${AUTH_TOKEN_MIN_CHARS} characters of A-Z a-z 0-9 - . _ ~ + / (e.g. openssl rand -hex 32); the value is not shown`,
    );
  return token;
}

/** A devnet-only relayer: anvil's mnemonic at an index no demo part uses, given ETH for gas. */
async function fundedDevnetRelayer(deps: Common): Promise<LocalAccount> {
  const account = mnemonicToAccount(DEVNET_MNEMONIC, { addressIndex: DEVNET_RELAYER_INDEX });
  await deps.client.request("anvil_setBalance", [
    account.address,
    numberToHex(parseEther(DEVNET_RELAYER_ETH)),
  ]);
  deps.logger.info({ msg: "Funded the devnet relayer", relayer: account.address });
  return account;
}
