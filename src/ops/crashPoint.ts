import { writeSync } from "node:fs";

/**
 * The steps of a capture a kill -9 test stops the process at (test/settle/settleCrashPoints.test.ts).
 * "preconfirmed": a receipt showing the payment was seen (pre-confirmed, or sealed when a poll
 * missed the pre-confirmation), before any answer.
 */
export type CrashStep = "signed" | "stored" | "sent" | "preconfirmed";

/** Test-only: names the step at which the process kills itself with SIGKILL. */
export const CRASH_AT_ENV = "FLASHINDEX_TEST_CRASH_AT";

const STEPS: readonly CrashStep[] = ["signed", "stored", "sent", "preconfirmed"];

/**
 * For kill -9 tests: a hook that, when FLASHINDEX_TEST_CRASH_AT names `step`, writes one line to
 * stderr and kills this process with SIGKILL on the spot (nothing flushed, nothing closed, as a
 * real kill -9 or a power cut). Without the variable it does nothing.
 */
export function crashPointFromEnv(env: NodeJS.ProcessEnv): ((step: CrashStep) => void) | undefined {
  const wanted = env[CRASH_AT_ENV];
  if (wanted === undefined || !STEPS.includes(wanted as CrashStep)) return undefined;
  return (step) => {
    if (step !== wanted) return;
    writeSync(2, `flashindex: test crash point ${step}: SIGKILL\n`);
    process.kill(process.pid, "SIGKILL");
  };
}
