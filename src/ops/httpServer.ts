import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "./logger.js";
import type { Metrics } from "./metrics.js";
import type { Health } from "./health.js";
import { asListenError } from "./listenErrors.js";

/**
 * Serves /metrics (Prometheus text), /healthz (alive; "degraded" and why, when a part works less well), /readyz (503 with the reason when not ready)
 * and / (the HTML status page, once `setStatusPage` has given it a source: the database opens later).
 */
export async function startOpsServer(
  deps: { logger: Logger; metrics: Metrics; health: Health },
  options: { host: string; port: number; portKey?: string },
): Promise<{ url: string; close: () => Promise<void>; setStatusPage: (render: () => Promise<string>) => void }> {
  const logger = deps.logger.child({ component: "ops_server" });
  let statusPage: (() => Promise<string>) | undefined;
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    if (path === "/metrics") {
      deps.metrics.registry
        .metrics()
        .then((body) => response.writeHead(200, { "content-type": deps.metrics.registry.contentType }).end(body))
        .catch((error: unknown) => {
          logger.error({ msg: "Failed to render metrics", error: String(error) });
          response.writeHead(500).end();
        });
      return;
    }
    if (path === "/") {
      if (statusPage === undefined) {
        response.writeHead(503, { "content-type": "text/plain", "retry-after": "1" }).end("starting\n");
        return;
      }
      statusPage()
        .then((html) => response.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(html))
        .catch((error: unknown) => {
          logger.error({ msg: "Failed to render the status page", error: String(error) });
          response.writeHead(500, { "content-type": "text/plain" }).end("status page failed\n");
        });
      return;
    }
    if (path === "/healthz") {
      // Alive either way (200); a degraded part is named on its own line for the operator.
      const degraded = deps.health.degradedReasons();
      response.writeHead(200, { "content-type": "text/plain" }).end(degraded.length === 0 ? "ok\n" : `degraded\n${degraded.join("\n")}\n`);
      return;
    }
    if (path === "/readyz") {
      const reason = deps.health.notReadyReason();
      response.writeHead(reason === undefined ? 200 : 503, { "content-type": "text/plain" }).end(`${reason ?? "ready"}\n`);
      return;
    }
    response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.host, () => resolve());
    });
  } catch (error) {
    throw asListenError(error, { host: options.host, port: options.port, key: options.portKey ?? "metrics.port" });
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
