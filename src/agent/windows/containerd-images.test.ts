import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ctrError,
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
