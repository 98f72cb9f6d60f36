import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseFlannelNetConf, vxlanSettings, windowsVxlanProblems } from './flannel-net-conf.ts';

const conf = (backend?: unknown, extra: object = {}) =>
  JSON.stringify({
    Network: '10.244.0.0/16',
    ...(backend === undefined ? {} : { Backend: backend }),
    ...extra,
  });

const parsed = (text: string) => {
  const result = parseFlannelNetConf(text);
  assert.ok(result.ok, JSON.stringify(result));
  return result.conf;
};
const problems = (text: string) => {
  const result = parseFlannelNetConf(text);
  assert.ok(!result.ok, `expected problems for ${text}`);
  return result.problems.join('\n');
};

test('net-conf.json is read as flanneld reads it: type lower-cased, field names without case, no Backend means udp', () => {
  assert.deepEqual(parsed(conf({ Type: 'VXLAN', VNI: 4096, Port: 4789 })), {
    backend: 'vxlan',
    backendAsWritten: 'VXLAN',
    network: '10.244.0.0/16',
    vni: 4096,
    port: 4789,
  });
  assert.equal(parsed(conf({ type: 'vxlan', vni: 4097, port: 4789 })).vni, 4097);
  assert.equal(parsed(conf()).backend, 'udp');
  assert.equal(parsed(conf({ Type: 'host-gw' })).backend, 'host-gw');
  assert.equal(
    parsed('{"network": "10.244.0.0/16", "backend": {"type": "host-gw"}}').backend,
    'host-gw',
  );
});

test('what flanneld refuses is named by field, with what to write', () => {
  assert.match(problems('{not json'), /^\(top level\): not JSON .*write a JSON object/);
  assert.match(problems('[1]'), /must be a JSON object \(it is an array\)/);
  assert.match(
    problems('{"Backend": {"Type": "vxlan"}}'),
    /^Network: missing; write the cluster pod CIDR/,
  );
  assert.match(
    problems(conf({ Type: 'vxlan' }, { Network: 42 })),
    /Network: must be a string \(it is 42, a number\)/,
  );
  assert.match(
    problems(conf({ Type: 'vxlan' }, { Network: '10.244.0.0' })),
    /"10\.244\.0\.0" is not an IPv4 CIDR/,
  );
  assert.match(problems(conf('vxlan')), /^Backend: must be an object \(it is "vxlan", a string\)/);
  assert.match(problems(conf({ VNI: 4096 })), /^Backend\.Type: missing/);
  assert.match(
    problems(conf({ Type: 7 })),
    /Backend\.Type: must be a string \(it is 7, a number\)/,
  );
  assert.match(
    problems(conf({ Type: 'vxlan', VNI: '4096', Port: 4789 })),
    /Backend\.VNI: must be a whole number \(it is "4096", a string\); write e\.g\. "VNI": 4096/,
  );
  assert.match(
    problems(conf({ Type: 'vxlan', VNI: 4096, Port: 4789.5 })),
    /Backend\.Port: must be a whole number/,
  );
  assert.match(problems(conf({ Type: 'vxlan', GBP: 'no' })), /Backend\.GBP: must be true or false/);
  assert.match(
    problems(conf({ Type: 'vxlan' }, { EnableIPv4: false })),
    /EnableIPv4: false .* IPv4 leases only/,
  );
});

test('a field given twice in different case is refused: which one flanneld keeps depends on the order', () => {
  assert.match(
    problems('{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "VNI": 4096, "vni": 1}}'),
    /Backend\.VNI: given 2 times \("VNI", "vni"\)/,
  );
  assert.match(
    problems('{"Network": "10.244.0.0/16", "network": "10.0.0.0/8", "Backend": {"Type": "vxlan"}}'),
    /Network: given 2 times/,
  );
});

test('Windows VXLAN: VNI 4096 to 65535 and port 4789, both written; Linux defaults are refused naming the field', () => {
  assert.deepEqual(
    windowsVxlanProblems(parsed(conf({ Type: 'vxlan', VNI: 4096, Port: 4789 }))),
    [],
  );
  assert.deepEqual(
    windowsVxlanProblems(parsed(conf({ Type: 'vxlan', VNI: 65535, Port: 4789 }))),
    [],
  );
  const defaults = windowsVxlanProblems(parsed(conf({ Type: 'vxlan' })));
  assert.equal(defaults.length, 2);
  assert.match(
    defaults[0]!,
    /^Backend\.VNI is not set: Linux flanneld then uses VNI 1 and Windows flanneld 4096.*write "VNI": 4096$/,
  );
  assert.match(
    defaults[1]!,
    /^Backend\.Port is not set: Linux flanneld then uses UDP 8472 .*write "Port": 4789$/,
  );
  assert.match(
    windowsVxlanProblems(parsed(conf({ Type: 'vxlan', VNI: 1, Port: 8472 }))).join('\n'),
    /Backend\.VNI is 1: flanneld on Windows refuses a VNI below 4096[\s\S]*Backend\.Port is 8472: flanneld on Windows supports only UDP port 4789/,
  );
  assert.match(
    windowsVxlanProblems(parsed(conf({ Type: 'vxlan', VNI: 70000, Port: 4789 })))[0]!,
    /Backend\.VNI is 70000: .*16-bit number/,
  );
  assert.match(
    windowsVxlanProblems(
      parsed(
        conf({
          Type: 'vxlan',
          VNI: 4096,
          Port: 4789,
          DirectRouting: true,
          GBP: true,
          MacPrefix: '0E2A',
        }),
      ),
    ).join('\n'),
    /DirectRouting is true[\s\S]*GBP is true[\s\S]*MacPrefix is "0E2A"/,
  );
  assert.deepEqual(vxlanSettings(parsed(conf({ Type: 'vxlan', VNI: 4100, Port: 4789 }))), {
    vni: 4100,
    port: 4789,
  });
});

test('a hostile value is quoted short and on one line', () => {
  const long = problems(conf({ Type: 'vxlan' }, { Network: `10.0.0.0/8\n${'x'.repeat(5000)}` }));
  assert.ok(long.length < 300, long);
  assert.ok(!long.includes('\n'), long);
  assert.equal(parsed(conf({ Type: `x\n${'y'.repeat(500)}` })).backendAsWritten?.length, 41);
});
