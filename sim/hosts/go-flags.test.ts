import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type GoFlagKind, parseGoFlags } from './go-flags.ts';

const known = new Map<string, GoFlagKind>([
  ['kube-subnet-mgr', 'bool'],
  ['iface', 'strings'],
  ['subnet-file', 'string'],
  ['healthz-port', 'int'],
]);

test('one or two dashes, name=value or name value, a bare bool, repeated values kept in order', () => {
  const parsed = parseGoFlags(known, [
    '--kube-subnet-mgr',
    '-iface=10.0.0.5',
    '--iface',
    'Ethernet',
    '-subnet-file',
    'C:\\run\\flannel\\subnet.env',
    '--healthz-port=0x10',
    'rest',
    '--iface=ignored',
  ]);
  assert.equal(parsed.values.get('kube-subnet-mgr'), 'true');
  assert.deepEqual(parsed.all.get('iface'), ['10.0.0.5', 'Ethernet']);
  assert.equal(parsed.values.get('subnet-file'), 'C:\\run\\flannel\\subnet.env');
  assert.equal(parsed.values.get('healthz-port'), '0x10');
  assert.deepEqual(parsed.rest, ['rest', '--iface=ignored'], 'parsing stops at the first non-flag');
  assert.deepEqual(parseGoFlags(known, ['--', '-x']).rest, ['-x']);
  assert.equal(
    parseGoFlags(known, ['-kube-subnet-mgr=false']).values.get('kube-subnet-mgr'),
    'false',
  );
});

test('Go’s messages for an unknown flag, a missing value, a bad bool or int and bad syntax', () => {
  const fails = (argv: string[], message: string) =>
    assert.throws(() => parseGoFlags(known, argv), { name: 'GoFlagError', message });
  fails(['--kube-subnet-manager'], 'flag provided but not defined: -kube-subnet-manager');
  fails(['--iface'], 'flag needs an argument: -iface');
  fails(['--kube-subnet-mgr=yes'], 'invalid boolean value "yes" for -kube-subnet-mgr: parse error');
  fails(['--healthz-port=ten'], 'invalid value "ten" for flag -healthz-port: parse error');
  fails(['---iface=x'], 'bad flag syntax: ---iface=x');
  fails(['-=x'], 'bad flag syntax: -=x');
});
