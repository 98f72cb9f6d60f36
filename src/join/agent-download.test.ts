/**
 * The agent's hash comes only from the artifact winfleet-join pins: a registry that serves
 * another manifest, another kind of artifact, no agent or two, or an endless body is refused.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { type ErrorCode, hasCode } from '../errors/catalog.ts';
import { agentDownload, agentLayerDigest } from './agent-download.ts';
import type { JoinPayloadSource } from './join-info.ts';

const agent = `sha256:${'a'.repeat(64)}`;
const layer = (title: string, digest = agent) => ({
  mediaType: 'application/vnd.winfleet.payload.file.v1',
  digest,
  size: 1,
  annotations: { 'org.opencontainers.image.title': title },
});
const manifest = (over: Record<string, unknown> = {}) =>
  Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      artifactType: 'application/vnd.winfleet.payload.v1',
      config: {
        mediaType: 'application/vnd.winfleet.payload.config.v1+json',
        digest: agent,
        size: 2,
      },
      layers: [layer('kubelet.exe', `sha256:${'b'.repeat(64)}`), layer('winfleet-agent.exe')],
      ...over,
    }),
  );
const pinned = (bytes: Buffer): JoinPayloadSource => ({
  repository: '127.0.0.1:5000/winfleet/payload',
  digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
  mirrors: [],
  insecure: true,
});

test('the agent layer’s digest from the pinned manifest', () => {
  const bytes = manifest();
  assert.equal(agentLayerDigest(bytes, pinned(bytes)), agent);
});

test('refused: another manifest than the pinned one, another artifact, no agent, two agents, a bad digest', () => {
  const good = manifest();
  const cases: [string, Buffer, JoinPayloadSource, ErrorCode, RegExp][] = [
    [
      'a manifest other than the pinned one',
      manifest({ annotations: { x: 'y' } }),
      pinned(good),
      'WF_PAYLOAD_INVALID',
      /hash to sha256:\w+, not to the sha256:\w+ asked for/,
    ],
    [
      'an image, not a payload',
      manifest({ artifactType: undefined }),
      pinned(manifest({ artifactType: undefined })),
      'WF_PAYLOAD_INVALID',
      /artifactType/,
    ],
    [
      'no agent',
      manifest({ layers: [layer('kubelet.exe')] }),
      pinned(manifest({ layers: [layer('kubelet.exe')] })),
      'WF_PAYLOAD_DOWNLOAD',
      /has no winfleet-agent\.exe layer/,
    ],
    [
      'two agents',
      manifest({ layers: [layer('winfleet-agent.exe'), layer('winfleet-agent.exe')] }),
      pinned(manifest({ layers: [layer('winfleet-agent.exe'), layer('winfleet-agent.exe')] })),
      'WF_PAYLOAD_INVALID',
      /"winfleet-agent\.exe" is also the title of layers\.0/,
    ],
    [
      'two agents, one in other case (one file on Windows)',
      manifest({ layers: [layer('winfleet-agent.exe'), layer('WINFLEET-AGENT.EXE')] }),
      pinned(manifest({ layers: [layer('winfleet-agent.exe'), layer('WINFLEET-AGENT.EXE')] })),
      'WF_PAYLOAD_INVALID',
      /is also the title of layers\.0/,
    ],
    [
      'a digest that is not sha256',
      manifest({ layers: [layer('winfleet-agent.exe', 'sha512:abc')] }),
      pinned(manifest({ layers: [layer('winfleet-agent.exe', 'sha512:abc')] })),
      'WF_PAYLOAD_INVALID',
      /layers\.0\.digest/,
    ],
  ];
  for (const [what, bytes, source, code, problem] of cases) {
    assert.throws(
      () => agentLayerDigest(bytes, source),
      (error) => hasCode(error, code) && problem.test((error as Error).message),
      what,
    );
  }
});

test('from a registry: the blob URL, or --agent-url; credentials asked for and endless bodies refused', async (t) => {
  const good = manifest();
  let mode: 'ok' | 'auth' | 'endless' = 'ok';
  const server = createServer((req, res) => {
    if (mode === 'auth') return res.writeHead(401).end();
    if (mode === 'endless') {
      res.writeHead(200);
      const chunk = Buffer.alloc(64 * 1024);
      const more = () => {
        while (res.write(chunk)) {}
      };
      res.on('drain', more);
      req.on('close', () => res.destroy());
      return more();
    }
    res.writeHead(200, { 'content-type': 'application/vnd.oci.image.manifest.v1+json' }).end(good);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const source = {
    ...pinned(good),
    repository: `127.0.0.1:${(server.address() as AddressInfo).port}/winfleet/payload`,
  };
  assert.deepEqual(await agentDownload(source), {
    url: `http://${source.repository.replace('/winfleet/payload', '')}/v2/winfleet/payload/blobs/${agent}`,
    sha256: 'a'.repeat(64),
  });
  assert.equal(
    (await agentDownload(source, { agentUrl: 'https://dl.example.com/a.exe' })).url,
    'https://dl.example.com/a.exe',
  );
  mode = 'auth';
  await assert.rejects(agentDownload(source), /asks for credentials .*give --agent-url/);
  mode = 'endless';
  await assert.rejects(agentDownload(source), /more than 4194304 bytes, too large for a manifest/);
  server.closeAllConnections();
});
