import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import {
  diagnosticItems,
  diagnosticTextLimit,
  readDiagnostic,
  remoteCommand,
  remoteScript,
} from '../../hostaccess/remote-scripts.ts';

test('readDiagnostic takes exactly what the diagnostic script prints', () => {
  assert.deepEqual(
    readDiagnostic({ item: 'hns', length: 5, truncated: false, text: 'hello' }, 'hns'),
    { item: 'hns', length: 5, truncated: false, text: 'hello' },
  );
  assert.deepEqual(
    readDiagnostic(
      { item: 'log-kubelet', length: 99, truncated: true, text: 'tail' },
      'log-kubelet',
    ),
    { item: 'log-kubelet', length: 99, truncated: true, text: 'tail' },
  );
});

test('readDiagnostic refuses anything else', () => {
  const ok = { item: 'hns', length: 2, truncated: false, text: 'ab' };
  const bad: [unknown, RegExp][] = [
    [null, /expected a JSON object/],
    [[ok], /expected a JSON object/],
    ['text', /expected a JSON object/],
    [{ ...ok, extra: 1 }, /expected the fields/],
    [{ item: 'hns', length: 2, text: 'ab' }, /expected the fields/],
    [{ ...ok, item: 'routes' }, /answered for item "routes"/],
    [{ ...ok, text: 5 }, /"text" is not a string/],
    [{ ...ok, truncated: 'no' }, /"truncated"/],
    [{ ...ok, length: -1 }, /"length"/],
    [{ ...ok, length: 2.5 }, /"length"/],
    [{ ...ok, length: 3 }, /does not match/],
    [{ ...ok, truncated: true }, /does not match/],
    [
      {
        item: 'hns',
        length: diagnosticTextLimit + 2,
        truncated: true,
        text: 'x'.repeat(diagnosticTextLimit + 1),
      },
      /longer than the limit/,
    ],
  ];
  for (const [value, why] of bad)
    assert.throws(() => readDiagnostic(value, 'hns'), why, JSON.stringify(value)?.slice(0, 80));
});

test('each item is its own short, valid script; the arguments are data', async () => {
  for (const item of diagnosticItems) {
    const script = remoteScript('diagnostic', { item, hours: 6 });
    await assertValidPowerShell(script, `diagnostic ${item}`);
    // Fits cmd.exe's command line (remoteCommand throws otherwise).
    assert.ok(remoteCommand('diagnostic', { item, hours: 6 }).length <= 8191);
    assert.ok(!script.includes('bootstrap.json'), 'never reads the bootstrap configuration');
    assert.ok(!/\\kubeconfig'|\.kubeconfig'/.test(script), 'never reads a kubeconfig');
  }
  assert.match(remoteScript('diagnostic', { item: 'services', hours: 1 }), /& sc\.exe qc \$name/);
  assert.match(remoteScript('diagnostic', { item: 'hns', hours: 1 }), /& hnsdiag\.exe list all -d/);
  assert.match(
    remoteScript('diagnostic', { item: 'events-hns', hours: 1 }),
    /LogName = 'Microsoft-Windows-Host-Network-Service-Admin'/,
  );
  assert.throws(
    () =>
      remoteScript('diagnostic', { item: "x'; Remove-Item C:\\ -Recurse; '" as never, hours: 1 }),
    /Cannot make a diagnostic script for item/,
  );
  assert.throws(() => remoteScript('diagnostic', { item: 'toString' as never, hours: 1 }), {
    code: 'WF_INVARIANT',
  });
});
