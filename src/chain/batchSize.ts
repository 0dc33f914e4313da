/**
 * The most calls a batch may carry, learnt from refusals: a provider that counts every call may
 * refuse a batch for its size alone, however slowly it is sent. A refused batch halves the size;
 * each batch answered at the size raises it by one, up to one call less than the last refused batch.
 */
export function createBatchSize() {
  let current = Number.POSITIVE_INFINITY;
  let refusedAt = Number.POSITIVE_INFINITY;
  return {
    current: () => current,
    refused(calls: number): void {
      refusedAt = calls;
      current = Math.max(1, Math.min(current, Math.ceil(calls / 2)));
    },
    answered(calls: number): void {
      if (calls >= current) current = Math.max(current, Math.min(refusedAt - 1, calls + 1));
    },
  };
}

export type BatchSize = ReturnType<typeof createBatchSize>;
