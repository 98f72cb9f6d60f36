/**
 * The results of `winfleet check`: one list of checks for the cluster and one per host, each
 * check pass, warn or fail with what was seen and the fix. `-o json|yaml` prints this object;
 * the table prints the same rows. The exit code follows from it (exitCodeFor).
 */
import { ExitCode } from '../exit-codes.ts';
import { paint, type Tone } from '../output.ts';

export type CheckStatus = 'pass' | 'warn' | 'fail';

export interface CheckResult {
  /** Stable, for scripts: "cpu", "node-restriction", … */
  name: string;
  status: CheckStatus;
  /** What was seen. */
  message: string;
  /** What to do; empty when the check passed. */
  fix: string;
}

export interface HostReport {
  /** The WindowsHost (namespace/name) or the --host address. */
  host: string;
  /** host:port reached over SSH. */
  address: string;
  checks: CheckResult[];
}

export interface CheckReport {
  /** The cluster's checks; null with --skip-cluster or when the cluster could not be reached. */
  cluster: { server: string; checks: CheckResult[] } | null;
  hosts: HostReport[];
  /** Things the reader must know (the cluster was unreachable, hosts were skipped). */
  notes: string[];
  summary: { pass: number; warn: number; fail: number };
  /** True when the cluster could not be reached (exit code 3). */
  clusterUnreachable: boolean;
}

/** @package */
export function pass(name: string, message: string): CheckResult {
  return { name, status: 'pass', message, fix: '' };
}
/** @package */
export function warn(name: string, message: string, fix: string): CheckResult {
  return { name, status: 'warn', message, fix };
}
export function fail(name: string, message: string, fix: string): CheckResult {
  return { name, status: 'fail', message, fix };
}

/** Counts the statuses of every check in the report. */
export function summarize(
  cluster: CheckReport['cluster'],
  hosts: HostReport[],
): CheckReport['summary'] {
  const summary = { pass: 0, warn: 0, fail: 0 };
  for (const check of [...(cluster?.checks ?? []), ...hosts.flatMap((h) => h.checks)])
    summary[check.status]++;
  return summary;
}

/** 1 when any check failed, else 3 when the cluster was unreachable, else 0. */
export function exitCodeFor(report: CheckReport): ExitCode {
  if (report.summary.fail > 0) return ExitCode.problem;
  if (report.clusterUnreachable) return ExitCode.cluster;
  return ExitCode.ok;
}

const tones: Record<CheckStatus, Tone> = { pass: 'good', warn: 'warn', fail: 'bad' };

/**
 * The human form (-o table): per target, one line per check (status, name, what was seen),
 * and under a check that did not pass, its fix.
 */
export function formatReport(report: CheckReport, stream = process.stdout): string {
  const all = [...(report.cluster?.checks ?? []), ...report.hosts.flatMap((h) => h.checks)];
  const width = Math.max(0, ...all.map((c) => c.name.length));
  const out: string[] = [];
  const section = (title: string, checks: CheckResult[]) => {
    out.push(`${title}\n`);
    for (const check of checks) {
      const status = paint(tones[check.status], check.status.toUpperCase().padEnd(4), stream);
      out.push(`  ${status}  ${check.name.padEnd(width)}  ${check.message}\n`);
      if (check.status !== 'pass')
        out.push(`  ${' '.repeat(4)}  ${' '.repeat(width)}  fix: ${check.fix}\n`);
    }
  };
  if (report.cluster) section(`cluster ${report.cluster.server}`, report.cluster.checks);
  for (const host of report.hosts)
    section(
      host.host === host.address ? `host ${host.host}` : `host ${host.host} (${host.address})`,
      host.checks,
    );
  for (const note of report.notes) out.push(`note: ${note}\n`);
  const { pass: p, warn: w, fail: f } = report.summary;
  out.push(`${p} passed, ${w} warned, ${f} failed\n`);
  return out.join('');
}
