import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import type { ReportedUpdate } from '../../api/windows-updates.ts';
import { decodePowerShellArgs } from '../../powershell/powershell.ts';
import type { UpdateInstallResult } from '../host-os.ts';
import { WindowsHostOS } from './windows-host-os.ts';
import {
  dismAddPackageArgs,
  dismOutcome,
  exitCodeHresult,
  installedHotfixesScript,
  installWithPayload,
  type PayloadUpdatePrimitives,
  packageCabs,
  parseInstalledHotfixes,
  payloadMsuFiles,
  searchWithPayload,
  wusaExtractArgs,
} from './windows-update-msu.ts';

test('finds the payload’s .msu files by the KB in their Microsoft Update Catalog names', () => {
  assert.deepEqual(
    payloadMsuFiles([
      'kubelet.exe',
      'windows10.0-kb5040437-x64_4a1e0c0f2c6b3d5a.msu',
      'Windows10.0-KB5040437-x64.msu',
      'windows10.0-kb5041160-x64.msu',
      'notes-kb5041161.txt',
      'kb5041162.msu',
      'kb50411620x.msu', // the KB number runs on: not a KB
      'windows10.0-kb123-x64.msu',
      'bad name-kb5041163-x64.msu',
    ]),
    [
      { kb: 'KB5040437', name: 'Windows10.0-KB5040437-x64.msu' },
      { kb: 'KB5041162', name: 'kb5041162.msu' },
      { kb: 'KB5041160', name: 'windows10.0-kb5041160-x64.msu' },
    ],
  );
});

test('the installed-hotfix script parses; its answer is read strictly', async () => {
  await assertValidPowerShell(installedHotfixesScript(), 'hotfixes');
  assert.deepEqual(parseInstalledHotfixes('["KB5040437","kb5041160 ","Q123456"]'), [
    'KB5040437',
    'KB5041160',
  ]);
  assert.throws(
    () => parseInstalledHotfixes('{"HotFixID":"KB5040437"}'),
    /expected a list of strings/,
  );
});

test('wusa and dism arguments, cab order and exit codes', () => {
  assert.deepEqual(wusaExtractArgs('C:\\p\\a.msu', 'C:\\t'), ['C:\\p\\a.msu', '/extract:C:\\t']);
  assert.deepEqual(dismAddPackageArgs('C:\\t\\x.cab'), [
    '/online',
    '/add-package',
    '/packagepath:C:\\t\\x.cab',
    '/quiet',
    '/norestart',
  ]);
  assert.deepEqual(
    packageCabs([
      'WSUSSCAN.cab',
      'Windows10.0-KB5040437-x64.cab',
      'SSU-20348.2580-x64.cab',
      'Windows10.0-KB5040437-x64-pkgProperties.txt',
      'Windows10.0-KB5040437-x64.xml',
    ]),
    ['SSU-20348.2580-x64.cab', 'Windows10.0-KB5040437-x64.cab'],
  );
  assert.equal(exitCodeHresult(-2146498530), '0x800F081E');
  assert.deepEqual(dismOutcome(0), { ok: true, rebootRequired: false });
  assert.deepEqual(dismOutcome(3010), { ok: true, rebootRequired: true });
  const na = dismOutcome(-2146498530);
  assert.ok(
    !na.ok && /^0x800F081E \(CBS_E_NOT_APPLICABLE: .*this host’s release\)$/.test(na.error),
  );
});

function primitives(over: Partial<PayloadUpdatePrimitives> & { calls?: string[] }) {
  const calls = over.calls ?? [];
  const p: PayloadUpdatePrimitives = {
    listPayload: async () => [],
    searchOnline: async () => [],
    installedKbs: async () => [],
    installOnline: async (kbs): Promise<UpdateInstallResult> => {
      calls.push(`online ${kbs.join(',')}`);
      return { installed: kbs, failed: [], rebootRequired: false };
    },
    installMsu: async (msu) => {
      calls.push(`msu ${msu.name}`);
      return { rebootRequired: true };
    },
    ...over,
  };
  return p;
}

const wuaUpdate: ReportedUpdate = {
  kb: 'KB5040437',
  title: 'Cumulative Update',
  categories: ['Security Updates'],
  rebootRequired: true,
};

test('without .msu files the search is Windows Update’s, failures included', async () => {
  await assert.rejects(
    searchWithPayload(
      primitives({
        searchOnline: async () => {
          throw new Error('0x8024402C');
        },
      }),
    ),
    /0x8024402C/,
  );
});

test('an air-gapped host reports the payload’s .msu files not installed, once per KB', async () => {
  const payload = [
    'windows10.0-kb5040437-x64.msu',
    'windows10.0-kb5041160-x64.msu',
    'windows10.0-kb5039227-x64.msu',
  ];
  const offline = await searchWithPayload(
    primitives({
      listPayload: async () => payload,
      searchOnline: async () => {
        throw new Error('0x8024402C');
      },
      installedKbs: async () => ['KB5039227'],
    }),
  );
  assert.deepEqual(offline, [
    {
      kb: 'KB5040437',
      title: 'windows10.0-kb5040437-x64.msu (from the payload)',
      categories: ['Security Updates'],
      rebootRequired: true,
    },
    {
      kb: 'KB5041160',
      title: 'windows10.0-kb5041160-x64.msu (from the payload)',
      categories: ['Security Updates'],
      rebootRequired: true,
    },
  ]);
  const both = await searchWithPayload(
    primitives({ listPayload: async () => payload, searchOnline: async () => [wuaUpdate] }),
  );
  assert.deepEqual(
    both.map((u) => [u.kb, u.title]),
    [
      ['KB5040437', 'Cumulative Update'],
      ['KB5039227', 'windows10.0-kb5039227-x64.msu (from the payload)'],
      ['KB5041160', 'windows10.0-kb5041160-x64.msu (from the payload)'],
    ],
  );
});

test('a KB with a payload .msu installs from it, the others through Windows Update', async () => {
  const calls: string[] = [];
  const result = await installWithPayload(
    primitives({
      calls,
      listPayload: async () => ['windows10.0-kb5040437-x64.msu', 'windows10.0-kb5041160-x64.msu'],
      installedKbs: async () => ['KB5041160'],
    }),
    ['KB5040437', 'KB890830', 'KB5041160'],
  );
  assert.deepEqual(calls, ['online KB890830', 'msu windows10.0-kb5040437-x64.msu']);
  assert.deepEqual(result.installed, ['KB890830', 'KB5040437']);
  assert.equal(result.rebootRequired, true);
  assert.equal(result.failed.length, 1);
  assert.equal(result.failed[0]!.kb, 'KB5041160');
  assert.match(result.failed[0]!.error, /not found by the search/);

  const failing = await installWithPayload(
    primitives({
      listPayload: async () => ['windows10.0-kb5040437-x64.msu'],
      installMsu: async () => {
        throw new Error('dism.exe … failed with 0x800F081E (CBS_E_NOT_APPLICABLE: …)');
      },
    }),
    ['KB5040437'],
  );
  assert.deepEqual(failing.installed, []);
  assert.match(failing.failed[0]!.error, /0x800F081E/);
});

test('WindowsHostOS unpacks the .msu with wusa.exe and adds each .cab with dism.exe, then cleans up', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'winfleet-msu-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const payloadDir = join(root, 'payload');
  await mkdir(payloadDir);
  await writeFile(join(payloadDir, 'windows10.0-kb5040437-x64.msu'), 'msu');
  const runs: string[][] = [];
  const host = new WindowsHostOS({
    systemRoot: 'C:\\Windows',
    payloadDir,
    run: async (file, args) => {
      runs.push([file, ...args]);
      if (file.endsWith('powershell.exe')) {
        const script = decodePowerShellArgs(args)!;
        if (script.includes('Get-HotFix')) return { exitCode: 0, stdout: '[]', stderr: '' };
        if (script.includes('CreateUpdateSearcher')) {
          return {
            exitCode: 0,
            stdout: JSON.stringify({
              ok: false,
              step: 'search',
              hresult: '0x8024402C',
              message: 'x',
            }),
            stderr: '',
          };
        }
      }
      if (file.endsWith('wusa.exe')) {
        const dir = args[1]!.slice('/extract:'.length);
        for (const name of ['WSUSSCAN.cab', 'Windows10.0-KB5040437-x64.cab', 'a.xml']) {
          await writeFile(join(dir, name), '');
        }
        return { exitCode: 0, stdout: '', stderr: '' };
      }
      if (file.endsWith('Dism.exe')) return { exitCode: 3010, stdout: '', stderr: '' };
      throw new Error(`unexpected ${file}`);
    },
  });
  assert.deepEqual(
    (await host.searchUpdates()).map((u) => u.kb),
    ['KB5040437'],
    'air-gapped: the payload’s update',
  );
  runs.length = 0;
  const result = await host.installUpdates(['KB5040437']);
  assert.deepEqual(result, { installed: ['KB5040437'], failed: [], rebootRequired: true });
  const scratch = join(root, 'msu-KB5040437');
  assert.deepEqual(
    runs.filter((r) => !r[0]!.endsWith('powershell.exe')),
    [
      [
        'C:\\Windows\\System32\\wusa.exe',
        join(payloadDir, 'windows10.0-kb5040437-x64.msu'),
        `/extract:${scratch}`,
      ],
      [
        'C:\\Windows\\System32\\Dism.exe',
        '/online',
        '/add-package',
        `/packagepath:${join(scratch, 'Windows10.0-KB5040437-x64.cab')}`,
        '/quiet',
        '/norestart',
      ],
    ],
  );
  assert.deepEqual((await readdir(root)).sort(), ['payload'], 'the scratch directory is removed');
});
