/**
 * `make lab` end to end: the lab program installs the chart, runs the operator as the chart's
 * ServiceAccount, joins the simulated hosts, places the seed samples, prints its report (with
 * the operator's 403 count from the audit log) and (with WINFLEET_LAB_EXIT=1) stops cleanly;
 * its pods have unique IPs inside their nodes' pod CIDRs.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cidrContains, parseIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';

test('the lab joins three simulated hosts and shows where the seed samples run', async () => {
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  const { stdout, stderr, code } = await new Promise<{
    stdout: string;
    stderr: string;
    code: number;
  }>((resolve) => {
    execFile(
      process.execPath,
      [main],
      { env: { ...process.env, WINFLEET_LAB_EXIT: '1' }, timeout: 300_000, maxBuffer: 8 << 20 },
      (error, so, se) =>
        resolve({
          stdout: so,
          stderr: se,
          code: error ? ((error as { code?: number }).code ?? 1) : 0,
        }),
    );
  });
  assert.equal(code, 0, stderr.slice(-3000));
  assert.match(stderr, /all 3 hosts joined as Ready nodes/);
  // The chart is installed with helm and the operator runs as its ServiceAccount, refused
  // nothing by the chart's RBAC.
  assert.match(stderr, /installed chart \S+ as release winfleet in winfleet-system/);
  assert.match(
    stderr,
    /operator running \(pid \d+\) as system:serviceaccount:winfleet-system:winfleet,/,
  );
  const audit = /^The operator's requests so far: (\d+); answered 403 \(.*\): (\d+)$/m.exec(stdout);
  assert.ok(audit, stdout);
  assert.ok(Number(audit[1]) > 0, 'the audit log holds the operator’s requests');
  assert.equal(audit[2], '0', stdout);
  assert.match(stdout, /^\/\S+\/helm list -n winfleet-system$/m);
  assert.match(stdout, /^export KUBECONFIG=\/\S+admin\.kubeconfig$/m);
  assert.match(stdout, /^kubectl get nodes$/m);
  // The dashboard is printed as the dashboard, at /.
  assert.match(stdout, /^Dashboard: +http:\/\/127\.0\.0\.1:\d+\/$/m);
  // No sample is reported applied after one of its objects was refused.
  for (const [, sample] of stderr.matchAll(/^.*? {2}(\S+): \S+ refused: /gm)) {
    assert.ok(!stderr.split('\n').some((l) => l.endsWith(`applied ${sample}`)), sample);
  }
  // The seed samples landed on Windows nodes of a build that can run them.
  assert.match(stdout, /win-webserver-\S+\s+Running\s+simwin-\d+\s+windows 10\.0\.17763/);
  assert.match(stdout, /iis-2019-\S+\s+Running\s+simwin-\d+\s+windows 10\.0\.17763/);
  assert.match(stdout, /win-pwsh-\S+\s+Running\s+simwin-\d+\s+windows 10\.0\.20348/);
  // kubectl logs of a Windows pod: through the API server and the host's kubelet API, which
  // the agent's firewall rule opened.
  assert.match(
    stdout,
    /^kubectl logs -n seed-samples \S+ {2}\(on simwin-\d+\):\n {2}winfleet simulated container "\S+" of pod seed-samples\/\S+ started from image /m,
  );

  // Every running pod has an IP; pod-network IPs are unique and inside their node's pod CIDR
  // (the Windows hosts' from their CNI config, the Linux worker's from kwok).
  const section = stdout.split(/pods landed \(namespace [^\n]*\n/)[1]?.split('\n\n')[0] ?? '';
  const rows = section
    .split('\n')
    .filter((l) => l.startsWith('  '))
    .map((l) => l.trim().split(/\s+/));
  assert.ok(rows.length >= 3, section);
  const running = rows.filter((r) => r[1] === 'Running');
  assert.ok(
    running.some((r) => r[2]!.startsWith('simwin-')),
    section,
  );
  const ips: string[] = [];
  for (const row of running) {
    const [ip, cidr] = row.slice(-3, -1) as [string, string];
    assert.notEqual(ip, '-', `${row[0]} runs without an IP`);
    if (ip.endsWith('(host)')) continue;
    const range = parseIpv4Cidr(cidr);
    assert.ok(range, `${row[0]} runs on node ${row[2]}, whose pod CIDR is ${cidr}`);
    assert.ok(cidrContains(range, parseIpv4(ip)!), `${row[0]}: ${ip} is outside ${cidr}`);
    ips.push(ip);
  }
  assert.equal(new Set(ips).size, ips.length, `pod IPs are unique: ${ips.join(', ')}`);
});
