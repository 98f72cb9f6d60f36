import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import {
  defenderThreatsScript,
  maxResourceLength,
  maxThreats,
  parseDefenderThreatsOutput,
} from './defender.ts';

const threat = (over: Record<string, unknown> = {}) => ({
  id: '2147519003',
  name: 'Virus:DOS/EICAR_Test_File',
  severityId: 5,
  statusId: 1,
  detectedAt: 1795420800000,
  resources: ['file:_C:\\Users\\Public\\eicar.com'],
  ...over,
});
const out = (threats: unknown[], available = true) =>
  JSON.stringify({ ok: true, available, threats });

test('the script lists the active detections (Get-MpThreatDetection), named from the history (Get-MpThreat), bounded, and parses as PowerShell', async () => {
  const script = defenderThreatsScript();
  assert.match(script, /Get-Command -Name 'Get-MpThreatDetection'/);
  assert.match(script, /\$detections = @\(Get-MpThreatDetection -ErrorAction Stop\)/);
  assert.match(script, /\$history = @\(Get-MpThreat -ErrorAction Stop\)/);
  assert.match(script, /\$activeStatuses = @\(0, 1, 102, 103, 104, 105, 106, 107\)/);
  assert.match(script, /\$activeStatuses -contains \[int\]\$_\.ThreatStatusID/);
  assert.match(
    script,
    /\[DateTimeOffset\]::new\(\$d\.InitialDetectionTime\)\.ToUnixTimeMilliseconds\(\)/,
  );
  assert.match(script, new RegExp(`\\$active \\| Select-Object -First ${maxThreats}\\)`));
  assert.match(script, /\$t\.ThreatName/);
  assert.match(script, /\$t\.SeverityID/);
  await assertValidPowerShell(script, 'defender threats');
});

test('parses threats, no threats, and a host without Defender', () => {
  assert.deepEqual(parseDefenderThreatsOutput(out([threat()])), {
    available: true,
    threats: [
      {
        id: '2147519003',
        name: 'Virus:DOS/EICAR_Test_File',
        severity: 'Severe',
        status: 'Detected',
        detectedAt: 1795420800000,
        resources: ['file:_C:\\Users\\Public\\eicar.com'],
      },
    ],
  });
  assert.equal(
    parseDefenderThreatsOutput(out([threat({ name: '', severityId: 0, statusId: 103 })]))
      .threats[0]!.status,
    'QuarantineFailed',
    'a detection the history does not name',
  );
  assert.deepEqual(parseDefenderThreatsOutput(out([])), { available: true, threats: [] });
  assert.deepEqual(parseDefenderThreatsOutput(`WARNING: x\r\n${out([], false)}`), {
    available: false,
    threats: [],
  });
  assert.equal(
    parseDefenderThreatsOutput(out([threat({ name: 'Trojan:Win32/Wacatac.B!ml', severityId: 0 })]))
      .threats[0]!.severity,
    'Unknown',
  );
});

test('a failed Get-MpThreat is an error naming the fix', () => {
  assert.throws(
    () =>
      parseDefenderThreatsOutput(JSON.stringify({ ok: false, message: 'RPC failed\n0x800106ba' })),
    /Cannot read the Microsoft Defender detections \(Get-MpThreatDetection\): RPC failed 0x800106ba; check that the Windows Defender service \(WinDefend\) runs/,
  );
});

test('attacker side: the structure is refused unless exactly the script’s', () => {
  const refused: [string, RegExp][] = [
    ['', /printed nothing/],
    ['not json', /expected JSON/],
    [
      JSON.stringify({ ok: true, available: true, threats: [], extra: 1 }),
      /unexpected|expected ok, available, threats/,
    ],
    [JSON.stringify({ ok: true, available: true }), /expected ok, available, threats/],
    [out([threat({ id: '12a' })]), /threats\[0\]\.id is not a ThreatID/],
    [out([threat({ id: 7 })]), /threats\[0\]\.id is not a ThreatID/],
    [
      out([threat({ name: 'Evil name with spaces' })]),
      /threats\[0\]\.name is not a Defender threat name/,
    ],
    [out([threat({ name: 'X\u202Eexe.txt' })]), /name is not a Defender threat name/],
    [out([threat({ name: 'A'.repeat(129) })]), /name is not a Defender threat name/],
    [out([threat({ severityId: 3 })]), /severityId is not 0, 1, 2, 4 or 5/],
    [out([threat({ statusId: 3 })]), /statusId is not an active ThreatStatusID/],
    [out([threat({ statusId: '1' })]), /statusId is not an active ThreatStatusID/],
    [out([threat({ detectedAt: -1 })]), /detectedAt is not a time/],
    [out([threat({ detectedAt: 1.5 })]), /detectedAt is not a time/],
    [out([threat({ detectedAt: '2026-11-23' })]), /detectedAt is not a time/],
    [out([threat({ resources: 'x' })]), /resources is not a list of strings/],
    [out([threat({ resources: [1] })]), /resources is not a list of strings/],
    [out([threat({ resources: ['a', 'b', 'c', 'd', 'e'] })]), /more than 4 resources/],
    [out([{ ...threat(), more: 1 }]), /threats\[0\] has the keys/],
    [out(Array.from({ length: maxThreats + 1 }, () => threat())), /more than 32 threats/],
    [out([threat()], false), /threats listed while Defender is not available/],
  ];
  for (const [text, message] of refused) {
    assert.throws(() => parseDefenderThreatsOutput(text), message, text.slice(0, 80));
  }
});

test('attacker side: a resource path is cleaned and cut before it reaches an Event', () => {
  const path = `file:_C:\\x\n\u202Eevil\u0007${'a'.repeat(400)}`;
  const [t] = parseDefenderThreatsOutput(out([threat({ resources: [path, '\n\t'] })])).threats;
  assert.equal(t!.resources.length, 1, 'a resource with nothing printable is dropped');
  const r = t!.resources[0]!;
  assert.equal(r.length, maxResourceLength);
  assert.ok(!/[\p{Cc}\u202E]/u.test(r), r);
  assert.ok(r.startsWith('file:_C:\\x evil'));
  assert.ok(r.endsWith('…'));
});
