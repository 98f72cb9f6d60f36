import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { installPath } from '../../payload/node-services.ts';
import {
  ctrError,
  ctrExe,
  imageListArgs,
  imagePullArgs,
  parseImageListOutput,
} from './containerd-images.ts';

test('ctr argv: the CRI namespace, the certs.d hosts, the reference after --', () => {
  assert.deepEqual(imagePullArgs('docker.io/library/nginx:latest'), [
    '--address',
    '\\\\.\\pipe\\containerd-containerd',
    '--namespace',
    'k8s.io',
    'images',
    'pull',
    '--hosts-dir',
    'C:\\k\\containerd\\certs.d',
    '--',
    'docker.io/library/nginx:latest',
  ]);
  assert.deepEqual(imageListArgs('a.test/b:1').slice(-4), [
    'images',
    'list',
    '--quiet',
    'name==a.test/b:1',
  ]);
});

test("the list output is read strictly; the error is ctr's last line", () => {
  assert.equal(parseImageListOutput('a.test/b:1\r\n', 'a.test/b:1'), true);
  assert.equal(parseImageListOutput('', 'a.test/b:1'), false);
  assert.throws(() => parseImageListOutput('a.test/c:1\n', 'a.test/b:1'), /printed "a.test\/c:1"/);
  assert.equal(
    ctrError(
      'time="x" level=info msg=y\nctr: failed to resolve reference "a.test/b:1": a.test/b:1: not found\n',
    ),
    'failed to resolve reference "a.test/b:1": a.test/b:1: not found',
  );
});

test('ctr.exe, which the pre-pull runs, is built into the payload and installed where it is run', async () => {
  const script = await readFile(new URL('../../../hack/build-payload.sh', import.meta.url), 'utf8');
  const names = /^names=\(([^)]*)\)/m.exec(script)?.[1]?.split(/\s+/) ?? [];
  assert.ok(names.includes('ctr.exe'), 'hack/build-payload.sh builds ctr.exe');
  assert.match(
    script,
    /ctr\.exe\)\n(.*\n)*?\s*dir=containerd; pkg=github\.com\/containerd\/containerd\/v2\/cmd\/ctr/,
  );
  const tools = await readFile(
    new URL('../../../hack/payload/containerd/tools.go', import.meta.url),
    'utf8',
  );
  assert.match(tools, /"github\.com\/containerd\/containerd\/v2\/cmd\/ctr"/);
  assert.equal(installPath('ctr.exe'), ctrExe);
});
