import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  createAgentTestHost,
  installedKubeletClientCertificate,
  prepareAsOperator,
  testManifest,
} from '../../sim/hosts/agent-test-host.ts';
import { NodeHealthCondition, NodeHealthEventReason, NodeHealthReason } from '../api/reasons.ts';
import type { AgentHealthConfig } from '../config/winfleet-config.ts';
import {
  createCertificateAuthority,
  issueCertificate,
  type KeyPairPem,
} from '../pki/certificates.ts';
import type { NodeNetwork } from '../servicesmanifest/node-network.ts';
import { parseAgentConfig, paths } from './agent-config.ts';
import { emptyState, writeState } from './agent-state.ts';
import { syncCniConfig } from './cni-config.ts';
import { convergeServices } from './converge.ts';
import { repairLocally } from './local-repair.ts';
import { nodeVariableValues } from './node-files.ts';
import {
  checkNodeHealth,
  maxEventMessage,
  type NodeHealthOptions,
  publishedProblems,
  servicesNotToRestart,
} from './node-health.ts';
import { runAgent } from './run-agent.ts';
import type { DefenderThreatList } from './windows/defender.ts';

/** A bootstrapped simulated host with every service running, and a Node the sync writes to. */
async function world(
  t: Parameters<typeof createAgentTestHost>[0],
  options: {
    agentHealth?: AgentHealthConfig;
    /** HostOS methods answered by the test instead of the simulated host. */
    hostOverrides?: Partial<Record<string, unknown>>;
    /** The node's network (the manifest's); routed by default. */
    network?: NodeNetwork;
    /** The kubelet's client certificate, written where the kubelet keeps it; none: none. */
    kubeletCertificate?: KeyPairPem;
    /** The test clock's start (ms); 2026-11-23T01:00Z by default. */
    clockStart?: number;
    /** Defender's answers come from the simulated host's Defender, not from setThreats. */
    simDefender?: boolean;
  } = {},
) {
  const host = await createAgentTestHost(t);
  await prepareAsOperator(host.machine);
  assert.equal(await runAgent(['bootstrap'], host.context), 0, host.stdout.join(''));
  const config = {
    ...parseAgentConfig((await host.machine.fs.readFile(paths.agentConfig)).toString()),
    ...(options.agentHealth ? { agentHealth: options.agentHealth } : {}),
  };
  const converge = (doNotRestart: ReadonlySet<string> = new Set()) =>
    convergeServices(
      host.context.hostOS,
      testManifest(),
      nodeVariableValues(config),
      emptyState(),
      {
        start: 'all',
        doNotRestart,
      },
    );
  await converge();
  if (options.kubeletCertificate) {
    // As the kubelet writes it: the certificate's PEM (pem.EncodeToMemory, newline-ended), then
    // the key's, in one file (client-go util/certificate/certificate_store.go Update).
    const { certPem, keyPem } = options.kubeletCertificate;
    const file = installedKubeletClientCertificate(host.machine);
    await host.machine.fs.mkdir(file.slice(0, file.lastIndexOf('\\')), { recursive: true });
    await host.machine.fs.writeFileAtomic(file, `${certPem.trimEnd()}\n${keyPem}`);
  }
  const node: k8s.V1Node = {
    metadata: { name: config.nodeName },
    spec: { podCIDR: '10.244.1.0/24' },
    status: {
      nodeInfo: { bootID: host.machine.bootId } as k8s.V1NodeSystemInfo,
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready' }],
    },
  };
  const patches: k8s.V1NodeCondition[][] = [];
  const events: k8s.CoreV1Event[] = [];
  let clock = options.clockStart ?? Date.parse('2026-11-23T01:00:00Z');
  let threats: DefenderThreatList = { available: true, threats: [] };
  /** The pods on this node the API answers with; an Error: the list fails. */
  let pods: k8s.V1Pod[] | Error = [];
  const hostOS = host.context.hostOS;
  let context = {
    ...host.context,
    hostOS: new Proxy(hostOS, {
      get: (target, p, r) =>
        p === 'defenderThreats' && !options.simDefender
          ? async () => threats
          : typeof p === 'string' && options.hostOverrides?.[p]
            ? options.hostOverrides[p]
            : Reflect.get(target, p, r),
    }),
  };
  const pass = async (passOptions: NodeHealthOptions = {}) => {
    clock += 30_000;
    return checkNodeHealth(
      context,
      config,
      node,
      {
        // The API server's strategic merge patch: merged by type.
        patchConditions: async (conditions) => {
          patches.push(conditions);
          const all = node.status!.conditions!;
          for (const c of conditions) {
            const i = all.findIndex((x) => x.type === c.type);
            if (i >= 0) all[i] = c;
            else all.push(c);
          }
        },
        createEvent: async (event) => {
          events.push(event);
        },
        serverDate: async () => ({ serverDate: Math.floor(clock / 1000) * 1000, localTime: clock }),
        listNodePods: async () => {
          if (pods instanceof Error) throw pods;
          return pods;
        },
        now: () => clock,
      },
      options.network ? { network: options.network, ...passOptions } : passOptions,
    );
  };
  const condition = (type: string) => node.status!.conditions!.find((c) => c.type === type);
  return {
    ...host,
    context,
    config,
    node,
    patches,
    events,
    pass,
    converge,
    condition,
    setThreats: (list: DefenderThreatList) => {
      threats = list;
    },
    setPods: (list: k8s.V1Pod[] | Error) => {
      pods = list;
    },
    /** A new agent process: nothing of the old one's memory, only the host and the Node. */
    restartAgent: () => {
      context = { ...context };
    },
  };
}

/** A kubelet client certificate as the cluster's signer issues it (system:node:<name>). */
async function kubeletClientCertificate(days: number): Promise<KeyPairPem> {
  const ca = await createCertificateAuthority('kubernetes');
  return issueCertificate(ca, {
    commonName: 'system:node:win-agent-test',
    organizations: ['system:nodes'],
    usage: 'client',
    days,
  });
}

test('a healthy simulated host: every condition False, written once, others’ conditions kept', async (t) => {
  const certificate = await kubeletClientCertificate(3650);
  const w = await world(t, { kubeletCertificate: certificate });
  await w.pass();
  assert.equal(w.patches.length, 1);
  const types = w.patches[0]!.map((c) => c.type).sort();
  // Every condition, the kubelet's client certificate's included: it is read where the
  // kubelet keeps it (its --cert-dir).
  assert.deepEqual(types, Object.values(NodeHealthCondition).sort());
  const notAfter = new X509Certificate(certificate.certPem).validTo;
  assert.equal(
    w.condition('KubeletCertificateExpiring')!.message,
    `The kubelet's client certificate is valid until ${new Date(notAfter).toISOString().replace('.000Z', 'Z')}`,
  );
  assert.ok(
    w.patches[0]!.every((c) => c.status === 'False'),
    JSON.stringify(w.patches[0]),
  );
  assert.equal(
    w.condition('KubeletUnhealthy')!.message,
    'Service kubelet runs and http://127.0.0.1:10248/healthz answers ok',
  );
  assert.equal(w.condition('Ready')!.status, 'True', 'the kubelet’s condition is kept');
  await w.pass();
  await w.pass();
  assert.equal(w.patches.length, 1, 'nothing changed: nothing written');
  assert.deepEqual(w.events, []);
});

test('a kubelet client certificate near its end, in the kubelet’s --cert-dir: KubeletCertificateExpiring', async (t) => {
  const certificate = await kubeletClientCertificate(1);
  const notAfter = Date.parse(new X509Certificate(certificate.certPem).validTo);
  // An hour before its end: under a tenth of its day and under the 7-day threshold.
  const w = await world(t, { kubeletCertificate: certificate, clockStart: notAfter - 3_600_000 });
  await w.pass();
  assert.equal(w.condition('KubeletCertificateExpiring'), undefined, 'one check is a blip');
  await w.pass();
  const c = w.condition('KubeletCertificateExpiring')!;
  assert.equal(c.status, 'True');
  assert.equal(c.reason, NodeHealthReason.CertificateExpiring);
  assert.match(c.message!, /C:\\k\\pki\\kubelet-client-current\.pem expires in/);
});

test('a crashed kubelet: KubeletUnhealthy after two checks, cleared once it runs again', async (t) => {
  const w = await world(t);
  await w.pass();
  assert.ok(w.machine.scm.crash('kubelet'));
  await w.pass();
  assert.equal(w.condition('KubeletUnhealthy')!.status, 'False', 'one check is a blip');
  await w.pass();
  const c = w.condition('KubeletUnhealthy')!;
  assert.equal(c.status, 'True');
  assert.equal(c.reason, NodeHealthReason.ServiceNotRunning);
  assert.match(c.message!, /Service kubelet is stopped/);
  assert.deepEqual(
    w.patches.at(-1)!.map((x) => x.type),
    ['KubeletUnhealthy'],
    'only what changed is written',
  );
  await w.converge();
  await w.pass();
  await w.pass();
  assert.equal(w.condition('KubeletUnhealthy')!.status, 'False');
});

test('a restart loop: FrequentServiceRestart, and converge stops restarting the service', async (t) => {
  const w = await world(t);
  await w.pass();
  // The kubelet dies after every start; the agent's converge restarts it each pass.
  let passes = 0;
  while (servicesNotToRestart(w.context).size === 0 && passes < 20) {
    assert.ok(w.machine.scm.crash('kubelet'));
    await w.converge(servicesNotToRestart(w.context));
    await w.pass();
    passes++;
  }
  assert.deepEqual([...servicesNotToRestart(w.context)], ['kubelet']);
  assert.equal(passes, 6, 'the sixth restart within 10 minutes is a loop');
  assert.ok(w.machine.scm.crash('kubelet'));
  const result = await w.converge(servicesNotToRestart(w.context));
  assert.deepEqual(result.started, [], 'not restarted blindly (nor kube-proxy, which needs it)');
  await w.pass();
  const c = w.condition('FrequentServiceRestart')!;
  assert.equal(c.status, 'True');
  assert.equal(c.reason, NodeHealthReason.RestartLoop);
  assert.match(c.message!, /kubelet restarted 6 times in 10\.0 minutes/);
});

test('an HNS network that existed in this boot and vanished: HNSNetworkMissing', async (t) => {
  const w = await world(t);
  await w.pass();
  assert.match(w.condition('HNSNetworkMissing')!.message!, /not created yet/);
  const network = w.machine.hns.ensure('winfleet', 'L2Bridge');
  await w.pass();
  assert.equal(w.condition('HNSNetworkMissing')!.message, 'HNS network winfleet exists');
  w.machine.removeHnsNetwork(network.id);
  await w.pass();
  await w.pass();
  assert.equal(w.condition('HNSNetworkMissing')!.status, 'True');
});

test('attacker side: a Defender threat is one bounded Event about this Node only', async (t) => {
  const w = await world(t);
  w.setThreats({
    available: true,
    threats: [
      {
        id: '2147519003',
        name: 'Virus:DOS/EICAR_Test_File',
        severity: 'Severe',
        status: 'Detected',
        detectedAt: Date.parse('2026-11-23T00:00:00Z'),
        resources: Array.from({ length: 4 }, () => `file:_C:\\${'x'.repeat(259)}`),
      },
    ],
  });
  await w.pass();
  await w.pass();
  assert.equal(w.events.length, 1, 'once per threat');
  const e = w.events[0]!;
  assert.equal(e.reason, NodeHealthEventReason.DefenderThreatDetected);
  assert.deepEqual(e.involvedObject, {
    kind: 'Node',
    name: w.config.nodeName,
    uid: w.config.nodeName,
    apiVersion: 'v1',
  });
  assert.equal(e.metadata.namespace, 'default');
  assert.ok(e.message!.length <= maxEventMessage);
  assert.ok(e.message!.endsWith('…'));
  assert.match(e.message!, /^Microsoft Defender reports active threat Virus:DOS\/EICAR_Test_File/);
});

test('Defender: only active detections are announced, each once, and not again after an agent restart', async (t) => {
  const w = await world(t, { simDefender: true });
  const defender = w.machine.defender;
  const at = Date.parse('2026-11-20T08:00:00Z');
  // History: a threat Defender quarantined days ago (Get-MpThreat still lists it).
  const old = defender.detect({
    id: '2147519003',
    name: 'Virus:DOS/EICAR_Test_File',
    severityId: 5,
    resources: ['file:_C:\\Users\\Public\\eicar.com'],
    at,
  });
  defender.remediate(old);
  assert.equal(defender.getMpThreat().length, 1, 'the history keeps it');
  await w.pass();
  assert.equal(w.events.length, 0, 'a remediated threat is history, not news');

  defender.detect({
    id: '2147735503',
    name: 'Trojan:Win32/Wacatac.B!ml',
    severityId: 4,
    resources: ['file:_C:\\k\\dropped.exe'],
    at: at + 86_400_000,
  });
  await w.pass();
  await w.pass();
  assert.equal(w.events.length, 1);
  assert.match(
    w.events[0]!.message!,
    /^Microsoft Defender reports active threat Trojan:Win32\/Wacatac\.B!ml \(ThreatID 2147735503, severity High, status Detected, detected 2026-11-21T08:00:00Z\) in file:_C:\\k\\dropped\.exe/,
  );

  // The run loop writes its own state meanwhile (merged, so the record stays); then the agent
  // restarts (upgrade, crash, reboot): the detection is still active, but announced.
  await writeState(w.context.hostOS, emptyState());
  w.restartAgent();
  await w.pass();
  await w.machine.reboot();
  w.restartAgent();
  await w.pass();
  assert.equal(w.events.length, 1, 'not announced again by a new agent process');

  // The same threat found again later is a new detection.
  defender.detect({
    id: '2147735503',
    name: 'Trojan:Win32/Wacatac.B!ml',
    severityId: 4,
    resources: ['file:_C:\\k\\dropped.exe'],
    at: at + 2 * 86_400_000,
  });
  await w.pass();
  assert.equal(w.events.length, 2);
});

test('hosts.agentHealth tunes the checks: a loop after 3 restarts with count 2; a clock 5 minutes off is no skew under a 10-minute limit', async (t) => {
  const w = await world(t, {
    agentHealth: {
      restartLoop: { count: 2, windowSeconds: 600, stableSeconds: 90 },
      clockSkewSeconds: 600,
    },
  });
  await w.pass();
  let passes = 0;
  while (servicesNotToRestart(w.context).size === 0 && passes < 20) {
    assert.ok(w.machine.scm.crash('kubelet'));
    await w.converge(servicesNotToRestart(w.context));
    await w.pass();
    passes++;
  }
  assert.equal(passes, 3, 'the third restart within 10 minutes is a loop with count 2');
  await w.pass();
  assert.match(w.condition('FrequentServiceRestart')!.message!, /kubelet restarted 3 times/);
  w.machine.clockOffsetMs = 5 * 60_000;
  await w.pass();
  await w.pass();
  assert.equal(w.condition('ClockSkew')!.status, 'False');
  w.machine.clockOffsetMs = 11 * 60_000;
  await w.pass();
  await w.pass();
  assert.match(w.condition('ClockSkew')!.message!, /11\.0 minutes ahead/);
});

test('a skewed host clock: ClockSkew from the host’s own clock, resynced by the local repair, then cleared', async (t) => {
  const w = await world(t);
  await w.pass();
  assert.equal(w.condition('ClockSkew')!.status, 'False');
  w.machine.clockOffsetMs = 10 * 60_000;
  await w.pass();
  await w.pass();
  const c = w.condition('ClockSkew')!;
  assert.equal(c.status, 'True');
  assert.match(c.message!, /^This host's clock is 10\.0 minutes ahead of the API server's/);
  assert.deepEqual([...publishedProblems(w.context)], ['ClockSkew']);
  const [repair] = await repairLocally(w.context, w.config, w.node, publishedProblems(w.context));
  assert.equal(repair?.outcome, 'done');
  assert.equal(w.machine.clockOffsetMs, 0);
  await w.pass();
  await w.pass();
  assert.equal(w.condition('ClockSkew')!.status, 'False');
  assert.deepEqual([...publishedProblems(w.context)], []);
});

test('a full system drive: SystemDiskLow, with the Event first; no local repair', async (t) => {
  const w = await world(t);
  await w.pass();
  w.machine.fs.diskFull = true;
  await w.pass();
  assert.equal(w.events.length, 1);
  assert.equal(w.events[0]!.reason, NodeHealthEventReason.SystemDiskLow);
  await w.pass();
  const c = w.condition('SystemDiskLow')!;
  assert.equal(c.status, 'True');
  assert.match(c.message!, /^System drive C:\\ has 0 MiB free/);
  assert.deepEqual(
    await repairLocally(w.context, w.config, w.node, publishedProblems(w.context)),
    [],
  );
});

test('a vanished HNS network: HNSNetworkMissing, recreated by the local repair from the CNI config, then cleared', async (t) => {
  const w = await world(t);
  w.node.spec = { podCIDR: '10.244.5.0/24' };
  assert.equal(await syncCniConfig(w.context, w.config, w.node), 'written');
  const network = w.machine.hns.ensure('winfleet', 'L2Bridge');
  await w.pass();
  w.machine.removeHnsNetwork(network.id);
  await w.pass();
  await w.pass();
  assert.equal(w.condition('HNSNetworkMissing')!.status, 'True');
  const [repair] = await repairLocally(w.context, w.config, w.node, publishedProblems(w.context));
  assert.equal(repair?.outcome, 'done', repair?.message);
  await w.pass();
  await w.pass();
  assert.equal(w.condition('HNSNetworkMissing')!.status, 'False');
  assert.equal(w.condition('HNSNetworkMissing')!.message, 'HNS network winfleet exists');
});

test('a service that dies at once after each start: its restarts are counted from the SCM’s log, not from PIDs seen', async (t) => {
  const w = await world(t);
  const check = () =>
    checkNodeHealth(w.context, w.config, w.node, {
      patchConditions: async (conditions) => {
        const all = w.node.status!.conditions!;
        for (const c of conditions) {
          const i = all.findIndex((x) => x.type === c.type);
          if (i >= 0) all[i] = c;
          else all.push(c);
        }
      },
      createEvent: async () => {},
      now: Date.now,
    });
  await check();
  // Six crashes between two checks: no check sees the PIDs in between.
  for (let i = 0; i < 6; i++) {
    assert.ok(w.machine.scm.crash('kubelet'));
    await w.converge();
  }
  assert.deepEqual([...(await check())], ['kubelet'], 'held back at once');
  await check();
  const c = w.condition('FrequentServiceRestart')!;
  assert.equal(c.status, 'True');
  assert.match(c.message!, /^kubelet restarted 6 times in 10\.0 minutes/);
});

test('kube-proxy’s /healthz answers JSON, never ok: 200 is healthy, 503 is not; before its network exists it is not probed', async (t) => {
  let answer = { status: 200, body: '' };
  const probed: number[] = [];
  const w = await world(t, {
    hostOverrides: {
      getLoopbackHttp: async (port: number) => {
        probed.push(port);
        if (port === 10248) return { status: 200, body: 'ok' };
        return answer;
      },
    },
  });
  // No pod network yet: kube-proxy waits for it, unprobed (as the real one serves no healthz).
  await w.pass();
  assert.deepEqual(probed, [10248]);
  assert.equal(w.condition('KubeProxyUnhealthy')!.status, 'False');
  assert.equal(w.condition('KubeProxyUnhealthy')!.reason, 'WaitingForPodNetwork');
  // The network exists: the JSON body kube-proxy v1.36 writes (proxy_health.go) is healthy.
  w.machine.hns.ensure('winfleet', 'L2Bridge');
  const now = '2026-11-23T01:00:30Z';
  answer = {
    status: 200,
    body: `{"lastUpdated":"${now}","currentTime":"${now}","nodeEligible":true,"healthy":true,"status":{"IPv4":{"lastUpdated":"${now}","healthy":true}}}`,
  };
  await w.pass();
  await w.pass();
  assert.equal(w.condition('KubeProxyUnhealthy')!.status, 'False');
  assert.equal(w.condition('KubeProxyUnhealthy')!.reason, 'ServiceHealthy');
  // Its 503 (a proxier that has not synced in time) is a failure, after two checks.
  answer = { ...answer, status: 503 };
  await w.pass();
  await w.pass();
  assert.equal(w.condition('KubeProxyUnhealthy')!.status, 'True');
  assert.match(w.condition('KubeProxyUnhealthy')!.message!, /HTTP 503/);
});

test('external mode with the CNI’s own kube-proxy: winfleet’s kube-proxy is neither probed nor reported missing', async (t) => {
  const probed: number[] = [];
  const w = await world(t, {
    network: {
      mode: 'external',
      cniConfDir: 'C:\\etc\\cni\\net.d',
      cniBinDir: 'C:\\opt\\cni\\bin',
      kubeProxy: false,
    },
    hostOverrides: {
      getLoopbackHttp: async (port: number) => {
        probed.push(port);
        return port === 10248 ? { status: 200, body: 'ok' } : { status: 503, body: '' };
      },
    },
  });
  await w.machine.scm.delete('kube-proxy');
  await w.pass();
  await w.pass();
  assert.deepEqual([...new Set(probed)], [10248]);
  assert.equal(w.condition('KubeProxyUnhealthy'), undefined);
  assert.equal(w.condition('KubeletUnhealthy')!.status, 'False');
});

test('an endpoint left behind on winfleet’s network: StaleHNSEndpoints after staleEndpointSeconds over two checks, removed by the local repair, then cleared; a CNI’s network and the source VIP are left alone', async (t) => {
  // Checks every 30 s (the world's clock); stale after 45 s: seen at 0, 30 (not yet), 60.
  const w = await world(t, {
    agentHealth: {
      restartLoop: { count: 5, windowSeconds: 600, stableSeconds: 60 },
      clockSkewSeconds: 60,
      staleEndpointSeconds: 45,
    },
  });
  const hns = w.machine.hns;
  const net = hns.ensure('winfleet', 'L2Bridge', [
    { addressPrefix: '10.244.1.0/24', gateway: '10.244.1.1' },
  ]);
  const other = hns.ensure('calico', 'L2Bridge', [
    { addressPrefix: '10.244.1.0/24', gateway: '10.244.1.1' },
  ]);
  const live = hns.ensureEndpoint(net.id, 'sandbox-live', '10.244.1.2');
  const left = hns.ensureEndpoint(net.id, 'sandbox-gone', '10.244.1.3');
  const foreign = hns.ensureEndpoint(other.id, 'sandbox-cni', '10.244.1.9');
  w.setPods([
    {
      metadata: { name: 'web', namespace: 'default' },
      status: { podIP: '10.244.1.2', podIPs: [{ ip: '10.244.1.2' }] },
    },
  ]);
  const repair = () => repairLocally(w.context, w.config, w.node, publishedProblems(w.context));

  await w.pass(); // first seen without a pod
  assert.equal(w.condition('StaleHNSEndpoints')?.status, 'False');
  assert.equal(w.condition('StaleHNSEndpoints')?.reason, 'NoStaleEndpoints');
  // A failed pod read decides nothing (and resets nothing).
  w.setPods(new Error('connection refused'));
  await w.pass();
  assert.match(w.stderr.join(''), /health: cannot list the pods on this node: connection refused/);
  w.setPods([
    {
      metadata: { name: 'web', namespace: 'default' },
      status: { podIP: '10.244.1.2', podIPs: [{ ip: '10.244.1.2' }] },
    },
  ]);
  await w.pass(); // 60 s after first seen: stale (one reading True)
  assert.equal(w.condition('StaleHNSEndpoints')?.status, 'False', 'one reading flips nothing');
  assert.deepEqual(await repair(), []);
  await w.pass(); // the second reading: published
  const c = w.condition('StaleHNSEndpoints')!;
  assert.equal(c.status, 'True');
  assert.equal(c.reason, 'EndpointsLeftBehind');
  assert.match(
    c.message!,
    /^1 HNS endpoint\(s\) on network winfleet hold an address no pod on this node has had for 45 s or more \(10\.244\.1\.3\)/,
  );

  const done = await repair();
  assert.equal(done.length, 1);
  assert.equal(done[0]!.outcome, 'done');
  assert.match(
    done[0]!.message,
    /removed 1 HNS endpoint\(s\) left behind on winfleet: 10\.244\.1\.3/,
  );
  const ids = hns
    .endpoints()
    .map((e) => e.id)
    .sort();
  assert.deepEqual(ids, [live.id, foreign.id].sort(), 'the pod’s and the CNI’s endpoints stay');
  assert.ok(!ids.includes(left.id));

  await w.pass();
  await w.pass();
  assert.equal(w.condition('StaleHNSEndpoints')?.status, 'False');
});

test('external mode: no endpoint is read, decided or removed', async (t) => {
  const w = await world(t);
  const hns = w.machine.hns;
  const net = hns.ensure('calico', 'L2Bridge', [
    { addressPrefix: '10.244.1.0/24', gateway: '10.244.1.1' },
  ]);
  hns.ensureEndpoint(net.id, 'sandbox-gone', '10.244.1.3');
  const network = {
    mode: 'external' as const,
    cniConfDir: 'C:\\etc\\cni\\net.d',
    cniBinDir: 'C:\\opt\\cni\\bin',
    kubeProxy: false,
    networkName: 'calico',
  };
  for (let i = 0; i < 6; i++) await w.pass({ network });
  assert.equal(w.condition('StaleHNSEndpoints'), undefined);
  assert.equal(hns.endpoints().length, 1);
  const done = await repairLocally(
    w.context,
    w.config,
    w.node,
    new Set([NodeHealthCondition.StaleHNSEndpoints]),
    network,
  );
  assert.equal(done[0]!.outcome, 'refused');
  assert.equal(hns.endpoints().length, 1);
});
