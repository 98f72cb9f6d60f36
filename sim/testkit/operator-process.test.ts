/** The operator process runs from source by default and, with `shipped`, as the image does. */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { test } from 'node:test';
import { IMAGE_NODE_FLAGS } from '../../scripts/build-image.ts';
import { buildOperatorBundle, operatorBundlePath, spawnOperator } from './operator-process.ts';

const options = { kubeconfig: '/nonexistent/kubeconfig', namespace: 'winfleet-system' };

test('by default the operator runs from source, with no Node flags', async () => {
  const child = spawnOperator(options);
  await once(child, 'exit');
  assert.deepEqual(child.spawnargs.slice(1, 2), [
    new URL('../../src/operator/main.ts', import.meta.url).pathname,
  ]);
  assert.equal(child.spawnargs[2], '--kubeconfig');
});

test('shipped runs the ASCII bundle with the image flags; nodeFlags replace them', async () => {
  assert.equal(await buildOperatorBundle(), operatorBundlePath);
  const bundle = await readFile(operatorBundlePath);
  assert.ok(bundle.length > 1_000_000, 'the whole operator is bundled');
  assert.equal(
    bundle.findIndex((byte) => byte > 0x7f),
    -1,
    'pure ASCII',
  );

  const shipped = spawnOperator({ ...options, shipped: true });
  const [code] = await once(shipped, 'exit');
  assert.notEqual(code, 0, 'no kubeconfig: the bundle ran and refused');
  assert.deepEqual(shipped.spawnargs.slice(1, 2 + IMAGE_NODE_FLAGS.length), [
    ...IMAGE_NODE_FLAGS,
    operatorBundlePath,
  ]);

  const flagged = spawnOperator({ ...options, shipped: true, nodeFlags: ['--no-warnings'] });
  await once(flagged, 'exit');
  assert.deepEqual(flagged.spawnargs.slice(1, 3), ['--no-warnings', operatorBundlePath]);
});
