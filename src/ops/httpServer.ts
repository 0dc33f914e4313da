import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";
import type { Health } from "./health.js";
import { asListenError } from "./listenErrors.js";

/**
 * Bounds on what a client may hold of the ops server. It often listens beyond localhost (a container,
 * a scrape network): a client sending headers a byte at a time, or opening sockets without end, would
 * otherwise hold them open (Node's own requestTimeout is 300 s, with no cap on connections).
 * A scrape, a health probe and the status page each answer in well under these.
 */
export const OPS_HEADERS_TIMEOUT_MS = 10_000;
export const OPS_REQUEST_TIMEOUT_MS = 30_000;
export const OPS_MAX_CONNECTIONS = 64;

/** The ops server's bounds on clients (the OPS_* constants unless a test passes smaller ones). */
export type OpsServerLimits = {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
};
const OPS_LIMITS: OpsServerLimits = {
  headersTimeoutMs: OPS_HEADERS_TIMEOUT_MS,
  requestTimeoutMs: OPS_REQUEST_TIMEOUT_MS,
  maxConnections: OPS_MAX_CONNECTIONS,
};

/**
 * Serves /metrics (Prometheus text), /healthz (alive; "degraded" and why, when a part works less well),
 * /readyz (503 with the reason when not ready)
 * and / (the HTML status page, once `setStatusPage` has given it a source: the database opens later;
 * with `statusPage: false`, / is a 404 like any unknown path).
 */
export async function startOpsServer(
  deps: { logger: Logger; metrics: Metrics; health: Health },
  options: {
    host: string;
    port: number;
    portKey?: string;
    statusPage?: boolean;
    limits?: OpsServerLimits;
  },
): Promise<{
  url: string;
  close: () => Promise<void>;
  setStatusPage: (render: () => Promise<string>) => void;
}> {
  const logger = deps.logger.child({ component: "ops_server" });
  let statusPage: (() => Promise<string>) | undefined;
  const limits = options.limits ?? OPS_LIMITS;
  // Node checks the timeouts on this interval (30 s by default): a quarter of the headers timeout keeps it close.
  const connectionsCheckingInterval = Math.max(
    10,
    Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4)),
  );
  const server: Server = createServer({ connectionsCheckingInterval }, (request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path === "/metrics") {
      deps.metrics.registry
        .metrics()
        .then((body) =>
          response.writeHead(200, { "content-type": deps.metrics.registry.contentType }).end(body),
        )
        .catch((error: unknown) => {
          logger.error({ msg: "Failed to render metrics", error: String(error) });
          response.writeHead(500).end();
        });
      return;
    }
    if (path === "/" && options.statusPage !== false) {
      if (statusPage === undefined) {
        response
          .writeHead(503, { "content-type": "text/plain", "retry-after": "1" })
          .end("starting\n");
        return;
      }
      statusPage()
        .then((html) =>
          response
            .writeHead(200, {
              "content-type": "text/html; charset=utf-8",
              "cache-control": "no-store",
            })
            .end(html),
        )
        .catch((error: unknown) => {
          logger.error({ msg: "Failed to render the status page", error: String(error) });
          response.writeHead(500, { "content-type": "text/plain" }).end("status page failed\n");
        });
      return;
    }
    if (path === "/healthz") {
      // Alive either way (200); a degraded part is named on its own line for the operator.
      const degraded = deps.health.degradedReasons();
      response
        .writeHead(200, { "content-type": "text/plain" })
        .end(degraded.length === 0 ? "ok\n" : `degraded\n${degraded.join("\n")}\n`);
      return;
    }
    if (path === "/readyz") {
      const reason = deps.health.notReadyReason();
      response
        .writeHead(reason === undefined ? 200 : 503, { "content-type": "text/plain" })
        .end(`${reason ?? "ready"}\n`);
      return;
    }
    response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.maxConnections = limits.maxConnections;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (error) {
    throw asListenError(error, {
      host: options.host,
      port: options.port,
      key: options.portKey ?? "metrics.port",
    });
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`;
  logger.info({ msg: "Started metrics and health server", url });
  return {
    url,
    setStatusPage: (render) => {
      statusPage = render;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
