/** ping's output (iputils 20221126, captured in a namespace) read back; /proc/net/snmp read strictly. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePingOutput } from './ping.ts';
import { parseProcNetSnmp, snmpCounter } from './proc-net-snmp.ts';

test('replies, loss, and a packet refused locally for its size with DF set', () => {
  const ok = parsePingOutput(
    'PING 127.0.0.1 (127.0.0.1) 56(84) bytes of data.\n64 bytes from 127.0.0.1: icmp_seq=1 ttl=64 time=0.291 ms\n64 bytes from 127.0.0.1: icmp_seq=2 ttl=64 time=0.033 ms\n\n--- 127.0.0.1 ping statistics ---\n2 packets transmitted, 2 received, 0% packet loss, time 203ms\nrtt min/avg/max/mdev = 0.033/0.162/0.291/0.129 ms\n',
    '',
  );
  assert.deepEqual([ok.transmitted, ok.received, ok.errors, ok.localMtu], [2, 2, 0, undefined]);
  const lost = parsePingOutput(
    'PING 10.9.0.9 (10.9.0.9) 56(84) bytes of data.\n\n--- 10.9.0.9 ping statistics ---\n10 packets transmitted, 0 received, 100% packet loss, time 1836ms\n\n',
    '',
  );
  assert.deepEqual([lost.transmitted, lost.received, lost.errors], [10, 0, 0]);
  const tooBig = parsePingOutput(
    'PING 10.9.0.9 (10.9.0.9) 1423(1451) bytes of data.\n\n--- 10.9.0.9 ping statistics ---\n1 packets transmitted, 0 received, +1 errors, 100% packet loss, time 0ms\n\n',
    'ping: local error: message too long, mtu=1450\n',
  );
  assert.deepEqual(
    [tooBig.transmitted, tooBig.received, tooBig.errors, tooBig.localMtu],
    [1, 0, 1, 1450],
  );
  assert.throws(
    () => parsePingOutput('', 'ping: connect: Network is unreachable\n'),
    /no summary line/,
  );
});

test('/proc/net/snmp: counters by protocol and name', () => {
  const text =
    'Ip: Forwarding DefaultTTL FragOKs FragCreates\nIp: 1 64 0 0\nUdp: InDatagrams NoPorts OutDatagrams\nUdp: 12 0 14\n';
  const c = parseProcNetSnmp(text);
  assert.equal(snmpCounter(c, 'Ip', 'FragCreates'), 0);
  assert.equal(snmpCounter(c, 'Udp', 'OutDatagrams'), 14);
  assert.throws(() => snmpCounter(c, 'Ip', 'Nope'), /no Ip Nope/);
  assert.throws(() => parseProcNetSnmp('Ip: A B\n'), /pairs of header and value lines/);
  assert.throws(() => parseProcNetSnmp('Ip: A B\nIp: 1\n'), /2 names and 1 values/);
  assert.throws(() => parseProcNetSnmp('Ip: A\nUdp: 1\n'), /do not start with one protocol/);
  assert.throws(() => parseProcNetSnmp('Ip: A\nIp: x\n'), /Ip A is x, not a number/);
});
