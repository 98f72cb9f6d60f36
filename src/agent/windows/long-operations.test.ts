import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodePowerShellArgs } from '../../powershell/powershell.ts';
import { type CommandRunner, defaultCommandTimeoutMs } from './command-runner.ts';
import { longOperationTimeoutsMs } from './long-operations.ts';
import { WindowsHostOS } from './windows-host-os.ts';

const minutes = (n: number) => n * 60_000;

test('no long Windows operation gets the runner’s 2-minute default; DISM is never killed', () => {
  assert.equal(defaultCommandTimeoutMs, minutes(2));
  // A WUA search can run 9+ minutes (ansible.windows#463); an LCU install tens of minutes.
  assert.ok(longOperationTimeoutsMs.updateSearch >= minutes(20));
  assert.ok(longOperationTimeoutsMs.updateInstall >= minutes(90));
  assert.ok(longOperationTimeoutsMs.msuExtract >= minutes(10));
  assert.equal(longOperationTimeoutsMs.dismAddPackage, Number.POSITIVE_INFINITY);
});

test('WindowsHostOS runs the search, the install, wusa /extract and DISM with their own timeouts', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'winfleet-longops-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const payloadDir = join(root, 'payload');
  await mkdir(payloadDir);
  const timeouts: [string, number | undefined][] = [];
  const run: CommandRunner = async (file, args, options) => {
    const script = file.endsWith('powershell.exe') ? decodePowerShellArgs(args)! : '';
    const what = script.includes('CreateUpdateDownloader')
      ? 'install'
      : script.includes('CreateUpdateSearcher')
        ? 'search'
        : script.includes('Get-HotFix')
          ? 'hotfixes'
          : (file.split('\\').pop() ?? file);
    timeouts.push([what, options?.timeoutMs]);
    if (what === 'search') {
      const update = { kbs: ['5040437'], title: 'LCU', categories: ['Security Updates'] };
      return {
        exitCode: 0,
        stdout: JSON.stringify({ ok: true, updates: [{ ...update, rebootBehavior: 1 }] }),
        stderr: '',
      };
    }
    if (what === 'install') {
      const result = { kb: '5040437', step: 'install', resultCode: 2, hresult: '0x00000000' };
      return {
        exitCode: 0,
        stdout: JSON.stringify({
          ok: true,
          results: [{ ...result, rebootRequired: true }],
          rebootRequired: true,
          notFound: [],
        }),
        stderr: '',
      };
    }
    if (what === 'hotfixes') return { exitCode: 0, stdout: '[]', stderr: '' };
    if (what === 'wusa.exe') {
      const dir = args[1]!.slice('/extract:'.length);
      await writeFile(join(dir, 'Windows10.0-KB5041160-x64.cab'), '');
      return { exitCode: 0, stdout: '', stderr: '' };
    }
    if (what === 'Dism.exe') return { exitCode: 3010, stdout: '', stderr: '' };
    throw new Error(`unexpected ${file}`);
  };
  const host = new WindowsHostOS({ systemRoot: 'C:\\Windows', payloadDir, run });
  await host.searchUpdates();
  await host.installUpdates(['KB5040437']);
  await writeFile(join(payloadDir, 'windows10.0-kb5041160-x64.msu'), 'msu');
  await host.installUpdates(['KB5041160']);
  const t_ = longOperationTimeoutsMs;
  assert.deepEqual(timeouts, [
    ['search', t_.updateSearch],
    ['install', t_.updateInstall],
    ['hotfixes', undefined],
    ['wusa.exe', t_.msuExtract],
    ['Dism.exe', t_.dismAddPackage],
  ]);
});
