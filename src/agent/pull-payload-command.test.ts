/**
 * `winfleet-agent pull-payload`'s command line (strict: one optional flag with a services
 * version) and what it says when the host lacks what it reads. The pull itself, against a real
 * control plane and registry, is in src/controllers/hosts/ssh-pull.e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createAgentTestHost } from '../../sim/hosts/agent-test-host.ts';
import { errorCode } from '../errors/catalog.ts';
import { parsePullPayloadFlags } from './pull-payload-command.ts';
import { runAgent } from './run-agent.ts';

test('pull-payload takes only --services-version with a version', () => {
  assert.deepEqual(parsePullPayloadFlags([]), {});
  assert.deepEqual(parsePullPayloadFlags(['--services-version', '1.36.5-wf.2']), {
    servicesVersion: '1.36.5-wf.2',
  });
  for (const args of [
    ['--services-version'],
    ['--services-version', ''],
    ['--services-version', '../x'],
    ['--services-version', 'a b'],
    ['--services-version', 'v', '--services-version', 'w'],
    ['--services-version=1'],
    ['--token', 'abcdef.0123456789abcdef'],
    ['1.36.5'],
  ]) {
    assert.throws(
      () => parsePullPayloadFlags(args),
      (e: unknown) =>
        errorCode(e) === 'WF_FLAG_INVALID' && !(e as Error).message.includes('0123456789abcdef'),
      JSON.stringify(args),
    );
  }
});

test('pull-payload says what it lacks, with its code in the JSON the operator reads', async (t) => {
  const { context, stdout, stderr } = await createAgentTestHost(t);
  assert.equal(await runAgent(['pull-payload'], context), 1);
  const joining = JSON.parse(stdout.join('')) as { code: string; step: string; error: string };
  assert.equal(joining.code, 'WF_AGENT_FILE_MISSING');
  assert.equal(joining.step, 'pull-payload');
  assert.match(joining.error, /bootstrap\.json does not exist/);

  stdout.length = 0;
  assert.equal(await runAgent(['pull-payload', '--services-version', '2'], context), 1);
  assert.match(
    (JSON.parse(stdout.join('')) as { error: string }).error,
    /agent\.json does not exist/,
  );

  assert.equal(await runAgent(['pull-payload', '--bogus'], context), 2);
  assert.match(stderr.join(''), /the only flag is --services-version/);
});
