/**
 * The Active Directory decisions that need no host and no cluster: which pool's setting governs
 * a host, which hosts a credentials Secret serves, and whether a (re-)bootstrap joins the
 * domain. The join itself, against a simulated machine and a Secret read from the API server,
 * is active-directory-join.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { WindowsHost } from '../../api/windows-host.ts';
import type { WindowsNodePool } from '../../api/windows-node-pool.ts';
import {
  domainJoinForBootstrap,
  hostsNamingAdSecret,
  type PoolActiveDirectory,
  poolActiveDirectory,
} from './active-directory-join.ts';

/** Where the pool and host live (the e2e test's namespace of its own). */
const ns = 'ad-join-3f9a1c';

const host: WindowsHost = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsHost',
  metadata: { name: 'a', namespace: ns, uid: 'uid-a', labels: { pool: 'corp' } },
  spec: { address: '127.0.0.200', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
};

const pool: WindowsNodePool = {
  apiVersion: 'winfleet.io/v1alpha1',
  kind: 'WindowsNodePool',
  metadata: { name: 'corp', namespace: ns },
  spec: {
    selector: { matchLabels: { pool: 'corp' } },
    activeDirectory: { domain: 'corp.example.com', credentialsSecretRef: { name: 'ad-join' } },
  },
};

test("the host's pool decides: selector match, first pool by key, none for the default pool", () => {
  const ad = poolActiveDirectory([pool], host) as PoolActiveDirectory;
  assert.equal(ad.pool, 'corp');
  assert.deepEqual(ad.problems, []);
  assert.equal(
    poolActiveDirectory([pool], { ...host, metadata: { ...host.metadata, labels: {} } }),
    undefined,
  );
  const bad = {
    ...pool,
    spec: {
      ...pool.spec,
      activeDirectory: { domain: 'corp', credentialsSecretRef: { name: 'ad-join' } },
    },
  };
  assert.match(
    poolActiveDirectory([bad], host)?.problems.join() ?? '',
    /spec\.activeDirectory\.domain/,
  );
  assert.deepEqual(hostsNamingAdSecret([pool], [host], ns, 'ad-join'), [`${ns}/a`]);
  assert.deepEqual(hostsNamingAdSecret([pool], [host], ns, 'other'), []);
  assert.deepEqual(hostsNamingAdSecret([pool], [host], 'team-a', 'ad-join'), []);
});

test('a host bootstrapped before its pool had spec.activeDirectory is configured again unjoined, and told how to join', () => {
  const ad = {
    pool: 'corp',
    namespace: 'winfleet-system',
    spec: { domain: 'corp.example.com', credentialsSecretRef: { name: 'ad-join' } },
    problems: [],
  };
  assert.deepEqual(domainJoinForBootstrap(undefined, { partOfDomain: false }, undefined), {});
  // Never bootstrapped: joined as usual; already in the domain: checked as usual.
  assert.deepEqual(domainJoinForBootstrap(ad, { partOfDomain: false }, undefined), { ad });
  assert.deepEqual(domainJoinForBootstrap(ad, { partOfDomain: true }, '2026-11-27T10:00:00Z'), {
    ad,
  });
  const late = domainJoinForBootstrap(ad, { partOfDomain: false }, '2026-11-27T10:00:00Z');
  assert.equal(late.ad, undefined);
  assert.match(
    late.skipped ?? '',
    /^Pool corp has spec\.activeDirectory, but this host joined the cluster at 2026-11-27T10:00:00Z, before it, .* remove the WindowsHost and add it again$/,
  );
});
