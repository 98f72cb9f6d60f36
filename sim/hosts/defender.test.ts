import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDefenderThreatsOutput } from '../../src/agent/windows/defender.ts';
import { SimDefender, threatStatus } from './defender.ts';

const eicar = {
  id: '2147519003',
  name: 'Virus:DOS/EICAR_Test_File',
  severityId: 5,
  resources: ['file:_C:\\Users\\Public\\eicar.com'],
  at: Date.parse('2026-11-20T08:00:00Z'),
};

test('Get-MpThreat is the history; Get-MpThreatDetection the detections with their status', () => {
  const defender = new SimDefender();
  const first = defender.detect(eicar);
  assert.deepEqual(
    defender.getMpThreatDetection().map((d) => d.ThreatStatusID),
    [threatStatus.detected],
  );
  assert.equal(defender.getMpThreat()[0]!.IsActive, true);
  defender.remediate(first);
  assert.deepEqual(
    defender.getMpThreatDetection().map((d) => d.ThreatStatusID),
    [threatStatus.quarantined],
    'a remediated detection stays with its new status',
  );
  assert.equal(defender.getMpThreat()[0]!.IsActive, false);
  defender.clear(first);
  assert.deepEqual(defender.getMpThreatDetection(), [], 'cleared: only in the history');
  assert.deepEqual(
    defender.getMpThreat().map((t) => t.ThreatName),
    ['Virus:DOS/EICAR_Test_File'],
  );
});

test('the agent’s script answer lists the active detections only, each with its detection time', () => {
  const defender = new SimDefender();
  defender.remediate(defender.detect(eicar));
  const again = defender.detect({ ...eicar, at: eicar.at + 3_600_000 });
  const failed = defender.detect({ ...eicar, id: '2147735503', name: 'Trojan:Win32/Wacatac.B!ml' });
  defender.remediate(failed, threatStatus.quarantineFailed);
  const list = parseDefenderThreatsOutput(defender.answerThreatsScript());
  assert.deepEqual(
    list.threats.map((t) => [t.id, t.status, t.detectedAt]),
    [
      ['2147519003', 'Detected', eicar.at + 3_600_000],
      ['2147735503', 'QuarantineFailed', eicar.at],
    ],
  );
  defender.remediate(again);
  defender.installed = false;
  assert.deepEqual(parseDefenderThreatsOutput(defender.answerThreatsScript()), {
    available: false,
    threats: [],
  });
});
