/**
 * Bootstrap tokens against the real API server, made by a ServiceAccount holding exactly the
 * chart's kube-system rights (create and delete Secrets, no get, list or watch): any read of a
 * Secret there would be answered 403 and fail the test. The tokens are checked the way a
 * joining node uses them, by authenticating with them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import {
  type LimitedServiceAccount,
  limitedServiceAccount,
} from '../../sim/testkit/limited-service-account.ts';
import { sharedCluster, testNamespace } from '../../sim/testkit/test-cluster.ts';
import { httpStatus, isNotFound } from '../kube/client.ts';
import { waitFor } from '../kube/wait-for.ts';
import {
  bootstrapGroup,
  deleteBootstrapToken,
  ensureBootstrapToken,
  tokenHostUidLabel,
  tokenIdFor,
} from './bootstrap-tokens.ts';

/** The chart's Role in kube-system, as rbac.yaml grants it. */
const kubeSystemRights = [{ apiGroups: [''], resources: ['secrets'], verbs: ['create', 'delete'] }];

const { kc: admin } = await sharedCluster();
const namespace = await testNamespace(admin, 'bootstrap-tokens');
const core = admin.makeApiClient(k8s.CoreV1Api);

async function serviceAccount(
  t: { after(fn: () => Promise<void>): void },
  name: string,
  withRights = true,
): Promise<LimitedServiceAccount> {
  const account = await limitedServiceAccount(admin, {
    namespace,
    name,
    grants: withRights ? [{ namespace: 'kube-system', rules: kubeSystemRights }] : [],
  });
  t.after(() => account.remove());
  return account;
}

function newHost(t: { after(fn: () => Promise<void>): void }) {
  const host = { uid: randomUUID(), namespace, name: 'win-1' };
  t.after(() => deleteBootstrapToken(admin, host.uid));
  return host;
}

const readToken = (id: string) =>
  core.readNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${id}` });

/** Who the API server says a bearer token is, or its HTTP status when it refuses it. */
async function whoIs(token: string): Promise<k8s.V1UserInfo | number> {
  const cluster = admin.getCurrentCluster()!;
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: cluster.server, caFile: cluster.caFile }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  try {
    const review = await kc
      .makeApiClient(k8s.AuthenticationV1Api)
      .createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1' } });
    return review.status?.userInfo ?? {};
  } catch (error) {
    const code = httpStatus(error);
    if (code === undefined) throw error;
    return code;
  }
}

/** Waits until the token authenticates (the authenticator reads Secrets from a cache). */
const authenticates = (token: string) =>
  waitFor(
    async () => {
      const user = await whoIs(token);
      return typeof user === 'object' ? user : undefined;
    },
    { description: 'the bootstrap token to authenticate', timeoutMs: 20_000 },
  );

const decode = (secret: k8s.V1Secret, key: string) =>
  Buffer.from(secret.data?.[key] ?? '', 'base64').toString('utf8');

test('a new token is created in kube-system, in winfleet’s group, without reading any Secret', async (t) => {
  const sa = await serviceAccount(t, 'token-maker');
  const host = newHost(t);
  const token = await ensureBootstrapToken(sa.kc, host, 30 * 60_000);
  assert.match(token.token, /^[a-z0-9]{6}\.[a-z0-9]{16}$/);
  assert.equal(token.id, tokenIdFor(host.uid));
  assert.ok(Math.abs(token.expires.getTime() - (Date.now() + 30 * 60_000)) < 60_000);

  const secret = await readToken(token.id);
  assert.equal(secret.type, 'bootstrap.kubernetes.io/token');
  assert.equal(secret.metadata?.labels?.[tokenHostUidLabel], host.uid);
  assert.equal(decode(secret, 'auth-extra-groups'), bootstrapGroup);
  assert.equal(`${decode(secret, 'token-id')}.${decode(secret, 'token-secret')}`, token.token);
  assert.equal(
    new Date(decode(secret, 'expiration')).getTime(),
    Math.floor(token.expires.getTime() / 1000) * 1000,
  );

  // The API server takes it as a bootstrap token of winfleet's group.
  const user = await authenticates(token.token);
  assert.equal(user.username, `system:bootstrap:${token.id}`);
  assert.ok(user.groups?.includes(bootstrapGroup), `groups: ${user.groups?.join(', ')}`);
});

test('a token of the host already there is deleted and made again, never read back', async (t) => {
  const sa = await serviceAccount(t, 'token-remaker');
  const host = newHost(t);
  const first = await ensureBootstrapToken(sa.kc, host);
  const firstUid = (await readToken(first.id)).metadata?.uid;
  await assert.rejects(
    sa.kc
      .makeApiClient(k8s.CoreV1Api)
      .readNamespacedSecret({ namespace: 'kube-system', name: `bootstrap-token-${first.id}` }),
    (error) => httpStatus(error) === 403,
    'the account cannot read it (so a read in ensureBootstrapToken would fail this test)',
  );
  // The ServiceAccount cannot read the Secret: its secret part is not recoverable, so the
  // second pass must replace it.
  const second = await ensureBootstrapToken(sa.kc, host);
  assert.equal(second.id, first.id);
  assert.notEqual(second.token, first.token, 'a new secret part');
  const secret = await readToken(second.id);
  assert.notEqual(secret.metadata?.uid, firstUid, 'a new Secret, not the old one updated');
  assert.equal(`${decode(secret, 'token-id')}.${decode(secret, 'token-secret')}`, second.token);
  assert.equal((await authenticates(second.token)).username, `system:bootstrap:${second.id}`);
  assert.equal(
    await waitFor(async () => ((await whoIs(first.token)) === 401 ? 401 : undefined), {
      description: 'the replaced token to be refused',
      timeoutMs: 20_000,
    }),
    401,
  );
});

test('deleting a token deletes its Secret; one that is gone is fine; other errors pass through', async (t) => {
  const sa = await serviceAccount(t, 'token-deleter');
  const host = newHost(t);
  const token = await ensureBootstrapToken(sa.kc, host);
  await deleteBootstrapToken(sa.kc, host.uid);
  await assert.rejects(readToken(token.id), (error) => isNotFound(error));
  await deleteBootstrapToken(sa.kc, host.uid);

  const powerless = await serviceAccount(t, 'token-nobody', false);
  await assert.rejects(
    deleteBootstrapToken(powerless.kc, randomUUID()),
    (error) => httpStatus(error) === 403,
  );
});
