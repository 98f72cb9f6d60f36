import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { decodePowerShellArgs, powerShellArgs } from '../../powershell/powershell.ts';
import { WindowsHostOS } from './windows-host-os.ts';
import {
  describeHresult,
  installUpdatesScript,
  parseInstallUpdatesOutput,
  parseRebootPendingOutput,
  parseSearchUpdatesOutput,
  rebootPendingScript,
  reportedUpdates,
  searchUpdatesScript,
} from './windows-update.ts';

test('the scripts use the WUA COM API as documented and parse as PowerShell', async () => {
  const search = searchUpdatesScript();
  assert.match(search, /New-Object -ComObject 'Microsoft\.Update\.Session'/);
  assert.match(search, /\$session\.CreateUpdateSearcher\(\)/);
  assert.match(search, /\.Search\('IsInstalled=0 and Type=''Software'' and IsHidden=0'\)/);
  assert.match(search, /\$u\.KBArticleIDs/);
  assert.match(search, /\$u\.InstallationBehavior\.RebootBehavior/);
  await assertValidPowerShell(search, 'search');

  const install = installUpdatesScript(['KB5040437', 'KB5041160']);
  assert.match(install, /\$wanted = @\('5040437', '5041160'\)/);
  for (const call of [
    /\$u\.AcceptEula\(\)/,
    /\$session\.CreateUpdateDownloader\(\)/,
    /\$downloader\.Download\(\)/,
    /\$session\.CreateUpdateInstaller\(\)/,
    /\$installer\.Install\(\)/,
    /\$install\.GetUpdateResult\(\$i\)/,
    /'0x\{0:X8\}' -f/,
  ]) {
    assert.match(install, call);
  }
  await assertValidPowerShell(install, 'install');
  powerShellArgs(install); // fits a command line

  const pending = rebootPendingScript();
  assert.match(
    pending,
    /Test-Path -LiteralPath 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Component Based Servicing\\RebootPending'/,
  );
  assert.match(
    pending,
    /Test-Path -LiteralPath 'HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\WindowsUpdate\\Auto Update\\RebootRequired'/,
  );
  assert.doesNotMatch(
    pending,
    /PendingFileRenameOperations|Session Manager/,
    'housekeeping (antivirus, installers) is no reboot servicing waits for',
  );
  await assertValidPowerShell(pending, 'reboot pending');
});

test('a KB enters the install script only as digits', () => {
  for (const kb of ["KB5040437'; Restart-Computer; '", 'KB1', '5040437', 'KB5040437\n']) {
    assert.throws(() => installUpdatesScript([kb]), /expected a KB number like "KB5040437"/);
  }
  assert.throws(() => installUpdatesScript([]), /give 1 to 200 KB numbers/);
});

const searchOutput = JSON.stringify({
  ok: true,
  updates: [
    {
      kbs: ['5040437'],
      title:
        '2024-07 Cumulative Update for Microsoft server operating system version 21H2 for x64-based Systems (KB5040437)',
      categories: ['Microsoft Server operating system-21H2', 'Security Updates'],
      rebootBehavior: 1,
    },
    {
      kbs: ['890830'],
      title: 'Windows Malicious Software Removal Tool x64',
      categories: ['Update Rollups'],
      rebootBehavior: 0,
    },
    { kbs: [], title: 'A driver without a KB', categories: ['Drivers'], rebootBehavior: 2 },
  ],
});

test('reads a search and names each update by its KB', () => {
  const updates = parseSearchUpdatesOutput(`\r\n${searchOutput}\r\n`);
  assert.equal(updates.length, 3);
  assert.deepEqual(reportedUpdates(updates), [
    {
      kb: 'KB5040437',
      title:
        '2024-07 Cumulative Update for Microsoft server operating system version 21H2 for x64-based Systems (KB5040437)',
      categories: ['Microsoft Server operating system-21H2', 'Security Updates'],
      rebootRequired: true,
    },
    {
      kb: 'KB890830',
      title: 'Windows Malicious Software Removal Tool x64',
      categories: ['Update Rollups'],
      rebootRequired: false,
    },
  ]);
  assert.deepEqual(parseSearchUpdatesOutput('{"ok":true,"updates":[]}'), []);
});

test('refuses a search answer of another shape', () => {
  const bad = (value: unknown, why: RegExp) =>
    assert.throws(() => parseSearchUpdatesOutput(JSON.stringify(value)), why);
  bad({ ok: true }, /expected the keys ok, updates; missing updates/);
  bad({ ok: true, updates: {} }, /updates is not a list/);
  bad({ ok: 'yes', updates: [] }, /"ok" is not true or false/);
  bad(
    { ok: true, updates: [{ kbs: '5040437', title: 't', categories: [], rebootBehavior: 0 }] },
    /updates\[0\]\.kbs: expected a list of strings/,
  );
  bad(
    { ok: true, updates: [{ kbs: [], title: 't', categories: [], rebootBehavior: 3 }] },
    /rebootBehavior is 3, expected 0, 1 or 2/,
  );
  bad(
    { ok: true, updates: [{ kbs: [], title: 't', categories: [], rebootBehavior: 0, x: 1 }] },
    /unexpected x/,
  );
  assert.throws(() => parseSearchUpdatesOutput(''), /PowerShell printed nothing/);
});

test('a WUA error names its HRESULT, and E_ACCESSDENIED says WUA must run locally', () => {
  const denied = JSON.stringify({
    ok: false,
    step: 'download',
    hresult: '0x80070005',
    message: 'Access is denied. (Exception from HRESULT: 0x80070005 (E_ACCESSDENIED))',
  });
  assert.throws(
    () => parseInstallUpdatesOutput(denied, ['KB5040437']),
    (error: Error & { code?: string }) => {
      assert.equal(error.code, 'WF_WINDOWS_COMMAND_FAILED');
      assert.match(
        error.message,
        /^Cannot install Windows updates: the Windows Update Agent's download failed with 0x80070005 \(E_ACCESSDENIED: /,
      );
      assert.match(error.message, /remote session \(SSH, WinRM: Win32-OpenSSH #2083, #2310\)/);
      assert.match(error.message, /do not run it over SSH/);
      return true;
    },
  );
  assert.throws(
    () =>
      parseSearchUpdatesOutput(
        JSON.stringify({ ok: false, step: 'search', hresult: '0x8024402C', message: 'x' }),
      ),
    /search failed with 0x8024402C \(WU_E_PT_WINHTTP_NAME_NOT_RESOLVED: .*air-gapped/,
  );
  assert.throws(
    () =>
      parseSearchUpdatesOutput(
        JSON.stringify({ ok: false, step: 'search', hresult: '-2147024891', message: 'x' }),
      ),
    /"-2147024891" is not an HRESULT/,
  );
  assert.equal(describeHresult('0x80041234', 'Some\r\nerror'), '0x80041234 (Some error)');
});

test('reads an install: installed, failed per update, not found, reboot needed', () => {
  const out = JSON.stringify({
    ok: true,
    results: [
      {
        kb: '5041160',
        step: 'download',
        resultCode: 4,
        hresult: '0x80246008',
        rebootRequired: false,
      },
      {
        kb: '5040437',
        step: 'install',
        resultCode: 2,
        hresult: '0x00000000',
        rebootRequired: true,
      },
      {
        kb: '890830',
        step: 'install',
        resultCode: 4,
        hresult: '0x80240022',
        rebootRequired: false,
      },
    ],
    rebootRequired: false,
    notFound: ['5039227'],
  });
  const result = parseInstallUpdatesOutput(out, [
    'KB5040437',
    'KB5041160',
    'KB890830',
    'KB5039227',
  ]);
  assert.deepEqual(result.installed, ['KB5040437']);
  assert.equal(result.rebootRequired, true, 'one update needs a reboot');
  assert.deepEqual(
    result.failed.map((f) => f.kb),
    ['KB5041160', 'KB890830', 'KB5039227'],
  );
  assert.match(result.failed[0]!.error, /^download failed: 0x80246008$/);
  assert.match(result.failed[1]!.error, /^install failed: 0x80240022 \(WU_E_ALL_UPDATES_FAILED/);
  assert.match(result.failed[2]!.error, /not found by the search .* 0x80240024 \(WU_E_NO_UPDATE/);
});

test('refuses an install answer naming a KB that was not asked for', () => {
  const out = JSON.stringify({
    ok: true,
    results: [
      {
        kb: '5040437',
        step: 'install',
        resultCode: 2,
        hresult: '0x00000000',
        rebootRequired: false,
      },
    ],
    rebootRequired: false,
    notFound: [],
  });
  assert.throws(
    () => parseInstallUpdatesOutput(out, ['KB5041160']),
    /results\[0\]\.kb "5040437" was not asked for/,
  );
  assert.throws(
    () => parseInstallUpdatesOutput(out.replace('"resultCode":2', '"resultCode":9'), ['KB5040437']),
    /resultCode is not an OperationResultCode/,
  );
});

test('reads the reboot-pending keys strictly', () => {
  assert.deepEqual(
    parseRebootPendingOutput('{"componentBasedServicing":true,"windowsUpdate":false}'),
    {
      componentBasedServicing: true,
      windowsUpdate: false,
    },
  );
  assert.throws(
    () => parseRebootPendingOutput('{"componentBasedServicing":1,"windowsUpdate":false}'),
    /componentBasedServicing is not a boolean/,
  );
  assert.throws(
    () => parseRebootPendingOutput('{"componentBasedServicing":true}'),
    /missing windowsUpdate/,
  );
  assert.throws(
    () =>
      parseRebootPendingOutput(
        '{"componentBasedServicing":false,"windowsUpdate":false,"pendingFileRename":true}',
      ),
    /unexpected pendingFileRename/,
  );
});

test('WindowsHostOS runs the scripts through PowerShell and reads their answers', async () => {
  const scripts: string[] = [];
  const answers = [
    searchOutput,
    JSON.stringify({
      ok: true,
      results: [
        {
          kb: '5040437',
          step: 'install',
          resultCode: 2,
          hresult: '0x00000000',
          rebootRequired: true,
        },
      ],
      rebootRequired: true,
      notFound: [],
    }),
    '{"componentBasedServicing":false,"windowsUpdate":true}',
    JSON.stringify({
      ok: false,
      step: 'download',
      hresult: '0x80070005',
      message: 'Access is denied.',
    }),
  ];
  const host = new WindowsHostOS({
    systemRoot: 'C:\\Windows',
    run: async (file, args) => {
      assert.equal(file, 'C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe');
      scripts.push(decodePowerShellArgs(args)!);
      return { exitCode: 0, stdout: answers.shift()!, stderr: '' };
    },
  });
  assert.deepEqual(
    (await host.searchUpdates()).map((u) => u.kb),
    ['KB5040437', 'KB890830'],
  );
  assert.deepEqual(await host.installUpdates(['KB5040437']), {
    installed: ['KB5040437'],
    failed: [],
    rebootRequired: true,
  });
  assert.equal(await host.rebootPending(), true, 'WU RebootRequired is enough');
  await assert.rejects(host.installUpdates(['KB5040437']), /0x80070005 \(E_ACCESSDENIED/);
  assert.deepEqual(await host.installUpdates([]), {
    installed: [],
    failed: [],
    rebootRequired: false,
  });
  assert.equal(scripts.length, 4, 'nothing runs for an empty install');
  assert.match(scripts[0]!, /CreateUpdateSearcher/);
  assert.match(scripts[1]!, /CreateUpdateInstaller/);
  assert.match(scripts[2]!, /Auto Update\\RebootRequired/);
});
