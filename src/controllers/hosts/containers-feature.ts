/**
 * The Windows Containers feature on a joining host. Without it there is no Host Compute
 * Service (vmcompute.dll): containerd runs, but every pod sandbox fails ("The specified module
 * could not be found."), so the node never runs a pod and nothing says why. The host's facts
 * carry the feature's InstallState (Get-WindowsFeature -Name Containers), and each join pass
 * does the one next step, level-triggered:
 *
 * | InstallState             | hosts.installContainersFeature true      | false            |
 * |--------------------------|------------------------------------------|------------------|
 * | Installed                | go on                                    | go on            |
 * | Available                | Install-WindowsFeature, then restart     | fail, saying how |
 * | InstallPending           | restart (a reboot finishes the install)  | fail, saying how |
 * | UninstallPending         | restart (then it is Available)           | fail, saying how |
 * | Removed, Unknown, other  | fail: needs the install media / a Server | same             |
 *
 * The default is to install: a tool that joins hosts is expected to prepare them (as WMCO and
 * RKE2's installer do), and the install only adds a Windows component. The restart is
 * scheduled with shutdown.exe's 5 s delay, so the command returns first; the next pass finds
 * the host down (Unreachable, retried) and then Installed.
 *
 * A pending state that a restart did not finish would otherwise restart the host on every
 * pass, forever. So the status records when winfleet asked for the restart
 * (containersFeatureRestartAt), and a pass that finds the state still pending after the host
 * has booted since (facts.lastBootTime, when the host reports it; otherwise any later pass)
 * fails with WF_HOST_CONTAINERS_MISSING instead of restarting it again.
 */
import { ConditionReason, ConditionType, EventReason, JoinStep } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { WinfleetError } from '../../errors/catalog.ts';
import type { HostStatus } from '../../fleet/host-status.ts';
import type { RemoteHost } from '../../hostaccess/remote-host.ts';
import type { HostFacts } from '../../hostaccess/remote-scripts.ts';
import { apiTime } from '../../kube/api-time.ts';
import { type JoinContext, step } from './join-context.ts';

/** How soon a host restarting for the feature is looked at again. */
export const featureRestartRecheckMs = 10_000;

/** What the join does next about the feature. */
export type ContainersFeatureOutcome = 'installed' | 'restarting';

const installHint = 'run Install-WindowsFeature -Name Containers on the host and restart it';

/** Why the host cannot join without the feature: WF_HOST_CONTAINERS_MISSING, Degraded. */
function missing(hs: HostStatus, message: string): never {
  hs.set(ConditionType.Degraded, 'True', ConditionReason.ContainersFeatureMissing, message);
  hs.error(JoinStep.ContainersFeature, message);
  throw new WinfleetError('WF_HOST_CONTAINERS_MISSING', message);
}

/**
 * True when the host has booted since winfleet asked it to restart at `restartAt`: its reported
 * boot time is later, or (a host that does not report one) this is a later pass at all.
 */
function bootedSince(facts: HostFacts, restartAt: string): boolean {
  if (typeof facts.lastBootTime !== 'string') return true;
  const booted = Date.parse(facts.lastBootTime);
  const asked = Date.parse(restartAt);
  return Number.isNaN(booted) || Number.isNaN(asked) || booted > asked;
}

/** Reads Install-WindowsFeature's result strictly. */
function readInstallResult(value: unknown): { success: boolean; restartNeeded: string } {
  const result = value as { success?: unknown; restartNeeded?: unknown } | null;
  if (typeof result?.success !== 'boolean' || typeof result.restartNeeded !== 'string') {
    throw new WinfleetError(
      'WF_REMOTE_COMMAND_FAILED',
      `Cannot read install-windows-feature's result ${JSON.stringify(value)}: expected {"success": boolean, "restartNeeded": string}`,
    );
  }
  return { success: result.success, restartNeeded: result.restartNeeded };
}

/**
 * Makes sure the host has the Containers feature: 'installed' when the join can go on,
 * 'restarting' when the host was asked to restart (the pass ends; see the header). Throws
 * WF_HOST_CONTAINERS_MISSING when the feature is missing and cannot or may not be installed.
 * @package
 */
export async function ensureContainersFeature(
  ctx: JoinContext,
  host: WindowsHost,
  hs: HostStatus,
  remote: RemoteHost,
  facts: HostFacts,
): Promise<ContainersFeatureOutcome> {
  const state = facts.containersFeature;
  if (state === 'Installed') {
    delete hs.status.containersFeatureRestartAt;
    return 'installed';
  }
  const where = `${host.spec.address}`;
  const allowed = ctx.config().hosts.installContainersFeature;
  const notAllowed = 'hosts.installContainersFeature is false';
  switch (state) {
    case 'Available':
    case 'InstallPending':
    case 'UninstallPending':
      break;
    case 'Removed':
      missing(
        hs,
        `The Windows Containers feature is not installed on ${where} and its files were removed from the host (InstallState Removed), so it cannot be installed from the host alone; run Install-WindowsFeature -Name Containers -Source <the Windows Server installation media's \\sources\\sxs or install.wim> on the host and restart it`,
      );
      break;
    default:
      missing(
        hs,
        `Cannot tell whether the Windows Containers feature is installed on ${where}: Get-WindowsFeature reported ${JSON.stringify(state)} (it is Windows Server's, and winfleet joins Windows Server 2019, 2022 and 2025); check that the host runs Windows Server, then ${installHint}`,
      );
  }
  if (!allowed) {
    const now =
      state === 'Available'
        ? 'is not installed'
        : state === 'InstallPending'
          ? 'is installed but waits for a restart'
          : 'is being uninstalled';
    missing(
      hs,
      `The Windows Containers feature ${now} on ${where} (InstallState ${state}), and ${notAllowed}; ${state === 'Available' ? installHint : 'restart the host'}, or set hosts.installContainersFeature: true to let winfleet do it`,
    );
  }
  const restartAt = hs.status.containersFeatureRestartAt;
  if (state !== 'Available' && restartAt !== undefined && bootedSince(facts, restartAt)) {
    missing(
      hs,
      `The Windows Containers feature on ${where} is still ${state} after the restart winfleet made at ${restartAt}; read C:\\Windows\\Logs\\CBS\\CBS.log on the host, finish the ${state === 'InstallPending' ? 'install' : 'uninstall'} by hand (${installHint}), then the next pass goes on once the feature is Installed`,
    );
  }
  if (state === 'Available') {
    const result = await step(hs, JoinStep.ContainersFeature, async () =>
      readInstallResult(await remote.script('install-windows-feature', { name: 'Containers' })),
    );
    if (!result.success) {
      missing(
        hs,
        `Install-WindowsFeature -Name Containers did not succeed on ${where}; ${installHint}, and read C:\\Windows\\Logs\\DISM\\dism.log if it fails there too`,
      );
    }
    if (result.restartNeeded === 'No') return 'installed';
  }
  await step(hs, JoinStep.ContainersFeature, () => remote.script('restart-host', {}));
  hs.status.containersFeatureRestartAt = apiTime();
  const message =
    state === 'Available'
      ? `Installed the Windows Containers feature on ${where}; the host restarts to finish it, then the join goes on`
      : `The Windows Containers feature on ${where} is ${state}; the host restarts to finish it, then the join goes on`;
  hs.set(ConditionType.Ready, 'False', ConditionReason.InstallingContainersFeature, message);
  ctx.events.record(host, 'Normal', EventReason.InstallingContainersFeature, message);
  return 'restarting';
}
