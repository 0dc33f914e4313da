/**
 * P(X ≥ k) for X ~ Binomial(n, p): how likely `k` or more of `n` calls are refused when each is
 * refused at random with probability `p`. Summed from k upward in log space until the terms no
 * longer count, so it stays cheap and exact enough for the thousands of calls a window can hold.
 */
export function binomialTail(k: number, n: number, p: number): number {
  if (k <= 0) return 1;
  if (k > n) return 0;
  let logTerm = k * Math.log(p) + (n - k) * Math.log1p(-p);
  for (let i = 0; i < k; i++) logTerm += Math.log((n - i) / (i + 1));
  const ratio = p / (1 - p);
  let term = Math.exp(logTerm);
  let sum = term;
  for (let j = k; j < n && term > sum * 1e-12; j++) {
    term *= ((n - j) / (j + 1)) * ratio;
    sum += term;
  }
  return Math.min(1, sum);
}
