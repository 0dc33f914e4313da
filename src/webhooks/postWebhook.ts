import http from "node:http";
import https from "node:https";
import { privateHostOf } from "../config/privateAddresses.js";
import { PrivateTargetError } from "../errors/webhooks.js";
import { createConnectLookup, systemResolve, type Resolve } from "./webhookTargets.js";

/**
 * Keep-alive agents: a subscription sends one request after another to the same receiver. Idle
 * sockets do not keep the process alive. Sockets opened without the public-address check are pooled
 * apart: an agent reuses a socket by host and port alone, so a subscription that allows private
 * targets must not lend one to a subscription that does not.
 */
const AGENTS = {
  checked: {
    "http:": new http.Agent({ keepAlive: true }),
    "https:": new https.Agent({ keepAlive: true }),
  },
  unchecked: {
    "http:": new http.Agent({ keepAlive: true }),
    "https:": new https.Agent({ keepAlive: true }),
  },
} as const;

export type WebhookRequest = {
  url: string;
  headers: Record<string, string>;
  body: string;
  allowPrivateTargets: boolean;
  signal: AbortSignal;
};

/**
 * POSTs one webhook and resolves with the HTTP status once the response headers arrive (the body
 * is discarded). Over node:http rather than fetch because only its `lookup` hook lets the address
 * actually connected to be checked (createConnectLookup) unless `allowPrivateTargets`; an IP literal
 * is never looked up, so it is checked here. Redirects are not followed (a 3xx is a failed attempt).
 * `resolve` is the system resolver but for tests.
 */
export function postWebhook(
  request: WebhookRequest,
  resolve: Resolve = systemResolve,
): Promise<number> {
  const target = new URL(request.url);
  if (!request.allowPrivateTargets) {
    const range = privateHostOf(target);
    if (range !== undefined)
      return Promise.reject(
        new PrivateTargetError(
          `${target.hostname} is a ${range} address: refused (set allowPrivateTargets on the subscription to allow it)`,
        ),
      );
  }
  const protocol = target.protocol === "https:" ? "https:" : "http:";
  const send = protocol === "https:" ? https.request : http.request;
  const lookup = createConnectLookup(resolve, !request.allowPrivateTargets);
  return new Promise((answered, failed) => {
    const outgoing = send(
      target,
      {
        method: "POST",
        agent: AGENTS[request.allowPrivateTargets ? "unchecked" : "checked"][protocol],
        signal: request.signal,
        headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
        lookup: lookup as never,
      },
      (response) => {
        response.resume();
        answered(response.statusCode ?? 0);
      },
    );
    outgoing.on("error", failed);
    outgoing.end(request.body);
  });
}
