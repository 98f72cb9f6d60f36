/**
 * `make lab`: a local cluster on loopback with winfleet's Helm chart installed, simulated Windows
 * hosts joined by the operator (running as the chart's ServiceAccount) and the seed samples
 * running on them; stays up until Ctrl-C.
 *
 * WINFLEET_LAB_DIR keeps the lab's files in a directory of your choice; WINFLEET_PAYLOAD_DIR
 * uses a payload built by `make payload`; WINFLEET_LAB_EXIT=1 stops once everything is up
 * (used by the lab's test). `npm run lab:fault` injects faults into its hosts (fault-cli.ts).
 * WINFLEET_LAB_NETWORK=routed runs the pod network as before issue 31 (default flannel-vxlan);
 * as root with WINFLEET_NETLAB_BIN (hack/build-netlab.sh) the lab shows a Windows pod's packets
 * reaching a Linux pod through the real Linux flanneld (lab-network.ts).
 */
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { runUntilSignal } from '../../src/process/run-until-signal.ts';
import { adDomainName, adPoolName } from './ad-host.ts';
import { faultCommandFor } from './fault-control.ts';
import { argumentOf, type FaultKind, faultKinds } from './fault-requests.ts';
import {
  labNamespace,
  labPoolName,
  operatorAuditReport,
  placementReport,
  samplesNamespace,
  startLab,
  windowsPodLogReport,
} from './lab.ts';
import { labNetworkEnv, labNetworkMode } from './lab-network.ts';

async function main(): Promise<void> {
  const say = (line: string) => console.error(`[lab] ${line}`);
  const lab = await startLab({
    dir: process.env.WINFLEET_LAB_DIR,
    payloadDir: process.env.WINFLEET_PAYLOAD_DIR,
    network: labNetworkMode(process.env[labNetworkEnv]),
    say,
  });
  const core = lab.kc.makeApiClient(k8s.CoreV1Api);
  // Give the scheduler and kwok a moment to place and start the samples.
  await waitFor(
    async () => {
      const pods = (await core.listNamespacedPod({ namespace: samplesNamespace })).items;
      return (
        pods.length > 0 &&
        pods.every((p) => p.status?.phase === 'Running' || p.status?.phase === 'Pending') &&
        pods.some((p) => p.status?.phase === 'Running')
      );
    },
    { description: 'the sample pods', timeoutMs: 60_000 },
  ).catch(() => undefined);
  await sleep(2000);
  const report = await placementReport(lab.kc);
  const windowsLogs = await windowsPodLogReport(lab.kc);
  const audit = await operatorAuditReport(lab);
  const kubeconfig = lab.cluster.kubeconfigPath;
  const faultCommand = faultCommandFor(process.env.WINFLEET_LAB_DIR);
  const faultList = Object.keys(faultKinds)
    .map((kind) => {
      const arg = argumentOf(kind as FaultKind);
      return arg ? `${kind} <${arg}>` : kind;
    })
    .join(', ');
  const firstHost = lab.hosts.hosts[0]!.name.toLowerCase();
  const pull = lab.pullHost.host;
  const ad = lab.adHost;
  const cliCommand = `${resolve('node_modules/.bin/node')} ${resolve('src/cli/main.ts')}`;
  console.log(
    [
      '',
      'winfleet lab is up.',
      '',
      'Running:',
      ...lab.cluster.components.map((c) => `  ${c.name.padEnd(24)} pid ${c.pid}`),
      `  ${'winfleet operator'.padEnd(24)} pid ${lab.operator.pid}  (${lab.operatorLog})`,
      `  ${''.padEnd(24)} as ${lab.operatorUser}, the chart's RBAC (kubeconfig ${lab.operatorKubeconfig})`,
      `  ${'registry mirror'.padEnd(24)} ${lab.registry.registry.url}`,
      `  ${'payload'.padEnd(24)} ${lab.payload.pushed.reference}`,
      `  ${''.padEnd(24)} (${lab.payload.pushed.command})`,
      ...lab.hosts.hosts.map(
        (h) =>
          `  ${`Windows ${h.release} host`.padEnd(24)} ${h.name} ${h.address}:${h.port}  (ssh)`,
      ),
      `  ${`Windows ${pull.release} host`.padEnd(24)} ${pull.name} ${pull.address}  (joined by command, no SSH: ${lab.pullHost.userDataFile})`,
      `  ${`Windows ${ad.host.release} host`.padEnd(24)} ${ad.nodeName} ${ad.host.address}:${ad.host.port}  (ssh; was ${ad.host.name}, renamed and joined to ${adDomainName} by pool ${adPoolName})`,
      '',
      `Where the seed samples' pods landed (namespace ${samplesNamespace}; pod, status, node, OS, pod IP, node's pod CIDR, image):`,
      ...report,
      '',
      ...windowsLogs,
      '',
      ...lab.network.report,
      '',
      `The operator's requests so far: ${audit.requests}; answered 403 (refused by the chart's RBAC): ${audit.refused.length}`,
      ...audit.refused.map((line) => `  ${line}`),
      `  (API server audit log: ${lab.cluster.auditLogPath})`,
      '',
      `Dashboard:            ${lab.dashboardUrl}/`,
      `Metrics:              ${lab.statusUrl}/metrics`,
      `Configuration status: ${lab.statusUrl}/config`,
      '',
      'Use it from another shell:',
      '',
      `export KUBECONFIG=${kubeconfig}`,
      'kubectl get nodes',
      `kubectl get windowshosts -n ${labNamespace}`,
      `kubectl get pods -n ${samplesNamespace} -o wide`,
      `${lab.helm} list -n ${labNamespace}`,
      '',
      `Active Directory: WindowsNodePool "${adPoolName}" joins its hosts to the fake domain ${adDomainName} (host ${ad.host.name} became ${ad.nodeName}):`,
      '',
      `kubectl get windowsnodepool ${adPoolName} -n ${labNamespace} -o yaml    # spec.activeDirectory`,
      `kubectl get windowshosts ${ad.host.name} -n ${labNamespace} -o wide`,
      'kubectl get nodes -l winfleet.io/gmsa-ready=true',
      '',
      `Roll a change through the lab's WindowsNodePool "${labPoolName}" (one host at a time) and watch it:`,
      '',
      `kubectl get windowsnodepools -n ${labNamespace} -w`,
      `kubectl patch windowsnodepool ${labPoolName} -n ${labNamespace} --type merge -p "{\\"spec\\":{\\"rebootRequestedAt\\":\\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\\"}}"`,
      ...(lab.payload.standIn
        ? [
            `node_modules/.bin/node sim/lab/next-payload.ts ${lab.payload.dir} 1.36.5-wf.2`,
            '  (the lab pushes it with winfleet payload push and restarts the operator with its reference)',
          ]
        : []),
      '',
      `Inject a fault into a host (${faultList}) and watch the condition appear and the repair:`,
      '',
      `${faultCommand} list`,
      `${faultCommand} ${firstHost} service-down kubelet`,
      'kubectl get nodes -w',
      `kubectl get windowshosts ${firstHost} -n ${labNamespace} -o yaml    # status.remediation`,
      `${faultCommand} ${firstHost} clear`,
      `  (fault control ${lab.faultControl.url}, token in ${lab.faultControl.file})`,
      '',
      'The winfleet command line (`make krew` builds it as the kubectl plugin `kubectl winfleet`):',
      '',
      `alias winfleet='${cliCommand}'`,
      `winfleet status -n ${labNamespace}`,
      `winfleet hosts list -n ${labNamespace} -o wide`,
      `winfleet check -n ${labNamespace}`,
      `winfleet check --skip-cluster --host ${lab.hosts.hosts[0]!.address}:${lab.hosts.hosts[0]!.port} --ssh-key ${lab.sshKeyFile}`,
      `winfleet diagnose -n ${labNamespace} --operator-url ${lab.statusUrl} --operator-log ${lab.operatorLog} -o winfleet-diagnose.tar.gz`,
      `winfleet migrate plan --to 2025 -n ${samplesNamespace}    # which sample can move to Windows Server 2025; exit 1: one cannot`,
      '',
      `Join another Windows machine by itself, without SSH (the script for EC2 user data; the lab's host ${pull.name.toLowerCase()} booted with one):`,
      '',
      `winfleet join-command --pool ${labPoolName} --format aws > user-data.txt`,
      `winfleet join-tokens list -n ${labNamespace}`,
      `kubectl get windowshosts ${pull.name.toLowerCase()} -n ${labNamespace}    # spec.mode: Pull`,
      '',
      'Ctrl-C stops everything.',
    ].join('\n'),
  );
  if (process.env.WINFLEET_LAB_EXIT === '1') {
    await lab.stop();
    return;
  }
  await runUntilSignal(() => lab.stop());
}

main().catch((error: unknown) => {
  console.error(`[lab] failed: ${(error as Error).message}`);
  process.exit(1);
});
