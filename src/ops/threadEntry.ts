import { parentPort } from "node:worker_threads";

/**
 * A worker thread's message loop, the one every thread entry runs: "close" releases what the
 * thread holds (`close`: its database connection) and closes the port, so the thread ends once its
 * work is done; any other message goes to `handle`. Call once, from the entry module.
 */
export function serveThreadMessages<Message>(
  handle: (message: Message) => void,
  close: () => void = () => undefined,
): void {
  const port = parentPort;
  if (port === null) throw new Error("serveThreadMessages: not running on a worker thread");
  port.on("message", (message: Message | "close") => {
    if (message === "close") {
      close();
      port.close();
      return;
    }
    handle(message);
  });
}
