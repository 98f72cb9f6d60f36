/** The fault request parser: exactly a host, a known fault and its one bounded argument. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { commandLineRequest } from './fault-cli.ts';
import { FaultRequestError, parseFaultRequest } from './fault-requests.ts';

test('each fault parses with its argument, host names folded to lower case', () => {
  assert.deepEqual(
    parseFaultRequest({ host: 'SIMWIN-10', fault: 'service-down', service: 'Kubelet' }),
    {
      host: 'simwin-10',
      fault: 'service-down',
      service: 'kubelet',
    },
  );
  assert.deepEqual(
    parseFaultRequest({ host: 'simwin-11', fault: 'crash-loop', service: 'containerd' }),
    {
      host: 'simwin-11',
      fault: 'crash-loop',
      service: 'containerd',
    },
  );
  assert.deepEqual(parseFaultRequest({ host: 'simwin-10', fault: 'clock-skew', seconds: -86400 }), {
    host: 'simwin-10',
    fault: 'clock-skew',
    seconds: -86400,
  });
  for (const fault of ['hns-delete', 'disk-full', 'unreachable', 'clear']) {
    assert.deepEqual(parseFaultRequest({ host: 'simwin-10', fault }), { host: 'simwin-10', fault });
  }
});

test('refusals name the field and the fix', () => {
  const refused = (value: unknown, pattern: RegExp) =>
    assert.throws(
      () => parseFaultRequest(value),
      (e: Error) => {
        assert.ok(e instanceof FaultRequestError, e.message);
        assert.match(e.message, pattern);
        return true;
      },
    );
  refused([], /body must be a JSON object; send \{/);
  refused(null, /body must be a JSON object/);
  refused({ fault: 'clear' }, /^host \(missing\) is not a host name; give a lab host/);
  refused({ host: 'simwin-10; rm -rf /', fault: 'clear' }, /^host "simwin-10; rm -rf \/" is not/);
  refused({ host: 'a'.repeat(16), fault: 'clear' }, /^host "a{16}" is not a host name/);
  refused(
    { host: 'simwin-10', fault: 'reboot' },
    /^fault "reboot" is not known; use one of service-down, /,
  );
  refused({ host: 'simwin-10', fault: 'toString' }, /^fault "toString" is not known/);
  refused(
    { host: 'simwin-10', fault: 'service-down' },
    /^service \(missing\) is not one service-down can target; give service-down one of kubelet, containerd, kube-proxy, csi-proxy, windows_exporter, winfleet-agent$/,
  );
  refused(
    { host: 'simwin-10', fault: 'crash-loop', service: 'kube-proxy' },
    /^service "kube-proxy" is not one crash-loop can target; give crash-loop one of kubelet, containerd$/,
  );
  refused(
    { host: 'simwin-10', fault: 'service-down', service: 'sshd' },
    /^service "sshd" is not one/,
  );
  refused(
    { host: 'simwin-10', fault: 'clock-skew' },
    /^seconds \(missing\) is not a whole number; give the clock offset/,
  );
  refused(
    { host: 'simwin-10', fault: 'clock-skew', seconds: '300' },
    /^seconds "300" is not a whole number/,
  );
  refused(
    { host: 'simwin-10', fault: 'clock-skew', seconds: 1.5 },
    /^seconds 1.5 is not a whole number/,
  );
  refused(
    { host: 'simwin-10', fault: 'clock-skew', seconds: 86401 },
    /^seconds 86401 is out of range; give .* from -86400 to 86400/,
  );
  refused(
    { host: 'simwin-10', fault: 'clock-skew', seconds: -1e300 },
    /^seconds -1e\+300 is not a whole number/,
  );
  refused(
    { host: 'simwin-10', fault: 'disk-full', service: 'kubelet' },
    /^Field "service" is not expected with fault disk-full; send only host, fault$/,
  );
  refused(
    JSON.parse('{"host":"simwin-10","fault":"clear","__proto__":{"x":1}}'),
    /^Field "__proto__" is not expected/,
  );
  refused(
    { host: 'simwin-10', fault: 'clock-skew', seconds: 5, service: 'kubelet' },
    /^Field "service" is not expected with fault clock-skew; send only host, fault, seconds$/,
  );
});

test('the command line: seconds are digits with a sign; arguments only where a fault takes one', () => {
  assert.deepEqual(commandLineRequest('simwin-10', 'clock-skew', '-300'), {
    host: 'simwin-10',
    fault: 'clock-skew',
    seconds: -300,
  });
  assert.deepEqual(commandLineRequest('simwin-10', 'clock-skew', '+60'), {
    host: 'simwin-10',
    fault: 'clock-skew',
    seconds: 60,
  });
  for (const bad of ['5m', '0x10', '1e3', ' 60', '1.0', '', '9999999']) {
    assert.throws(
      () => commandLineRequest('simwin-10', 'clock-skew', bad),
      /^FaultRequestError: seconds .* is not a whole number/,
      bad,
    );
  }
  assert.throws(
    () => commandLineRequest('simwin-10', 'clock-skew', '100000'),
    /seconds 100000 is out of range/,
  );
  assert.throws(
    () => commandLineRequest('simwin-10', undefined, undefined),
    /fault is missing; give one of service-down/,
  );
  assert.throws(
    () => commandLineRequest('simwin-10', 'disk-full', 'now'),
    /disk-full takes no argument; drop "now"/,
  );
  assert.throws(
    () => commandLineRequest('simwin-10', 'crash-loop', undefined),
    /service is missing; give crash-loop one of kubelet/,
  );
  assert.throws(
    () => commandLineRequest('simwin-10', 'clock-skew', undefined),
    /seconds is missing; give clock-skew the clock offset/,
  );
});
