/**
 * CPU time of processes and of the whole machine over a window, from /proc: what the operator,
 * each control-plane component and everything else on the machine used while a benchmark
 * measured, so a latency can be read against what the cores were doing.
 */
import { readFileSync } from 'node:fs';

const ticksPerSecond = 100; // USER_HZ on Linux

/**
 * utime + stime of `pid`, in seconds (NaN once it is gone); with `children`, the CPU of its
 * children it has waited for instead (cutime + cstime: a load generator run to its end).
 */
export function processCpuSeconds(pid: number, children = false): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const at = children ? 13 : 11;
    return (Number(fields[at]) + Number(fields[at + 1])) / ticksPerSecond;
  } catch {
    return Number.NaN;
  }
}

/** The machine's busy and total CPU time (all cores), in seconds. */
function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [, ...values] = line.trim().split(/\s+/);
  const n = values.map(Number);
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / ticksPerSecond, total: total / ticksPerSecond };
}

export interface CpuWindow {
  /** Per named process: CPU seconds over the window. */
  processes: Map<string, number>;
  /** CPU seconds every process on the machine used. */
  machineBusy: number;
  /** Wall seconds of the window. */
  wall: number;
  /** Cores the machine has (busy / wall is at most this). */
  cores: number;
}

/**
 * Starts a window over `pids` (name → pid; a negative pid -P means the children P waited for);
 * stop() gives what each used since.
 */
export function cpuWindow(pids: Map<string, number>): { stop(): CpuWindow } {
  const cpu = (pid: number) => (pid < 0 ? processCpuSeconds(-pid, true) : processCpuSeconds(pid));
  const before = new Map([...pids].map(([name, pid]) => [name, cpu(pid)]));
  const machine = machineCpuSeconds();
  const started = performance.now();
  return {
    stop() {
      const after = machineCpuSeconds();
      const wall = (performance.now() - started) / 1000;
      const cores = Math.round((after.total - machine.total) / wall) || 1;
      return {
        processes: new Map([...pids].map(([name, pid]) => [name, cpu(pid) - before.get(name)!])),
        machineBusy: after.busy - machine.busy,
        wall,
        cores,
      };
    },
  };
}

/** "kube-apiserver 45%, etcd 12%, …, everything 190% of 200%": share of one core each. */
export function formatCpu(w: CpuWindow): string {
  const pct = (s: number) => `${((100 * s) / w.wall).toFixed(0)}%`;
  const named = [...w.processes]
    .filter(([, s]) => !Number.isNaN(s))
    .sort(([, a], [, b]) => b - a)
    .map(([name, s]) => `${name} ${pct(s)}`);
  const known = [...w.processes.values()]
    .filter((s) => !Number.isNaN(s))
    .reduce((a, b) => a + b, 0);
  return `${named.join(', ')}, other processes ${pct(Math.max(0, w.machineBusy - known))}; machine busy ${pct(w.machineBusy)} of ${w.cores * 100}%`;
}

/** Several windows over the same processes taken as one (alternating rounds of one load). */
export function sumCpuWindows(windows: CpuWindow[]): CpuWindow {
  if (windows.length === 0) throw new Error('sumCpuWindows: no windows');
  const processes = new Map<string, number>();
  for (const w of windows)
    for (const [name, s] of w.processes) processes.set(name, (processes.get(name) ?? 0) + s);
  return {
    processes,
    machineBusy: windows.reduce((a, w) => a + w.machineBusy, 0),
    wall: windows.reduce((a, w) => a + w.wall, 0),
    cores: windows[0]!.cores,
  };
}
