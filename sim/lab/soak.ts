/**
 * `npm run lab:soak`: starts the lab (as `make lab` does), waits until every Windows Node
 * carries the agent's conditions, then looks at them every 2 s for WINFLEET_SOAK_MINUTES
 * minutes (default 10, 1 to 60) and stops the lab. It reports every Windows Node on which
 * `KubeProxyUnhealthy` was True (or went True and back between two looks), and every one whose
 * `KubeletCertificateExpiring` is not False with the certificate's expiry at the end
 * (condition-soak.ts). Exit code 0 when there is none, 1 otherwise, 2 when the lab did not come
 * up. WINFLEET_LAB_DIR, WINFLEET_PAYLOAD_DIR and WINFLEET_LAB_NETWORK are as for `make lab`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import * as k8s from '@kubernetes/client-node';
import { waitFor } from '../../src/kube/wait-for.ts';
import { ConditionSoak } from './condition-soak.ts';
import { startLab } from './lab.ts';
import { labNetworkEnv, labNetworkMode } from './lab-network.ts';

/** The soak's length from WINFLEET_SOAK_MINUTES: a whole number of minutes, 1 to 60. */
export function soakMinutes(value: string | undefined): number {
  if (value === undefined || value === '') return 10;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 60) {
    throw new Error(
      `WINFLEET_SOAK_MINUTES must be a whole number of minutes from 1 to 60, not "${value}"`,
    );
  }
  return n;
}

async function main(): Promise<number> {
  const minutes = soakMinutes(process.env.WINFLEET_SOAK_MINUTES);
  const say = (line: string) => console.error(`[lab:soak] ${line}`);
  let lab: Awaited<ReturnType<typeof startLab>>;
  try {
    lab = await startLab({
      dir: process.env.WINFLEET_LAB_DIR,
      payloadDir: process.env.WINFLEET_PAYLOAD_DIR,
      network: labNetworkMode(process.env[labNetworkEnv]),
      say,
    });
  } catch (error) {
    say(`the lab did not come up: ${(error as Error).message}`);
    return 2;
  }
  const soak = new ConditionSoak();
  try {
    const core = lab.kc.makeApiClient(k8s.CoreV1Api);
    const windowsNodes = async () =>
      (await core.listNode({ labelSelector: 'kubernetes.io/os=windows' })).items;
    await waitFor(
      async () => {
        const nodes = await windowsNodes();
        return (
          nodes.length > 0 &&
          nodes.every((n) =>
            n.status?.conditions?.some((c) => c.type === 'KubeletCertificateExpiring'),
          )
        );
      },
      { description: 'every Windows Node reporting the agent’s conditions', timeoutMs: 300_000 },
    );
    const started = Date.now();
    const end = started + minutes * 60_000;
    say(`watching ${(await windowsNodes()).length} Windows Nodes for ${minutes} min`);
    let nextReport = started + 60_000;
    while (Date.now() < end) {
      try {
        soak.observe(await windowsNodes(), new Date());
      } catch (error) {
        say(`cannot list Nodes: ${(error as Error).message}`);
      }
      if (Date.now() >= nextReport) {
        nextReport += 60_000;
        say(
          `${Math.round((Date.now() - started) / 60_000)} of ${minutes} min, ${soak.findings(new Date()).length} finding(s) so far`,
        );
      }
      await sleep(2000);
    }
    soak.observe(await windowsNodes(), new Date());
  } finally {
    await lab.stop();
  }
  const findings = soak.findings(new Date());
  console.log(`lab soak: ${minutes} min, ${soak.nodes} Windows Nodes`);
  for (const line of soak.summary()) console.log(`  ${line}`);
  if (findings.length === 0) {
    console.log('no KubeProxyUnhealthy, every KubeletCertificateExpiring False with its expiry');
    return 0;
  }
  for (const f of findings) console.log(`FINDING ${f.at} ${f.node} ${f.type}: ${f.what}`);
  return 1;
}

if (import.meta.main) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`[lab:soak] failed: ${(error as Error).stack ?? error}`);
      process.exit(2);
    },
  );
}
