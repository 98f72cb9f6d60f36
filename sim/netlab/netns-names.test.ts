/** Namespace names: made and read back, and the labels and names that are refused. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkLabel, netnsName, parseNetnsName } from './netns-names.ts';

test('a name carries its owner pid, lab and label, and reads back', () => {
  const name = netnsName({ ownerPid: 4242, lab: 3, label: 'lnx1-p1' });
  assert.equal(name, 'wfnl-4242-3-lnx1-p1');
  assert.deepEqual(parseNetnsName(name), { ownerPid: 4242, lab: 3, label: 'lnx1-p1' });
});

test('labels: lowercase letters, digits and inner dashes, at most 24', () => {
  for (const ok of ['lan', 'a', 'lnx1', 'win1-p12', 'x'.repeat(24)]) checkLabel(ok);
  for (const bad of ['', 'LAN', '-lan', 'lan-', 'a_b', 'a.b', 'x'.repeat(25)])
    assert.throws(() => checkLabel(bad), /netns label/, bad);
  assert.throws(() => netnsName({ ownerPid: 0, lab: 0, label: 'lan' }), /owner pid 0/);
  assert.throws(() => netnsName({ ownerPid: 1, lab: -1, label: 'lan' }), /lab number -1/);
});

test('names of others are not ours to sweep', () => {
  for (const other of [
    'wfnl-scratch-a',
    'cni-1234',
    'wfnl-0-1-lan',
    'wfnl-12-x-lan',
    'wfnl-12-1-',
    'wfnl-12-1-LAN',
  ])
    assert.equal(parseNetnsName(other), undefined, other);
});
