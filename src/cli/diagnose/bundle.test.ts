import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import tar from 'tar-stream';
import { bundleRoot, checkBundlePath, writeBundle } from './bundle.ts';
import { escapeHtml, renderIndex } from './index-html.ts';

async function unpack(
  gz: Buffer,
): Promise<Map<string, { type: string; mode: number; body: string }>> {
  const entries = new Map<string, { type: string; mode: number; body: string }>();
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => {
        chunks.push(c as Buffer);
      });
      stream.on('end', () => {
        entries.set(header.name, {
          type: header.type ?? 'file',
          mode: header.mode ?? 0,
          body: Buffer.concat(chunks).toString(),
        });
        next();
      });
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  extract.end(gunzipSync(gz));
  await done;
  return entries;
}

test('the bundle is a .tar.gz of one directory with its files, private modes', async () => {
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  out.on('data', (c: Buffer) => chunks.push(c));
  const root = bundleRoot(new Date('2026-11-23T07:31:58.123Z'));
  assert.equal(root, 'winfleet-diagnose-20261123T073158Z');
  await writeBundle(out, root, [
    { path: 'index.html', content: Buffer.from('<html>') },
    {
      path: 'hosts/winfleet-system_win-1/services.txt',
      content: Buffer.from('SERVICE_NAME: kubelet'),
    },
  ]);
  const entries = await unpack(Buffer.concat(chunks));
  assert.deepEqual([...entries.keys()].sort(), [
    `${root}/`,
    `${root}/hosts/`,
    `${root}/hosts/winfleet-system_win-1/`,
    `${root}/hosts/winfleet-system_win-1/services.txt`,
    `${root}/index.html`,
  ]);
  assert.equal(entries.get(`${root}/index.html`)!.body, '<html>');
  assert.equal(entries.get(`${root}/index.html`)!.mode, 0o600);
  assert.equal(entries.get(`${root}/hosts/`)!.type, 'directory');
  assert.equal(entries.get(`${root}/hosts/`)!.mode, 0o700);
});

test('paths that could leave the bundle directory are refused', async () => {
  for (const bad of ['../x', 'a/../../x', '/etc/passwd', 'a//b', 'a\\b', 'hosts/./x', '', 'a b']) {
    assert.throws(() => checkBundlePath(bad), /Cannot put/, bad);
  }
  await assert.rejects(
    writeBundle(new PassThrough(), 'root', [{ path: '../evil', content: Buffer.alloc(0) }]),
    /Cannot put/,
  );
});

test('index.html escapes what hosts and the cluster said and links only collected files', () => {
  const html = renderIndex({
    startedAt: new Date('2026-11-23T07:00:00Z'),
    finishedAt: new Date('2026-11-23T07:01:00Z'),
    cliVersion: '0.1.0',
    command: 'winfleet diagnose -o b.tar.gz',
    sections: [
      {
        title: 'Cluster',
        items: [
          { path: 'cluster/nodes.yaml', title: 'Nodes', bytes: 2048, status: 'ok' },
          {
            path: 'cluster/events.yaml',
            title: 'Events',
            bytes: 0,
            status: 'failed',
            note: '<script>alert(1)</script>',
          },
        ],
      },
      {
        title: 'Host "x" <b>',
        failure: 'cannot reach 10.0.0.9:22 over SSH: ECONNREFUSED',
        items: [],
      },
    ],
  });
  assert.ok(!html.includes('<script>'));
  assert.ok(html.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  assert.ok(html.includes('<h2>Host &quot;x&quot; &lt;b&gt;</h2>'));
  assert.ok(html.includes('<a href="cluster/nodes.yaml">cluster/nodes.yaml</a>'));
  assert.ok(!html.includes('href="cluster/events.yaml"'));
  assert.match(
    html,
    /Not collected: <span class="note">cannot reach 10\.0\.0\.9:22 over SSH: ECONNREFUSED/,
  );
  assert.match(html, /2\.0 KiB/);
  assert.match(html, /2 section\(s\) with failures/);
  assert.match(html, /Content-Security-Policy" content="default-src 'none'/);
  assert.equal(escapeHtml(`a&<>"'`), 'a&amp;&lt;&gt;&quot;&#39;');
});
