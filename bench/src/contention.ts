import { readFileSync } from 'node:fs';

interface CpuSnapshot {
  /** Busy time of the whole machine, ms (from /proc/stat). */
  machineBusyMs: number;
  /** CPU time of this process, ms. */
  ownMs: number;
  at: number;
}

function machineBusyMs(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
    // USER_HZ is 100 on Linux: one tick is 10 ms.
    return (user + nice + system + irq + softirq + steal) * 10;
  } catch {
    return undefined;
  }
}

export function cpuSnapshot(): CpuSnapshot | undefined {
  const busy = machineBusyMs();
  if (busy === undefined) return undefined;
  const own = process.cpuUsage();
  return { machineBusyMs: busy, ownMs: (own.user + own.system) / 1000, at: performance.now() };
}

/** Cores kept busy by other processes (Redis and PostgreSQL included) between two snapshots, on average. */
export function otherLoad(before: CpuSnapshot | undefined): number | undefined {
  const after = cpuSnapshot();
  if (!before || !after) return undefined;
  const wall = after.at - before.at;
  if (wall <= 0) return undefined;
  const other = after.machineBusyMs - before.machineBusyMs - (after.ownMs - before.ownMs);
  return Math.max(0, other / wall);
}
