/**
 * Runs `call(0)`, and `call(1)` too if the first has not settled after `hedgeAfterMs`: the first
 * answer wins (a hedged request, "The Tail at Scale", Dean and Barroso 2013). A failure waits for the
 * other call if it was sent; when both fail, the first failure is thrown. A call that fails before
 * the hedge is due fails at once (the caller's retry policy backs off). The loser is not cancelled: its timeout
 * ends it, and a hung request costs one slot until then.
 */
export function hedgedCall<T>(
  call: (hedge: number) => Promise<T>,
  hedgeAfterMs: number,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let failures = 0;
    let firstError: unknown;
    let started = 0;
    const fail = (error: unknown) => {
      failures++;
      if (failures === 1) firstError = error;
      // Failed before the hedge left (a quick refusal: the caller's retry backs off), or both failed.
      if (failures >= started) finish(() => reject(firstError));
    };
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      settle();
    };
    const start = () => {
      const index = started++;
      call(index).then((value) => finish(() => resolve(value)), fail);
    };
    const timer = setTimeout(() => {
      if (!settled && started < 2) start();
    }, hedgeAfterMs);
    start();
  });
}
