/**
 * The operator's `replace-file` catalog script on a simulated host: a running executable moves
 * aside under a name of its own, so a second upgrade before the old process ends works.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { remoteCommand } from '../../src/hostaccess/remote-scripts.ts';
import { idleProgram } from './programs.ts';
import { createTestMachine, runOnHost } from './test-machine.ts';

test('replace-file moves a running executable aside under a name of its own, twice before a restart', async (t) => {
  const machine = await createTestMachine(t);
  const target = 'C:\\k\\winfleet\\winfleet-agent.exe';
  machine.programs.register('winfleet-agent.exe', { run: idleProgram });
  const versions = ['v1', 'v2', 'v3'];
  await machine.fs.writeFileAtomic(target, versions[0]!);
  const running = [
    await machine.spawn({ binaryPath: target, args: ['run'], stdout: () => {}, stderr: () => {} }),
  ];
  for (const version of versions.slice(1)) {
    await machine.fs.writeFileAtomic(`${target}.new`, version);
    const result = await runOnHost(
      machine,
      remoteCommand('replace-file', { source: `${target}.new`, target }),
    );
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await machine.fs.readFile(target)).toString(), version);
    // The new agent starts before the old one has ended (a second upgrade before a restart).
    running.push(
      await machine.spawn({
        binaryPath: target,
        args: ['run'],
        stdout: () => {},
        stderr: () => {},
      }),
    );
  }
  const copies = async () =>
    (await machine.fs.list('C:\\k\\winfleet')).map((e) => e.name).filter((n) => n.includes('.old'));
  const aside = await copies();
  assert.equal(aside.length, 2, `both old agents still run from their copies: ${aside.join(', ')}`);
  for (const name of aside) assert.match(name, /^winfleet-agent\.exe\.old-\d+$/);
  // Once they end, the next replacement removes their copies (and the fixed .old of before).
  for (const process of running) process.kill();
  await machine.fs.writeFileAtomic(`${target}.old`, 'older');
  await machine.fs.writeFileAtomic(`${target}.new`, 'v4');
  assert.equal(
    (await runOnHost(machine, remoteCommand('replace-file', { source: `${target}.new`, target })))
      .code,
    0,
  );
  assert.deepEqual(await copies(), []);
});
