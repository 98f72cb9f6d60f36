import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentServiceConfig } from '../converge.ts';
import { serviceCommandLine, splitServiceCommandLine } from './command-line.ts';
import { serviceShimArgs } from './service-shim.ts';

test("the agent's service runs winfleet-service.exe with the agent after --", () => {
  const config = agentServiceConfig();
  assert.equal(config.binaryPath, 'C:\\k\\winfleet\\winfleet-service.exe');
  assert.equal(
    serviceCommandLine(config.binaryPath, config.args),
    '"C:\\k\\winfleet\\winfleet-service.exe" --log-dir C:\\k\\winfleet\\logs -- C:\\k\\winfleet\\winfleet-agent.exe run',
  );
});

test('paths with blanks are quoted so the shim reads back exactly its arguments', () => {
  const args = serviceShimArgs(
    { logDir: 'C:\\Program Files\\winfleet\\logs\\', stopTimeoutSeconds: 45 },
    'C:\\Program Files\\winfleet\\winfleet-agent.exe',
    ['run', 'a "quoted" word'],
  );
  assert.deepEqual(args, [
    '--log-dir',
    'C:\\Program Files\\winfleet\\logs\\',
    '--stop-timeout',
    '45s',
    '--',
    'C:\\Program Files\\winfleet\\winfleet-agent.exe',
    'run',
    'a "quoted" word',
  ]);
  const line = serviceCommandLine('C:\\Program Files\\winfleet\\winfleet-service.exe', args);
  assert.equal(
    line,
    '"C:\\Program Files\\winfleet\\winfleet-service.exe" --log-dir "C:\\Program Files\\winfleet\\logs\\\\" --stop-timeout 45s -- "C:\\Program Files\\winfleet\\winfleet-agent.exe" run "a \\"quoted\\" word"',
  );
  assert.deepEqual(splitServiceCommandLine(line), {
    binaryPath: 'C:\\Program Files\\winfleet\\winfleet-service.exe',
    args,
  });
});

test('refuses what the shim would refuse, naming the fix', () => {
  assert.throws(
    () => serviceShimArgs({ logDir: '' }, 'C:\\x.exe', []),
    /Cannot use "" as the service log directory; give an absolute Windows path/,
  );
  assert.throws(
    () => serviceShimArgs({ logDir: '--x' }, 'C:\\x.exe', []),
    /Cannot use "--x" as the service log directory/,
  );
  for (const bad of [0, 601, 1.5, Number.NaN]) {
    assert.throws(
      () => serviceShimArgs({ logDir: 'C:\\logs', stopTimeoutSeconds: bad }, 'C:\\x.exe', []),
      /Cannot use stop timeout .*; give whole seconds from 1 to 600/,
    );
  }
});
