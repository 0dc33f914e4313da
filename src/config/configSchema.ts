import {
  DEFAULTS,
  LOG_LEVELS,
  MAX_WATCHED_ADDRESSES,
  MAX_WINDOW_BLOCKS,
  WEBHOOK_EVENT_TYPES,
} from "./types.js";

/**
 * The config file's keys, types, bounds and defaults, declared once. parseConfig takes every
 * section's allowed keys and every integer's bounds from here, and `npm run schema` writes
 * config/flashindex.schema.json from here (test/config/configSchema.test.ts checks the committed
 * file is current), so the validator, the schema and the README table cannot drift apart.
 */
export type Field =
  | { type: "integer"; min: number; max: number; default?: number; description: string }
  | { type: "boolean"; default?: boolean; description: string }
  | {
      type: "string";
      format?: "http-url" | "ws-url" | "address" | "path" | "text";
      default?: string;
      description: string;
    }
  | { type: "enum"; values: readonly string[]; default?: string; description: string }
  | {
      type: "object";
      properties: Record<string, Field>;
      required?: readonly string[];
      description: string;
    }
  | { type: "array"; items: Field; minItems?: number; description: string }
  | { type: "anyOf"; options: readonly Field[]; default?: unknown; description: string };

const ms = (
  min: number,
  max: number,
  fallback: number | undefined,
  description: string,
): Field => ({
  type: "integer",
  min,
  max,
  ...(fallback === undefined ? {} : { default: fallback }),
  description,
});
const d = DEFAULTS;
const HTTP_URL: Field = { type: "string", format: "http-url", description: "an http(s) URL" };
const WS_URL = (description: string): Field => ({ type: "string", format: "ws-url", description });
const ADDRESS: Field = {
  type: "string",
  format: "address",
  description: "0x and 40 hex digits; mixed case must carry a valid EIP-55 checksum",
};
const DEPTH: Field = {
  type: "integer",
  min: 0,
  max: 100_000,
  description: "blocks below the head",
};

export const CONFIG_FIELDS: Record<string, Field> = {
  $schema: { type: "string", format: "text", description: "this schema's location, for editors" },
  chainId: {
    type: "integer",
    min: 1,
    max: 2 ** 53 - 1,
    description: "chain the RPC must serve (8453 Base, 84532 Base Sepolia)",
  },
  rpc: {
    type: "object",
    description: "JSON-RPC access (omit the URLs when devnet.enabled: the devnet gives them)",
    properties: {
      http: {
        type: "anyOf",
        options: [
          HTTP_URL,
          { type: "array", items: HTTP_URL, minItems: 1, description: "in order of preference" },
        ],
        description: "JSON-RPC endpoints in order of preference (failover)",
      },
      ws: WS_URL("WebSocket endpoint for newHeads/logs subscriptions"),
      preconfWs: WS_URL("Flashblocks endpoint for the pendingLogs subscription"),
      timeoutMs: ms(100, 600_000, d.rpc.timeoutMs, "per-request timeout"),
      requestsPerSecond: ms(
        1,
        100_000,
        d.rpc.requestsPerSecond,
        "ceiling on calls per second across all work (a batch counts each call); absent: none, so nothing is paced until a provider's refusals are more than strays would explain, and from then on the client keeps just under the rate the provider accepted, probing above it every half minute",
      ),
      maxResponseBytes: ms(
        1024,
        2 ** 31,
        d.rpc.maxResponseBytes,
        "larger answers are cut off and the window split",
      ),
      retry: {
        type: "object",
        description: "retries of transient failures, exponential backoff with full jitter",
        properties: {
          maxAttempts: ms(
            1,
            100,
            d.rpc.retry.maxAttempts,
            "attempts per request, the first included; a provider's rate limit (HTTP 429) spends none",
          ),
          initialDelayMs: ms(0, 600_000, d.rpc.retry.initialDelayMs, "first backoff"),
          maxDelayMs: ms(
            0,
            3_600_000,
            d.rpc.retry.maxDelayMs,
            "largest backoff (at least initialDelayMs)",
          ),
        },
      },
    },
  },
  tokens: {
    type: "array",
    minItems: 1,
    description: "the EIP-3009 tokens to index",
    items: {
      type: "object",
      description: "one token",
      required: ["address", "startBlock"],
      properties: {
        address: ADDRESS,
        startBlock: {
          type: "integer",
          min: 0,
          max: Number.MAX_SAFE_INTEGER,
          description: "first block to index",
        },
        label: { type: "string", format: "text", description: "a name for humans" },
        watch: {
          type: "object",
          description:
            "index only the logs concerning these addresses (absent: every log of the token); see docs/watch.md",
          properties: {
            addresses: {
              type: "array",
              items: ADDRESS,
              description: `at most ${MAX_WATCHED_ADDRESSES} addresses; empty: every log of the token`,
            },
          },
        },
      },
    },
  },
  backfill: {
    type: "object",
    description: "historical indexing",
    properties: {
      windowBlocks: ms(1, MAX_WINDOW_BLOCKS, d.backfill.windowBlocks, "blocks per eth_getLogs"),
      concurrency: ms(1, 64, d.backfill.concurrency, "windows in flight"),
    },
  },
  finality: {
    type: "anyOf",
    default: "finalized",
    description: "how far back a block must be before it counts as final",
    options: [
      { type: "enum", values: ["finalized", "safe"], description: "the node's tag" },
      DEPTH,
      { type: "object", description: "a depth", required: ["depth"], properties: { depth: DEPTH } },
    ],
  },
  realtime: {
    type: "object",
    description: "following the chain after the backfill",
    properties: {
      enabled: {
        type: "boolean",
        default: d.realtime.enabled,
        description: "follow the chain (off: only backfill to finality, repeatedly)",
      },
      headPollIntervalMs: ms(
        50,
        600_000,
        d.realtime.headPollIntervalMs,
        "head polling when rpc.ws is absent or quiet",
      ),
      pendingPollIntervalMs: ms(
        0,
        600_000,
        d.realtime.pendingPollIntervalMs,
        "polling of the pending view; 0 turns it off",
      ),
      requestTimeoutMs: ms(
        100,
        600_000,
        d.realtime.requestTimeoutMs,
        "per-request timeout on the realtime path",
      ),
      reconnectInitialDelayMs: ms(
        1,
        600_000,
        d.realtime.reconnectInitialDelayMs,
        "WebSocket reconnect backoff, first",
      ),
      reconnectMaxDelayMs: ms(
        1,
        3_600_000,
        d.realtime.reconnectMaxDelayMs,
        "WebSocket reconnect backoff, largest",
      ),
    },
  },
  database: {
    type: "object",
    description: "where the data goes: the SQLite file, or Postgres when url is set",
    properties: {
      path: {
        type: "string",
        format: "path",
        default: d.database.path,
        description: "the SQLite file",
      },
      url: {
        type: "string",
        format: "text",
        description:
          "postgres:// URL: selects the Postgres backend (better given as FLASHINDEX_DATABASE_URL)",
      },
      schema: {
        type: "string",
        format: "text",
        default: d.database.schema,
        description: "the Postgres schema flashindex's tables live in",
      },
    },
  },
  metrics: {
    type: "object",
    description: "the /metrics, /healthz, /readyz server",
    properties: {
      enabled: { type: "boolean", default: d.metrics.enabled, description: "serve them" },
      host: {
        type: "string",
        format: "text",
        default: d.metrics.host,
        description: "listen address",
      },
      port: ms(0, 65_535, d.metrics.port, "listen port"),
      statusPage: {
        type: "boolean",
        default: d.metrics.statusPage,
        description: "serve the HTML status page at / (it shows payment and webhook figures)",
      },
    },
  },
  logLevel: {
    type: "enum",
    values: LOG_LEVELS,
    default: d.logLevel,
    description: "pino log level",
  },
  devnet: {
    type: "object",
    description: "run the bundled local devnet and point rpc at it",
    properties: {
      enabled: { type: "boolean", default: true, description: "true when the section exists" },
      blockTimeMs: ms(
        0,
        600_000,
        d.devnet.blockTimeMs,
        "canonical block cadence; 0: only on devnet_mine",
      ),
      flashblockIntervalMs: ms(
        0,
        60_000,
        d.devnet.flashblockIntervalMs,
        "flashblock cadence; 0: only on devnet_flashblock",
      ),
      paymentsPerSecond: ms(0, 1_000, d.devnet.paymentsPerSecond, "demo traffic; 0 for none"),
      reorgEverySeconds: ms(
        0,
        86_400,
        d.devnet.reorgEverySeconds,
        "how often the demo reorgs a block; 0 for never",
      ),
      dropEverySeconds: ms(
        0,
        86_400,
        d.devnet.dropEverySeconds,
        "how often the demo drops a pre-confirmation; 0 for never",
      ),
      port: ms(
        0,
        65_535,
        d.devnet.port,
        "the devnet's JSON-RPC port (HTTP and WebSocket); 0 picks a free port",
      ),
    },
  },
  registration: {
    type: "object",
    description: "builder-code registration",
    properties: {
      baseUrl: {
        type: "string",
        format: "http-url",
        default: d.registration.baseUrl,
        description: "registration API (POST /v1/agents/builder-codes)",
      },
      wallets: {
        type: "array",
        items: ADDRESS,
        description: "agent wallets the daemon registers at start",
      },
      timeoutMs: ms(
        100,
        600_000,
        d.registration.timeoutMs,
        "per-request timeout of the registration API",
      ),
    },
  },
  attribution: {
    type: "object",
    description: "ERC-8021 attribution",
    properties: {
      enabled: {
        type: "boolean",
        default: true,
        description: "decode the suffix of every transaction that emitted an indexed log",
      },
      entryPoints: {
        type: "array",
        items: ADDRESS,
        description:
          "ERC-4337 EntryPoints whose handleOps/handleAggregatedOps calls are read as bundles (default: the v0.6, v0.7, v0.8 and v0.9 deployments)",
      },
    },
  },
  webhooks: {
    type: "array",
    description: "signed webhook subscriptions for payment events",
    items: {
      type: "object",
      description: "one subscription (one per URL)",
      required: ["url", "secretEnv"],
      properties: {
        url: HTTP_URL,
        secretEnv: {
          type: "string",
          format: "text",
          description: "the environment variable holding the HMAC secret (never the secret itself)",
        },
        events: {
          type: "array",
          minItems: 1,
          items: { type: "enum", values: WEBHOOK_EVENT_TYPES, description: "an event type" },
          description: "only these event types (default: all)",
        },
        tokens: {
          type: "array",
          minItems: 1,
          items: ADDRESS,
          description: "only these tokens (default: all)",
        },
        addresses: {
          type: "array",
          minItems: 1,
          items: ADDRESS,
          description: "only payments whose payer, payee or authorizer is one of these",
        },
        allowPrivateTargets: {
          type: "boolean",
          default: false,
          description:
            "let the URL reach loopback, link-local or private addresses (refused otherwise, also once resolved)",
        },
      },
    },
  },
  webhookDelivery: {
    type: "object",
    description: "how webhook events are delivered",
    properties: {
      maxAttempts: ms(
        1,
        1_000,
        d.webhookDelivery.maxAttempts,
        "attempts per event before it is parked",
      ),
      maxHours: ms(
        1,
        24 * 30,
        d.webhookDelivery.maxHours,
        "hours of retries at most before it is parked",
      ),
      initialDelayMs: ms(
        1,
        3_600_000,
        d.webhookDelivery.initialDelayMs,
        "first retry delay (exponential, full jitter)",
      ),
      maxDelayMs: ms(
        1,
        86_400_000,
        d.webhookDelivery.maxDelayMs,
        "largest retry delay (at least initialDelayMs)",
      ),
      timeoutMs: ms(50, 600_000, d.webhookDelivery.timeoutMs, "per-request timeout"),
      concurrency: ms(
        1,
        256,
        d.webhookDelivery.concurrency,
        "requests in flight over all subscriptions",
      ),
      retentionDays: ms(
        1,
        3_650,
        d.webhookDelivery.retentionDays,
        "days delivered events are kept",
      ),
    },
  },
  cancel: {
    type: "object",
    description: "flashindex cancel",
    properties: {
      confirmations: ms(
        1,
        1_000,
        d.cancel.confirmations,
        "blocks flashindex cancel waits for, the receipt's included",
      ),
      receiptTimeoutMs: ms(
        100,
        3_600_000,
        d.cancel.receiptTimeoutMs,
        "how long flashindex cancel waits for them",
      ),
    },
  },
  facilitator: {
    type: "object",
    description:
      "the x402 facilitator (POST /verify, POST /settle, GET /supported) served by flashindex start",
    properties: {
      enabled: { type: "boolean", default: d.facilitator.enabled, description: "serve it" },
      host: {
        type: "string",
        format: "text",
        default: d.facilitator.host,
        description: "listen address; off loopback, authTokenEnv and payTo are required",
      },
      port: ms(0, 65_535, d.facilitator.port, "listen port; 0 picks a free one"),
      relayerKeyEnv: {
        type: "string",
        format: "text",
        default: d.facilitator.relayerKeyEnv,
        description: "the environment variable holding the relayer's private key",
      },
      relayerKeyFile: {
        type: "string",
        format: "path",
        description: "a file holding the relayer's private key instead",
      },
      relayers: {
        type: "array",
        minItems: 1,
        description:
          "a pool of relayer keys instead of the one key: each settle goes to the relayer with the least pending work, a stuck one is skipped; keys only from files or environment variables",
        items: {
          type: "object",
          description: "one relayer: exactly one of keyFile and keyEnv",
          properties: {
            keyFile: {
              type: "string",
              format: "path",
              description: "a file holding this relayer's private key",
            },
            keyEnv: {
              type: "string",
              format: "text",
              description: "the environment variable holding this relayer's private key",
            },
          },
        },
      },
      minAmount: {
        type: "array",
        description:
          "the smallest payment settled per token: a smaller one is refused with invalid_exact_evm_authorization_value (a settle's gas can cost more than a tiny payment carries)",
        items: {
          type: "object",
          description: "one token's floor",
          required: ["token", "amount"],
          properties: {
            token: ADDRESS,
            amount: {
              type: "string",
              format: "text",
              description:
                "the smallest amount, in the token's base units (USDC: 1000 is $0.001), as a decimal string",
            },
          },
        },
      },
      relayerStuckAfterMs: ms(
        500,
        600_000,
        d.facilitator.relayerStuckAfterMs,
        "a relayer whose capture is not pre-confirmed this long after its send takes no new settle until it is",
      ),
      settleWaitsFor: {
        type: "enum",
        values: ["preconfirmed", "confirmed"],
        default: d.facilitator.settleWaitsFor,
        description: "when /settle answers: pre-confirmed (Flashblocks) or in a sealed block",
      },
      payTo: {
        type: "array",
        items: ADDRESS,
        description: "the payees settled for; empty or absent: any (loopback only)",
      },
      authTokenEnv: {
        type: "string",
        format: "text",
        description:
          "the environment variable holding the bearer token /verify and /settle require (16+ characters); required off loopback",
      },
      builderCode: {
        type: "string",
        format: "text",
        description:
          "the facilitator's own ERC-8021 builder code (w in the suffix), ^[a-z0-9_]{1,32}$; unset: the code flashindex register stored for the relayer wallet",
      },
      settleTimeoutMs: ms(
        1_000,
        600_000,
        d.facilitator.settleTimeoutMs,
        "longest a /settle waits for its transaction",
      ),
      maxBodyBytes: ms(1_024, 10_485_760, d.facilitator.maxBodyBytes, "largest request body read"),
    },
  },
};

/** The field at a dotted path (`rpc.retry`, `tokens[]` for an array's items); throws for a path not declared (a bug). */
export function fieldAt(path: string): Field {
  let fields: Record<string, Field> = CONFIG_FIELDS;
  let field: Field | undefined;
  for (const part of path.split(".")) {
    const name = part.replace(/\[\]$/, "");
    field = fields[name];
    if (field !== undefined && part.endsWith("[]") && field.type === "array") field = field.items;
    if (field === undefined)
      throw new Error(`config field ${path} is not declared in CONFIG_FIELDS`);
    fields = propertiesOf(field);
  }
  if (field === undefined) throw new Error(`config field ${path} is not declared in CONFIG_FIELDS`);
  return field;
}

/** The properties of an object field, or of the object form of an anyOf (`finality: { depth }`). */
function propertiesOf(field: Field): Record<string, Field> {
  if (field.type === "object") return field.properties;
  const object =
    field.type === "anyOf" ? field.options.find((o) => o.type === "object") : undefined;
  return object?.type === "object" ? object.properties : {};
}

/** The keys allowed in the object at `path` ("" for the root). */
export function keysAt(path: string): string[] {
  const keys = Object.keys(path === "" ? CONFIG_FIELDS : propertiesOf(fieldAt(path)));
  if (keys.length === 0) throw new Error(`config field ${path} is not an object`);
  return keys;
}

/** The bounds of the integer at `path`. */
export function integerBoundsAt(path: string): { min: number; max: number } {
  const field = fieldAt(path);
  if (field.type !== "integer") throw new Error(`config field ${path} is not an integer`);
  return { min: field.min, max: field.max };
}
