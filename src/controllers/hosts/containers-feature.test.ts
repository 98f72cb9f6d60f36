import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConditionReason, ConditionType, EventReason } from '../../api/reasons.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { hasCode } from '../../errors/catalog.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import type { RemoteHost } from '../../hostaccess/remote-host.ts';
import type { HostFacts } from '../../hostaccess/remote-scripts.ts';
import { ensureContainersFeature } from './containers-feature.ts';
import type { JoinContext } from './join-context.ts';

const host = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'win-1', namespace: 'winfleet-system', uid: 'u1' },
  spec: {
    address: '10.0.0.5',
    port: 22,
    username: 'Administrator',
    sshKeySecretRef: { name: 'k' },
  },
} as unknown as WindowsHost;

/** The feature step for a host whose facts say `state`; the scripts it ran and what it set. */
async function run(
  state: string,
  options: {
    allowed?: boolean;
    install?: unknown;
    restartAt?: string;
    lastBootTime?: string;
  } = {},
): Promise<{
  outcome?: string;
  error?: unknown;
  scripts: string[];
  events: string[];
  hs: HostStatus;
}> {
  const scripts: string[] = [];
  const events: string[] = [];
  const ctx = {
    config: () => ({ hosts: { installContainersFeature: options.allowed ?? true } }),
    events: {
      record: (_h: unknown, type: string, reason: string) => events.push(`${type} ${reason}`),
    },
  } as unknown as JoinContext;
  const remote = {
    script: async (name: string) => {
      scripts.push(name);
      if (name === 'install-windows-feature')
        return (
          options.install ?? {
            success: true,
            restartNeeded: 'Yes',
            exitCode: 'SuccessRestartRequired',
          }
        );
      return { ok: true };
    },
  } as unknown as RemoteHost;
  const hs = new HostStatus(
    options.restartAt === undefined
      ? host
      : { ...host, status: { containersFeatureRestartAt: options.restartAt } },
  );
  const facts = { containersFeature: state, lastBootTime: options.lastBootTime } as HostFacts;
  try {
    return {
      outcome: await ensureContainersFeature(ctx, host, hs, remote, facts),
      scripts,
      events,
      hs,
    };
  } catch (error) {
    return { error, scripts, events, hs };
  }
}

test('an installed feature needs nothing', async () => {
  const result = await run('Installed', { allowed: false });
  assert.equal(result.outcome, 'installed');
  assert.deepEqual(result.scripts, []);
});

test('an available feature is installed, then the host restarts; Ready and an Event say so', async () => {
  const result = await run('Available');
  assert.equal(result.outcome, 'restarting');
  assert.deepEqual(result.scripts, ['install-windows-feature', 'restart-host']);
  assert.deepEqual(result.events, [`Normal ${EventReason.InstallingContainersFeature}`]);
  const ready = result.hs.condition(ConditionType.Ready);
  assert.equal(ready?.reason, ConditionReason.InstallingContainersFeature);
  assert.match(
    ready?.message ?? '',
    /Installed the Windows Containers feature on 10\.0\.0\.5; the host restarts/,
  );
});

test('an install that needs no restart goes on at once', async () => {
  const result = await run('Available', {
    install: { success: true, restartNeeded: 'No', exitCode: 'Success' },
  });
  assert.equal(result.outcome, 'installed');
  assert.deepEqual(result.scripts, ['install-windows-feature']);
});

test('a pending install or uninstall only restarts the host', async () => {
  for (const state of ['InstallPending', 'UninstallPending']) {
    const result = await run(state);
    assert.equal(result.outcome, 'restarting', state);
    assert.deepEqual(result.scripts, ['restart-host'], state);
  }
});

test('a pending state records when winfleet restarted the host', async () => {
  const result = await run('InstallPending');
  assert.equal(result.outcome, 'restarting');
  assert.match(result.hs.status.containersFeatureRestartAt ?? '', /^\d{4}-\d\d-\d\dT[\d:]+Z$/);
});

test('pending, restarted, still pending: refused with the fix, not restarted again', async () => {
  for (const [state, options] of [
    ['InstallPending', { restartAt: '2026-01-01T00:00:00Z', lastBootTime: '2026-01-01T00:02:00Z' }],
    ['UninstallPending', { restartAt: '2026-01-01T00:00:00Z' }],
  ] as const) {
    const result = await run(state, options);
    assert.ok(hasCode(result.error, 'WF_HOST_CONTAINERS_MISSING'), state);
    assert.match(
      (result.error as Error).message,
      new RegExp(
        `on 10\\.0\\.0\\.5 is still ${state} after the restart winfleet made at 2026-01-01T00:00:00Z; read C:\\\\Windows\\\\Logs\\\\CBS\\\\CBS\\.log on the host, finish the (un)?install by hand`,
      ),
    );
    assert.deepEqual(result.scripts, [], state);
    assert.equal(
      result.hs.condition(ConditionType.Degraded)?.reason,
      ConditionReason.ContainersFeatureMissing,
    );
  }
});

test('a host that has not booted since the restart request is not failed yet', async () => {
  const result = await run('InstallPending', {
    restartAt: '2026-01-01T00:00:00Z',
    lastBootTime: '2025-12-31T23:00:00Z',
  });
  assert.equal(result.outcome, 'restarting');
  assert.deepEqual(result.scripts, ['restart-host']);
});

test('an installed feature clears the restart record', async () => {
  const result = await run('Installed', { restartAt: '2026-01-01T00:00:00Z' });
  assert.equal(result.outcome, 'installed');
  assert.equal(result.hs.status.containersFeatureRestartAt, undefined);
});

test('not allowed to install: refused with the fix, nothing run on the host', async () => {
  for (const [state, fix] of [
    [
      'Available',
      /is not installed on 10\.0\.0\.5 \(InstallState Available\), and hosts\.installContainersFeature is false; run Install-WindowsFeature -Name Containers on the host and restart it, or set hosts\.installContainersFeature: true/,
    ],
    [
      'InstallPending',
      /waits for a restart on 10\.0\.0\.5 \(InstallState InstallPending\), and hosts\.installContainersFeature is false; restart the host, or set/,
    ],
  ] as const) {
    const result = await run(state, { allowed: false });
    assert.ok(hasCode(result.error, 'WF_HOST_CONTAINERS_MISSING'), state);
    assert.match((result.error as Error).message, fix);
    assert.deepEqual(result.scripts, []);
    const degraded = result.hs.condition(ConditionType.Degraded);
    assert.equal(degraded?.status, 'True');
    assert.equal(degraded?.reason, ConditionReason.ContainersFeatureMissing);
    assert.equal(result.hs.status.lastError?.step, 'containers-feature');
  }
});

test('removed feature files and an unknown state are refused whatever the config', async () => {
  const removed = await run('Removed');
  assert.match((removed.error as Error).message, /files were removed .* -Source/);
  const unknown = await run('Unknown');
  assert.match(
    (unknown.error as Error).message,
    /Cannot tell whether the Windows Containers feature is installed on 10\.0\.0\.5: Get-WindowsFeature reported "Unknown"/,
  );
  for (const result of [removed, unknown]) {
    assert.ok(hasCode(result.error, 'WF_HOST_CONTAINERS_MISSING'));
    assert.deepEqual(result.scripts, []);
  }
});

test('a failed or unreadable install is reported', async () => {
  const failed = await run('Available', {
    install: { success: false, restartNeeded: 'No', exitCode: 'Failed' },
  });
  assert.match(
    (failed.error as Error).message,
    /Install-WindowsFeature -Name Containers did not succeed on 10\.0\.0\.5/,
  );
  const garbled = await run('Available', { install: { ok: true } });
  assert.match(
    (garbled.error as Error).message,
    /Cannot read install-windows-feature's result \{"ok":true\}/,
  );
});
