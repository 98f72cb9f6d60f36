import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { userAgents } from '../../kube/user-agent.ts';
import { WinfleetKubeConfig } from '../../kube/winfleet-kube-config.ts';
import { kubeRequest } from './kube-request.ts';

test('a request outside client-node carries the User-Agent and is counted', async (t) => {
  const agents: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    agents.push(req.headers['user-agent']);
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const kc = new WinfleetKubeConfig({ userAgent: userAgents.cli });
  kc.loadFromOptions({
    clusters: [
      {
        name: 'c',
        server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        skipTLSVerify: true,
      },
    ],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const answer = await kubeRequest(
    kc,
    'POST',
    '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    {
      body: {},
    },
  );
  assert.equal(answer.status, 201);
  assert.deepEqual(agents, [userAgents.cli]);
  assert.deepEqual(await kc.requests.counts(), { 'create selfsubjectreviews 201': 1 });
});
