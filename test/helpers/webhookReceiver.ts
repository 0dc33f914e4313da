import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { verifySignature } from "../../src/webhooks/signature.js";

/** How the receiver answers one request: 2xx, a 500, never (the sender times out), or a reset connection. */
export type ReceiverAnswer = "ok" | "fail" | "hang" | "reset";

export type Receipt = {
  /** Flashindex-Event-Id. */
  id: string;
  /** The outbox row number inside the id. */
  seq: number;
  type: string;
  body: Record<string, any>;
  signatureValid: boolean;
  answer: ReceiverAnswer;
};

/**
 * A real local HTTP webhook receiver. `answer(n, receipt)` decides the response to the n-th request
 * (0-based); every request is recorded with whether its signature verifies with `secret`.
 */
export async function startWebhookReceiver(
  secret: string,
  answer: (n: number, receipt: Omit<Receipt, "answer">) => ReceiverAnswer = () => "ok",
) {
  const receipts: Receipt[] = [];
  const hanging = new Set<ServerResponse>();
  let decide = answer;
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      const id = String(request.headers["flashindex-event-id"]);
      const partial = {
        id,
        seq: Number(id.split("_")[2]),
        type: String(request.headers["flashindex-event-type"]),
        body: JSON.parse(raw) as Record<string, any>,
        signatureValid: verifySignature(
          String(request.headers["flashindex-signature"] ?? ""),
          raw,
          secret,
          Math.floor(Date.now() / 1_000),
        ),
      };
      const chosen = decide(receipts.length, partial);
      receipts.push({ ...partial, answer: chosen });
      if (chosen === "ok") response.writeHead(204).end();
      else if (chosen === "fail")
        response.writeHead(500, { "content-type": "text/plain" }).end("boom");
      else if (chosen === "reset") request.socket.destroy();
      else hanging.add(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    receipts,
    /** Receipts answered 2xx. */
    delivered: () => receipts.filter((r) => r.answer === "ok"),
    setAnswer(next: typeof answer) {
      decide = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
