/**
 * `make lab` end to end: the lab program pushes its payload to the lab registry, installs the
 * chart, runs the operator as the chart's ServiceAccount with that payload, joins the simulated
 * hosts over SSH and one more by `winfleet join-command`'s user data (its Node Ready, its
 * WindowsHost in Pull mode, its token used), places the seed samples, prints its report (with
 * the operator's 403 count from the audit log), takes a fault through `npm run lab:fault`'s
 * program (a host made unreachable: its Node stops being Ready) and stops cleanly on Ctrl-C
 * (SIGINT), removing its fault control file; its pods have unique IPs inside their nodes' pod
 * CIDRs. The winfleet commands its report suggests (status, check, diagnose) run as printed.
 * The AD host of the pool `corp` (20-character hostname) is renamed to at most 15 characters,
 * registers its Node under that name, is in the fake domain and gMSA-ready; the domain
 * account's password (read from its Secret) is in no line the lab printed or logged.
 * The pod network is flannel-vxlan (issue 31): each SSH host holds a RemoteSubnetRoute to the
 * Linux worker's lease; as root with WINFLEET_NETLAB_BIN (CI) a Windows pod reaches a Linux pod
 * by TCP (its own address seen, no NAT) and ICMP through the real Linux flanneld, resolves
 * kubernetes.default through kube-dns (10.96.0.10, the kubelets' clusterDNS) answered by the real
 * CoreDNS on lab-linux-1, and reaches the Service echo by its name (SNATed to the source VIP), and
 * the lab leaves none of its network namespaces behind; otherwise the lab says packets and
 * Services by name are not shown, and how to see them.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { loadKubeConfig } from '../../src/kube/client.ts';
import { waitFor } from '../../src/kube/wait-for.ts';
import { cidrContains, parseIpv4, parseIpv4Cidr } from '../../src/net/ipv4-cidr.ts';
import { listNetns } from '../netlab/netns.ts';
import { netnsPrefix } from '../netlab/netns-names.ts';
import { findLeaks, type Needle, needlesFor, readTree } from '../testkit/secret-scan.ts';

test('the lab joins three simulated hosts over SSH, one by command and one to Active Directory, shows where the seed samples run and takes a fault', async () => {
  const main = fileURLToPath(new URL('./main.ts', import.meta.url));
  const faultCli = fileURLToPath(new URL('./fault-cli.ts', import.meta.url));
  // Its own lab directory, so its fault control file is not the one of a lab a person runs.
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-lab-e2e-'));
  const lab = spawn(process.execPath, [main], {
    env: { ...process.env, WINFLEET_LAB_DIR: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  lab.stdout.on('data', (d: Buffer) => {
    stdout += d;
  });
  lab.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  const gone = new AbortController();
  const exited = new Promise<number | null>((resolve) =>
    lab.on('exit', (exitCode) => {
      gone.abort(new Error(`the lab exited (${exitCode}): ${stderr.slice(-3000)}`));
      resolve(exitCode);
    }),
  );
  const controlFile = join(dir, 'fault-control.json');
  let code: number | null;
  let needles: Needle[] = [];
  let controlFileLeft: boolean;
  try {
    await waitFor(() => stdout.includes('Ctrl-C stops everything.'), {
      description: 'the lab to print its report',
      timeoutMs: 300_000,
      intervalMs: 500,
      signal: gone.signal,
    });

    // The winfleet commands the report suggests, run as printed (the alias expanded).
    const alias = /^alias winfleet='(\S+) (\S+)'$/m.exec(stdout);
    assert.ok(alias, stdout);
    const winfleet = async (line: string) => {
      const args = line.replace(/^winfleet /, '').split(' ');
      return promisify(execFile)(alias[1]!, [alias[2]!, ...args], {
        cwd: dir,
        timeout: 120_000,
        env: { ...process.env, KUBECONFIG: /^export KUBECONFIG=(\S+)$/m.exec(stdout)![1]! },
      }).then(
        (r) => ({ code: 0, ...r }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      );
    };
    const suggestion = (command: string) => {
      const line = new RegExp(`^winfleet ${command} .*$`, 'm').exec(stdout)?.[0];
      assert.ok(line, `the report suggests winfleet ${command}:\n${stdout}`);
      return line;
    };
    const status = await winfleet(suggestion('status'));
    assert.equal(status.code, 0, status.stderr);
    // The Pull-mode host's own Ready condition comes with its lifecycle (issue 15, section D).
    // Five: the three SSH hosts, the pull-joined one and the AD one.
    assert.match(status.stdout, /^Hosts: [45]\/5 Ready/m);
    const tokens = await winfleet(suggestion('join-tokens list'));
    assert.equal(tokens.code, 0, tokens.stderr);
    assert.match(tokens.stdout, /^[a-z0-9]{6}\s+winfleet-system\/lab\s+0\/1\s/m);
    assert.match(stdout, /^winfleet join-command --pool lab --format aws > user-data\.txt$/m);
    const check = await winfleet(suggestion('check --skip-cluster'));
    assert.equal(check.code, 0, `${check.stdout}\n${check.stderr}`);
    assert.match(check.stdout, /^ {2}PASS {2}windows-build /m);
    // Issue 35: each seed sample's verdict for 2025, through the lab's mirror registry; one
    // cannot move, so the plan exits 1.
    const plan = await winfleet(suggestion('migrate plan').replace(/\s+#.*$/, ''));
    assert.equal(plan.code, 1, `${plan.stdout}\n${plan.stderr}`);
    for (const [workload, verdict] of [
      ['Deployment/iis', 'ready'],
      ['Deployment/iis-2019', 'blocked'],
      ['Deployment/win-pwsh', 'blocked'],
      ['Deployment/win-webserver', 'hyper-v only'],
    ]) {
      assert.match(plan.stdout, new RegExp(`${workload}\\s+${verdict}\\b`), plan.stdout);
    }
    assert.match(plan.stdout, /4 workload\(s\) with Windows pods/);
    const diagnose = await winfleet(suggestion('diagnose'));
    assert.equal(diagnose.code, 0, `every item collected:\n${diagnose.stdout}\n${diagnose.stderr}`);
    assert.ok((await stat(join(dir, 'winfleet-diagnose.tar.gz'))).size > 0);

    // A fault through `npm run lab:fault`'s program, found by the lab's control file (0600):
    // the host goes off the network and its Node stops being Ready (its lease lapses).
    assert.equal((await stat(controlFile)).mode & 0o777, 0o600);
    const suggested =
      /^npm run lab:fault -- --lab-dir (\S+) (simwin-\d+) service-down kubelet$/m.exec(stdout);
    assert.ok(suggested, stdout);
    assert.equal(suggested[1], dir);
    const host = suggested[2]!;
    const fault = await promisify(execFile)(
      process.execPath,
      [faultCli, '--lab-dir', dir, host, 'unreachable'],
      { timeout: 60_000 },
    );
    assert.match(fault.stdout, new RegExp(`^${host}: ${host} is unreachable$`, 'm'));
    assert.match(fault.stdout, /^ {2}kubectl get nodes -w$/m);
    const kubeconfig = /^export KUBECONFIG=(\S+)$/m.exec(stdout)![1]!;
    const labKc = loadKubeConfig(kubeconfig);
    const core = labKc.makeApiClient(k8s.CoreV1Api);
    // The host that joined by itself: a Ready Node, a Pull-mode WindowsHost in the pool.
    const pulled =
      /^ {2}Windows \S+ host +(simwin-\d+) 127\.0\.0\.\d+ {2}\(joined by command, no SSH/m.exec(
        stdout,
      );
    assert.ok(pulled, stdout);
    const pullNode = await core.readNode({ name: pulled[1]! });
    assert.equal(
      pullNode.status?.conditions?.find((c) => c.type === 'Ready')?.status,
      'True',
      `${pulled[1]} Ready`,
    );
    const pullHost = (await labKc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
      group: 'winfleet.io',
      version: 'v1alpha1',
      namespace: 'winfleet-system',
      plural: 'windowshosts',
      name: pulled[1]!,
    })) as { spec: { mode?: string; pool?: string } };
    assert.deepEqual([pullHost.spec.mode, pullHost.spec.pool], ['Pull', 'lab']);
    // The AD host: renamed to at most 15 characters, its Node under the new name, in the
    // simulated domain (the lab's line reads the machine and the domain's computer account),
    // gMSA-ready; its WindowsHost in the pool corp.
    const joined =
      /^\[lab\] (winfleet-corp-host-1) joined domain corp\.winfleet\.lab renamed (\S+): computer account (\S+) in (\S+), Node (\S+) Ready and winfleet\.io\/gmsa-ready=true /m.exec(
        stderr,
      );
    assert.ok(joined, stderr);
    const [, longName, newName, account, ou, nodeName] = joined as unknown as string[];
    assert.equal(longName!.length, 20);
    assert.ok(newName!.length <= 15, `${newName} has at most 15 characters`);
    assert.notEqual(newName, longName);
    assert.equal(nodeName, newName);
    assert.equal(account, newName!.toUpperCase());
    assert.equal(ou, 'OU=Kubernetes,DC=corp,DC=winfleet,DC=lab');
    const adNode = await core.readNode({ name: newName! });
    assert.equal(adNode.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    assert.equal(adNode.metadata?.labels?.['kubernetes.io/hostname'], newName);
    assert.equal(adNode.metadata?.labels?.['winfleet.io/gmsa-ready'], 'true');
    const adHost = (await labKc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
      group: 'winfleet.io',
      version: 'v1alpha1',
      namespace: 'winfleet-system',
      plural: 'windowshosts',
      name: longName!,
    })) as { metadata: { labels?: Record<string, string> }; status?: Record<string, unknown> };
    assert.deepEqual(
      [
        adHost.metadata.labels?.['winfleet.io/lab-pool'],
        adHost.status?.nodeName,
        adHost.status?.hostname,
      ],
      ['corp', newName, newName],
    );
    assert.match(
      stdout,
      new RegExp(
        `^ {2}Windows 2022 host +${newName} 127\\.0\\.0\\.30:\\d+ {2}\\(ssh; was ${longName}`,
        'm',
      ),
    );
    // The password the lab made: only in the Secret; not in the operator's log or the host's files.
    const secret = await core.readNamespacedSecret({
      name: 'ad-join',
      namespace: 'winfleet-system',
    });
    const password = Buffer.from(secret.data!.password!, 'base64').toString('utf8');
    assert.ok(password.length >= 16, 'a generated password');
    needles = needlesFor('the AD password', password);
    const files = new Map([['operator.log', await readFile(join(dir, 'operator.log'), 'utf8')]]);
    for (const [path, content] of await readTree(join(dir, 'ad-hosts'))) {
      files.set(path, content.toString('utf8'));
      files.set(`${path} (UTF-16)`, content.toString('utf16le'));
    }
    assert.deepEqual(findLeaks(files, needles), []);

    const ready = await waitFor(
      async () => {
        const node = await core.readNode({ name: host });
        const condition = node.status?.conditions?.find((c) => c.type === 'Ready');
        return condition && condition.status !== 'True' ? condition : undefined;
      },
      {
        description: `Node ${host} to stop being Ready after the unreachable fault`,
        timeoutMs: 180_000,
        intervalMs: 1000,
        signal: gone.signal,
      },
    );
    assert.match(ready.status!, /^(False|Unknown)$/);
  } finally {
    if (lab.exitCode === null) lab.kill('SIGINT');
    // Stopping is bounded: a lab that hangs is killed (and the exit code says so).
    const kill = setTimeout(() => lab.kill('SIGKILL'), 120_000);
    code = await exited;
    clearTimeout(kill);
    controlFileLeft = await stat(controlFile).then(
      () => true,
      () => false,
    );
    await rm(dir, { recursive: true, force: true });
  }
  assert.equal(controlFileLeft, false, 'the lab removes its fault control file when it stops');
  assert.deepEqual(
    listNetns().filter((n) => n.startsWith(`${netnsPrefix}${lab.pid}-`)),
    [],
    'the lab deletes every network namespace it made',
  );
  assert.equal(code, 0, stderr.slice(-3000));
  assert.ok(needles.length > 0);
  assert.deepEqual(
    findLeaks(
      new Map([
        ['lab stdout', stdout],
        ['lab stderr', stderr],
      ]),
      needles,
    ),
    [],
  );
  assert.match(stderr, /all 3 hosts joined as Ready nodes/);
  assert.match(stderr, /simwin-\d+ joined by itself as a Ready node/);
  assert.match(
    stderr,
    /winfleet payload push \S+ 127\.0\.0\.1:\d+\/winfleet\/payload:\S+ --plain-http/,
  );
  assert.match(stdout, /^ {2}payload +127\.0\.0\.1:\d+\/winfleet\/payload@sha256:[0-9a-f]{64}$/m);
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
  // The 2022 build's pod may land on the AD host's node too (corp-<8 characters>).
  assert.match(
    stdout,
    /win-pwsh-\S+\s+Running\s+(?:simwin-\d+|corp-[0-9a-z]{8})\s+windows 10\.0\.20348/,
  );
  // kubectl logs of a Windows pod: through the API server and the host's kubelet API, which
  // the agent's firewall rule opened.
  assert.match(
    stdout,
    /^kubectl logs -n seed-samples \S+ {2}\(on simwin-\d+\):\n {2}winfleet simulated container "\S+" of pod seed-samples\/\S+ started from image /m,
  );

  // The pod network: flannel-vxlan, each SSH host routing to the Linux worker's lease; real
  // packets from a Windows pod to a Linux pod where the lab may make namespaces.
  assert.match(
    stdout,
    /^Pod network: flannel-vxlan \(VNI 4096, UDP 4789\); lab-linux-1's lease (\S+) via 192\.0\.2\.11 /m,
  );
  const routes = stdout.match(
    /^ {2}simwin-\d+: HNS network flannel\.4096 RemoteSubnetRoute 10\.244\.\d+\.0\/24 → 192\.0\.2\.11 /gm,
  );
  assert.equal(routes?.length, 3, stdout);
  if (process.getuid?.() === 0 && process.env.WINFLEET_NETLAB_BIN) {
    const tcp =
      /^ {2}TCP {2}Windows pod lab-network\/win-client (\S+) on simwin-\d+ → Linux pod (\S+) on lab-linux-1:7000: answered "hello from lab-network\/win-client"; the Linux pod saw (\S+) \(no NAT\)$/m.exec(
        stdout,
      );
    assert.ok(tcp, stdout);
    assert.equal(tcp[3], tcp[1]);
    assert.match(
      stdout,
      /^ {2}ICMP Windows pod lab-network\/win-client \S+ on simwin-\d+ → Linux pod \S+ on lab-linux-1: 3\/3 echo replies$/m,
    );
    // A Service by name: kubernetes.default resolved through kube-dns at the cluster DNS
    // address, by CoreDNS on lab-linux-1; the Service echo by its name, to its cluster IP, and
    // on to the Linux pod, which sees the source VIP (the rendered load balancer's SNAT).
    const dns =
      /^Service by name: Windows pod lab-network\/win-client on (simwin-\d+) resolved kubernetes\.default\.svc\.cluster\.local → 10\.96\.0\.1 through kube-dns 10\.96\.0\.10 \(CoreDNS on lab-linux-1 answered, its log shows the query from (\S+)\)$/m.exec(
        stdout,
      );
    assert.ok(dns, stdout);
    const byName =
      /^ {2}TCP {2}Windows pod lab-network\/win-client → echo\.lab-network\.svc\.cluster\.local → (10\.9[6-9]\.\d+\.\d+|10\.1[01]\d\.\d+\.\d+):7000 \(Service echo\): answered "hello echo from lab-network\/win-client"; the Linux pod lab-network\/echo (\S+) saw (\S+) \(the source VIP: the load balancer’s SNAT\)$/m.exec(
        stdout,
      );
    assert.ok(byName, stdout);
    assert.equal(byName[2], tcp[2], 'the Service echo leads to the Linux pod of the TCP check');
    assert.equal(byName[3], dns[2], 'both load balancers SNAT to the same source VIP');
    assert.notEqual(byName[3], tcp[1], 'the Linux pod saw the source VIP, not the Windows pod');
  } else {
    assert.match(stdout, /^Packets: not shown: /m);
    assert.match(stdout, /^Service by name: not shown: .*\n {2}to see it, run the lab as root /m);
  }
  assert.doesNotMatch(stdout, /not shown yet/);

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
