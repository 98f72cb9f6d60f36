import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  cidrContains,
  cidrCovers,
  formatIpv4,
  formatIpv4Cidr,
  lastAddress,
  parseIpv4,
  parseIpv4Cidr,
} from './ipv4-cidr.ts';

test('IPv4 addresses parse strictly, as Go does', () => {
  assert.equal(parseIpv4('10.244.1.2'), 10 * 2 ** 24 + 244 * 2 ** 16 + 1 * 2 ** 8 + 2);
  assert.equal(parseIpv4('255.255.255.255'), 2 ** 32 - 1);
  assert.equal(parseIpv4('0.0.0.0'), 0);
  for (const bad of [
    '',
    '10.244.1',
    '10.244.1.2.3',
    '10.244.01.2',
    '10.244.1.256',
    ' 10.244.1.2',
    '10.244.1.2\n',
    '10.244.1.-1',
    '10.244.1.0x1',
    '::1',
  ]) {
    assert.equal(parseIpv4(bad), undefined, JSON.stringify(bad));
  }
});

test('an address survives formatting and parsing', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (n) => {
      assert.equal(parseIpv4(formatIpv4(n)), n);
    }),
  );
});

test('CIDRs parse strictly and know their network, last address and what they hold', () => {
  const node = parseIpv4Cidr('10.244.3.0/24')!;
  assert.equal(formatIpv4Cidr(node), '10.244.3.0/24');
  assert.equal(formatIpv4(lastAddress(node)), '10.244.3.255');
  assert.ok(cidrContains(node, parseIpv4('10.244.3.254')!));
  assert.ok(!cidrContains(node, parseIpv4('10.244.4.0')!));
  const cluster = parseIpv4Cidr('10.244.0.0/16')!;
  assert.ok(cidrCovers(cluster, node));
  assert.ok(!cidrCovers(node, cluster));
  assert.ok(!cidrCovers(cluster, parseIpv4Cidr('10.245.0.0/24')!));
  // Host bits set: the address is kept, the network is cleared.
  const hostBits = parseIpv4Cidr('10.244.3.7/24')!;
  assert.notEqual(hostBits.address, hostBits.network);
  assert.equal(formatIpv4Cidr(hostBits), '10.244.3.0/24');
  assert.equal(formatIpv4Cidr(parseIpv4Cidr('0.0.0.0/0')!), '0.0.0.0/0');
  for (const bad of ['10.244.0.0', '10.244.0.0/33', '10.244.0.0/024', '10.244.0.0/', '/24']) {
    assert.equal(parseIpv4Cidr(bad), undefined, bad);
  }
});
