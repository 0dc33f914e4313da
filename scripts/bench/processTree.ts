import { readdirSync, readFileSync } from "node:fs";

const CLOCK_TICKS = 100;

/** Figures of a process and everything it started, as sampled from /proc. */
export type TreeFigures = { peakRssMb: number; cpuSeconds: number };

/** The process's parent id, its CPU ticks (user + system) and its RSS (kB), or undefined once it is gone. */
function readProcess(
  pid: number,
): { ppid: number; ticks: number; rssKb: number; hwmKb: number } | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    return {
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0),
      hwmKb: Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0),
    };
  } catch {
    return undefined;
  }
}

/**
 * Samples a process tree (the root and every descendant) from /proc every `intervalMs` until
 * stopped: the peak of the tree's summed RSS (never below the root's own high-water mark, which the
 * kernel keeps between samples) and the CPU seconds of every process seen, at its last sample.
 * A process's threads are in its own figures; a short-lived child between two samples is missed.
 */
export function sampleProcessTree(rootPid: number, intervalMs = 50): { stop: () => TreeFigures } {
  let peakKb = 0;
  const ticksByPid = new Map<number, number>();
  const sample = () => {
    const byParent = new Map<number, number[]>();
    const figures = new Map<number, NonNullable<ReturnType<typeof readProcess>>>();
    for (const entry of readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const found = readProcess(Number(entry));
      if (found === undefined) continue;
      figures.set(Number(entry), found);
      byParent.set(found.ppid, [...(byParent.get(found.ppid) ?? []), Number(entry)]);
    }
    const root = figures.get(rootPid);
    if (root === undefined) return;
    let treeKb = 0;
    const pending = [rootPid];
    while (pending.length > 0) {
      const pid = pending.pop()!;
      const own = figures.get(pid);
      if (own === undefined) continue;
      treeKb += own.rssKb;
      ticksByPid.set(pid, own.ticks);
      pending.push(...(byParent.get(pid) ?? []));
    }
    peakKb = Math.max(peakKb, treeKb, root.hwmKb);
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  return {
    stop() {
      clearInterval(timer);
      let ticks = 0;
      for (const value of ticksByPid.values()) ticks += value;
      return { peakRssMb: Math.round(peakKb / 1024), cpuSeconds: ticks / CLOCK_TICKS };
    },
  };
}
