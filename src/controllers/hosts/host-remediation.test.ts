import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WindowsHost, WindowsHostStatus } from '../../api/windows-host.ts';
import { HostStatus } from '../../fleet/host-status.ts';
import { leftToRemediation, rebootstrapRequest, reportSetAside } from './host-remediation.ts';

const ladder = (extra: object = {}) => ({
  current: {
    problem: { type: 'KubeletUnhealthy', status: 'True', since: '2026-11-23T04:00:00Z' },
    startedAt: '2026-11-23T04:01:00Z',
    rung: 'Rebootstrap' as const,
    rungStartedAt: '2026-11-23T04:06:00Z',
    rebootstrap: { requestedAt: '2026-11-23T04:06:00Z' },
    ...extra,
  },
});

const host = (status: WindowsHostStatus, annotations?: Record<string, string>): WindowsHost =>
  ({
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { namespace: 'ns', name: 'h1', ...(annotations ? { annotations } : {}) },
    spec: { address: '127.0.0.2' },
    status,
  }) as WindowsHost;

test('a re-bootstrap is wanted until a bootstrap at or after the request, once', () => {
  const before = { bootstrappedAt: '2026-11-23T03:00:00Z' };
  assert.equal(
    rebootstrapRequest(host({ ...before, remediation: ladder() })),
    '2026-11-23T04:06:00Z',
  );
  assert.equal(
    rebootstrapRequest(host({ bootstrappedAt: '2026-11-23T04:06:00Z', remediation: ladder() })),
    undefined,
    'done for this request',
  );
  assert.equal(
    rebootstrapRequest(
      host({
        ...before,
        lastError: { step: 'AgentBootstrap', message: 'x', time: '2026-11-23T04:06:05Z' },
        remediation: ladder(),
      }),
    ),
    undefined,
    'failed after the request: the ladder judges it, no second run',
  );
  assert.equal(
    rebootstrapRequest(
      host({
        ...before,
        remediation: ladder({ held: { reason: 'TooManyUnhealthy', since: 'x' } }),
      }),
    ),
    undefined,
    'held',
  );
  assert.equal(
    rebootstrapRequest(host({ ...before, remediation: ladder({ rung: 'Reboot' }) })),
    undefined,
  );
  assert.equal(
    rebootstrapRequest(
      host({ ...before, remediation: ladder() }, { 'winfleet.io/skip-remediation': 'true' }),
    ),
    undefined,
    'skip-remediation',
  );
  assert.equal(
    rebootstrapRequest(
      host({ ...before, remediation: ladder({ rebootstrap: { requestedAt: 'soon' } }) }),
    ),
    undefined,
    'an unreadable request time is no request',
  );
});

test('a joined host under remediation or skip is not re-bootstrapped by the join timer', () => {
  assert.equal(leftToRemediation(host({ servicesVersion: '1', remediation: ladder() })), true);
  assert.equal(
    leftToRemediation(
      host({ servicesVersion: '1', remediation: { failed: { since: 'x', message: 'y' } } }),
    ),
    true,
  );
  assert.equal(
    leftToRemediation(host({ servicesVersion: '1' }, { 'winfleet.io/skip-remediation': '' })),
    true,
  );
  assert.equal(leftToRemediation(host({ servicesVersion: '1' })), false);
  assert.equal(
    leftToRemediation(
      host({ servicesVersion: '1', remediation: ladder() }, { 'winfleet.io/rejoin': 'true' }),
    ),
    false,
    'the administrator asked for a rejoin',
  );
  assert.equal(leftToRemediation(host({ remediation: ladder() })), false, 'still joining');
});

test('a host the rollout set aside is Degraded HostSetAside, and no longer once cleared', () => {
  const setAside = {
    cause: 'ChangeFailed' as const,
    message: 'ns/h1: … is set aside',
    since: '2026-11-23T04:00:00Z',
  };
  const aside = host({ rollout: { setAside } });
  const hs = new HostStatus(aside);
  reportSetAside(aside, hs);
  const degraded = hs.condition('Degraded');
  assert.equal(degraded?.status, 'True');
  assert.equal(degraded?.reason, 'HostSetAside');
  assert.equal(degraded?.message, setAside.message);
  const cleared = host({ rollout: {}, conditions: hs.status.conditions });
  const after = new HostStatus(cleared);
  reportSetAside(cleared, after);
  assert.equal(after.condition('Degraded')?.status, 'False');
});
