import { constants } from "node:os";

/**
 * Ends the process now, whatever its threads are doing, as if `signal` had not been handled.
 *
 * `process.exit` first waits for every worker thread to stop, and a thread inside one long SQLite
 * statement stops only when the statement returns: the maintenance thread's index build takes
 * minutes at hundreds of millions of logs (measured: a `process.exit(1)` called 1.5 s into a 37 s
 * statement on a worker thread returned after 37 s). So this runs the "exit" listeners (the log's
 * last lines are flushed; the devnet's anvil is stopped once it has written its chain, within a
 * bound: devnet/anvil.ts), then re-raises `signal` with its default action, which the kernel
 * carries out for all threads at once; the shell and supervisors see the process ended by that
 * signal (130 for SIGINT, 143 for SIGTERM). An unfinished SQLite transaction
 * is rolled back when the database is next opened, as after any crash.
 */
export function exitAtOnce(signal: NodeJS.Signals): never {
  const code = 128 + (constants.signals[signal] ?? 0);
  process.exitCode = code;
  process.emit("exit", code);
  // With no listener left, Node gives the signal back its default action (terminate).
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
  // Only reached if the signal could not end the process (blocked or ignored from outside).
  process.exit(code);
}
