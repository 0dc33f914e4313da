import { setPriority } from "node:os";

/**
 * Lowers the calling thread's priority to `nice` (a worker thread beside live work: the decode
 * thread, the window writer). On Linux a nice value set from a thread is that thread's alone
 * (elsewhere it would be the process's, so nothing is changed there). A sandbox that refuses it
 * leaves the thread at the process's priority: slower live work beside a backfill, nothing worse,
 * so the thread goes on.
 */
export function niceThisThread(nice: number): void {
  if (nice === 0 || process.platform !== "linux") return;
  try {
    setPriority(nice);
  } catch {
    // Kept at the process's priority.
  }
}
