import type { Address } from "viem";

/** How far behind the head a block must be before we call it final. */
export type Finality = { tag: "finalized" | "safe" } | { depth: number };

export type TokenConfig = {
  /** As given in the config (checksummed or lower case): for messages. */
  readonly address: Address;
  /** The address in lower case, as logs and every table store it: the key for filters and queries. */
  readonly key: Address;
  readonly startBlock: number;
  readonly label: string | undefined;
  /**
   * Lower-case addresses whose logs alone are indexed (`tokens[].watch.addresses`, sorted, no
   * duplicates); undefined: every log of the token. See docs/watch.md.
   */
  readonly watch: readonly Address[] | undefined;
};

/**
 * Most addresses one token may watch: each list goes whole into an eth_getLogs topic position, and
 * providers refuse long OR lists there (several cap a filter at a few hundred topics).
 */
export const MAX_WATCHED_ADDRESSES = 100;

export type RetryConfig = {
  /** Attempts per request, the first one included. */
  readonly maxAttempts: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
};

export type RpcConfig = {
  /** HTTP JSON-RPC endpoints, in order of preference (failover). */
  readonly http: readonly string[];
  /** WebSocket endpoint for newHeads/logs subscriptions; undefined means poll. */
  readonly ws: string | undefined;
  /** Flashblocks WebSocket endpoint for pendingLogs; undefined means no subscription. */
  readonly preconfWs: string | undefined;
  readonly timeoutMs: number;
  /** A ceiling on calls per second (a batch counts each call); undefined: none until a provider refuses. */
  readonly requestsPerSecond: number | undefined;
  /** Answers larger than this are refused (and the window split) rather than parsed. */
  readonly maxResponseBytes: number;
  readonly retry: RetryConfig;
};

export type BackfillConfig = {
  /** Blocks per eth_getLogs window, at most MAX_WINDOW_BLOCKS. */
  readonly windowBlocks: number;
  readonly concurrency: number;
};

export type RealtimeConfig = {
  /** Follow the chain after the backfill (false: `start` only backfills to finality, repeatedly). */
  readonly enabled: boolean;
  /** How often to poll for a new head when no WebSocket is configured or it is down. */
  readonly headPollIntervalMs: number;
  /** How often to read the pre-confirmed ("pending") view; 0 turns it off (a node without Flashblocks). */
  readonly pendingPollIntervalMs: number;
  /**
   * Per-request timeout on the realtime path (head blocks, pending view), in ms: a hung request moves to
   * the next endpoint within a block or two instead of holding the follower for `rpc.timeoutMs`.
   */
  readonly requestTimeoutMs: number;
  /** WebSocket reconnect backoff, with full jitter. */
  readonly reconnectInitialDelayMs: number;
  readonly reconnectMaxDelayMs: number;
};

/** Builder-code registration (ERC-8021 attribution codes for agent wallets). */
export type RegistrationConfig = {
  /** Base URL of the registration API; the path is `/v1/agents/builder-codes`. */
  readonly baseUrl: string;
  /** Agent wallets the daemon registers at start (idempotent, in the background). */
  readonly wallets: readonly Address[];
  readonly timeoutMs: number;
};

/** The bundled local devnet (anvil behind a Flashblocks front) that `start` runs when enabled. */
export type DevnetConfig = {
  readonly enabled: boolean;
  readonly blockTimeMs: number;
  readonly flashblockIntervalMs: number;
  /** Demo payments per second; 0 for none. */
  readonly paymentsPerSecond: number;
  readonly reorgEverySeconds: number;
  readonly dropEverySeconds: number;
  /** Port of the front's JSON-RPC server (HTTP and WebSocket); 0 picks a free one. */
  readonly port: number;
};

/** The cancelAuthorization relay (`flashindex cancel`). Keys never live here: environment or key files only. */
export type CancelConfig = {
  /** Blocks the relay waits for, the receipt's own block included (1 = mined). */
  readonly confirmations: number;
  /** How long the relay waits for the receipt and its confirmations before giving up (exit 75). */
  readonly receiptTimeoutMs: number;
};

/** Where one relayer of the pool has its key: a file or an environment variable, never the config. */
export type RelayerKeySource = { readonly keyFile: string } | { readonly keyEnv: string };

/** The x402 facilitator `start` serves beside the indexer (src/settle/). Keys and tokens live in the environment only. */
export type FacilitatorConfig = {
  readonly enabled: boolean;
  readonly host: string;
  readonly port: number;
  /** Environment variable holding the relayer's private key. */
  readonly relayerKeyEnv: string;
  /** A file holding it instead (wins over the variable). */
  readonly relayerKeyFile: string | undefined;
  /** Per token: the smallest amount (base units) settled; a smaller payment is refused at verify and settle. */
  readonly minAmount: ReadonlyArray<{ readonly token: string; readonly amount: bigint }>;
  /** A pool of relayer keys (each from a file or a variable); empty: the one key above. */
  readonly relayers: ReadonlyArray<RelayerKeySource>;
  /** A relayer whose capture waits this long (ms) for a pre-confirmation takes no new settle until it has one. */
  readonly relayerStuckAfterMs: number;
  /** When /settle answers: once the transaction is pre-confirmed (a Flashblocks receipt), or once in a sealed block. */
  readonly settleWaitsFor: "preconfirmed" | "confirmed";
  /** Lower-case payees settled for; empty settles for any payee (loopback only). */
  readonly payTo: readonly string[];
  /** Environment variable holding the bearer token /verify and /settle require; undefined: none. */
  readonly authTokenEnv: string | undefined;
  /** The facilitator's own ERC-8021 code (`w` of the builder-code suffix). */
  readonly builderCode: string | undefined;
  /** Longest a /settle waits for its transaction before answering with a failure (the capture goes on). */
  readonly settleTimeoutMs: number;
  /** Largest request body read, in bytes. */
  readonly maxBodyBytes: number;
};

/** What a webhook subscription can ask for (docs/operations.md: "Webhooks"). */
export const WEBHOOK_EVENT_TYPES = [
  "payment.preconfirmed",
  "payment.confirmed",
  "payment.finalized",
  "payment.removed",
  "authorization.captured",
  "authorization.canceled",
  "order.state_changed",
  "settlement.contradicted",
  "settlement.settled",
  "settlement.failed",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** One webhook subscription. Filters left out match everything; the secret lives in the environment. */
export type WebhookConfig = {
  readonly url: string;
  readonly events: readonly WebhookEventType[] | undefined;
  /** Lower-case token addresses. */
  readonly tokens: readonly string[] | undefined;
  /** Lower-case addresses matched against the payer, payee or authorizer. */
  readonly addresses: readonly string[] | undefined;
  /** Name of the environment variable holding the HMAC secret (read at start, never logged). */
  readonly secretEnv: string;
  /** Lets the URL reach loopback, link-local and private addresses (refused otherwise, also once resolved). */
  readonly allowPrivateTargets: boolean;
};

/** How the webhook sender retries: exponential backoff with full jitter, then the event is parked. */
export type WebhookDeliveryConfig = {
  /** Attempts per event, the first one included. */
  readonly maxAttempts: number;
  /** An event still failing this long after it was written is parked after its next failure. */
  readonly maxHours: number;
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
  /** Per-request timeout. */
  readonly timeoutMs: number;
  /** Requests in flight at once, over all subscriptions (each subscription has at most one). */
  readonly concurrency: number;
  /** Delivered events (and their attempts) are deleted from the outbox after this many days. */
  readonly retentionDays: number;
};

export type Config = {
  readonly chainId: number;
  readonly rpc: RpcConfig;
  readonly tokens: readonly TokenConfig[];
  readonly backfill: BackfillConfig;
  readonly finality: Finality;
  readonly realtime: RealtimeConfig;
  readonly database: {
    /** The SQLite file (the default backend). */
    readonly path: string;
    /** postgres://… selects the Postgres backend instead of the file; credentials are redacted everywhere. */
    readonly url: string | undefined;
    /** The Postgres schema flashindex's tables live in: several deployments can share one database. */
    readonly schema: string;
  };
  /** The ops server; `statusPage` off answers / with 404 (the page shows payment and webhook figures). */
  readonly metrics: {
    readonly enabled: boolean;
    readonly host: string;
    readonly port: number;
    readonly statusPage: boolean;
  };
  readonly logLevel: LogLevel;
  readonly registration: RegistrationConfig;
  /**
   * Decode the ERC-8021 suffix of every transaction that emitted an indexed log. `entryPoints`: the
   * ERC-4337 EntryPoints whose handleOps calls are read as bundles (undefined: the known v0.6 to
   * v0.9 deployments, decode/erc4337.ts).
   */
  readonly attribution: {
    readonly enabled: boolean;
    readonly entryPoints: readonly Address[] | undefined;
  };
  readonly cancel: CancelConfig;
  readonly facilitator: FacilitatorConfig;
  readonly webhooks: readonly WebhookConfig[];
  readonly webhookDelivery: WebhookDeliveryConfig;
  /** When set and enabled (and no rpc section given), the RPC URLs are the running devnet's. */
  readonly devnet: DevnetConfig | undefined;
  /** Where the config came from, for messages. */
  readonly source: string;
};

/** A validated config before the devnet's URLs are known: a config that runs the devnet has no RPC URLs yet. */
export type ConfigSettings = Omit<Config, "rpc"> & { readonly rpc: RpcConfig | RpcTuning };

/** The rpc section without its URLs: what a config that runs the devnet may set. */
export type RpcTuning = Omit<RpcConfig, "http" | "ws" | "preconfWs">;

/** Where a running bundled devnet answers: JSON-RPC (HTTP), WebSocket, and the registration stand-in. */
export type DevnetEndpoints = {
  readonly httpUrl: string;
  readonly wsUrl: string;
  readonly registrationUrl: string;
};

export const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Providers recommend windows under 2,000 blocks; 1,999 is our hard ceiling. */
export const MAX_WINDOW_BLOCKS = 1_999;

export const DEFAULTS = {
  rpc: {
    timeoutMs: 30_000,
    requestsPerSecond: undefined as number | undefined,
    maxResponseBytes: 128 * 1024 * 1024,
    retry: { maxAttempts: 8, initialDelayMs: 250, maxDelayMs: 15_000 },
  },
  backfill: { windowBlocks: 1_000, concurrency: 4 },
  finality: { tag: "finalized" } as Finality,
  realtime: {
    enabled: true,
    headPollIntervalMs: 1_000,
    pendingPollIntervalMs: 200,
    // Two Base blocks: a hung request gives way before the head falls more than a block or two behind.
    requestTimeoutMs: 4_000,
    reconnectInitialDelayMs: 250,
    reconnectMaxDelayMs: 30_000,
  },
  database: { path: "data/flashindex.db", url: undefined, schema: "flashindex" },
  metrics: { enabled: true, host: "127.0.0.1", port: 9464, statusPage: true },
  logLevel: "info" as LogLevel,
  registration: { baseUrl: "https://api.base.dev", timeoutMs: 10_000 },
  cancel: { confirmations: 2, receiptTimeoutMs: 120_000 },
  // Port 4021: the x402 reference's facilitator examples use it.
  facilitator: {
    enabled: false,
    host: "127.0.0.1",
    port: 4021,
    relayerKeyEnv: "FLASHINDEX_RELAYER_KEY",
    minAmount: [],
    relayers: [],
    relayerStuckAfterMs: 5_000,
    settleWaitsFor: "preconfirmed",
    settleTimeoutMs: 30_000,
    maxBodyBytes: 65_536,
  },
  // 20 attempts with delays doubling from 1 s up to 1 h: about 14 hours of retries at most, capped at 24.
  webhookDelivery: {
    maxAttempts: 20,
    maxHours: 24,
    initialDelayMs: 1_000,
    maxDelayMs: 3_600_000,
    timeoutMs: 10_000,
    concurrency: 8,
    retentionDays: 7,
  },
  devnet: {
    blockTimeMs: 2_000,
    flashblockIntervalMs: 200,
    paymentsPerSecond: 2,
    reorgEverySeconds: 60,
    dropEverySeconds: 45,
    port: 8545,
  },
} as const;
