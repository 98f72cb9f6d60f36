import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  maxFactRows,
  maxFactString,
  readHostBasics,
  readPreflightFacts,
} from './preflight-facts.ts';

/** What Windows PowerShell 5.1 prints for a domain-joined host with a kubelet (one listener: a bare object). */
export function sampleAnswer(): Record<string, unknown> {
  return {
    netbiosName: 'WIN-NODE-01',
    partOfDomain: true,
    domain: 'corp.example.com',
    logicalProcessors: 4,
    memoryBytes: 17179398144,
    userName: 'CORP\\winadmin',
    administrator: true,
    utcNow: '2026-11-23T07:55:12.1234567Z',
    listeners10250: { localAddress: '::', owningProcess: 4312, processName: 'kubelet' },
    firewallRules10250: null,
    winHttpProxy: { proxyServer: null, bypassList: null },
    proxyEnvironment: { HTTP_PROXY: null, HTTPS_PROXY: 'http://proxy:3128', NO_PROXY: null },
  };
}

test('reads an answer; a bare object is a one-row list and null an empty one', () => {
  const facts = readPreflightFacts(sampleAnswer());
  assert.deepEqual(facts.listeners10250, [
    { localAddress: '::', owningProcess: 4312, processName: 'kubelet' },
  ]);
  assert.deepEqual(facts.firewallRules10250, []);
  assert.equal(facts.proxyEnvironment.HTTPS_PROXY, 'http://proxy:3128');
  assert.equal(facts.memoryBytes, 17179398144);
});

test('an extra field, at the top or in a row, is refused naming it', () => {
  assert.throws(
    () => readPreflightFacts({ ...sampleAnswer(), exploit: 'x' }),
    /"exploit" is not a field the script prints/,
  );
  assert.throws(
    () =>
      readPreflightFacts({
        ...sampleAnswer(),
        listeners10250: [{ localAddress: '::', owningProcess: 1, processName: 'k', extra: 1 }],
      }),
    /"listeners10250\[0\]\.extra" is not a field/,
  );
  assert.throws(
    () =>
      readPreflightFacts({
        ...sampleAnswer(),
        proxyEnvironment: { HTTP_PROXY: null, HTTPS_PROXY: null, NO_PROXY: null, ALL_PROXY: 'x' },
      }),
    /"proxyEnvironment\.ALL_PROXY" is not a field/,
  );
});

test('a wrong type is refused naming the field and what was expected', () => {
  const cases: [string, unknown, RegExp][] = [
    ['logicalProcessors', '4', /"logicalProcessors" is "4", expected a whole number/],
    ['logicalProcessors', 2.5, /"logicalProcessors" is 2.5, expected a whole number/],
    ['memoryBytes', -1, /"memoryBytes" is -1, expected a whole number from 0/],
    ['administrator', 'True', /"administrator" is "True", expected true or false/],
    ['partOfDomain', 1, /"partOfDomain" is 1, expected true or false/],
    ['domain', null, /"domain" is null, expected a string/],
    ['utcNow', 'yesterday', /"utcNow" is "yesterday", expected an ISO 8601 UTC time/],
    ['winHttpProxy', 'direct', /"winHttpProxy" is "direct", expected a JSON object/],
  ];
  for (const [field, value, error] of cases)
    assert.throws(() => readPreflightFacts({ ...sampleAnswer(), [field]: value }), error, field);
  assert.throws(
    () =>
      readPreflightFacts({
        ...sampleAnswer(),
        firewallRules10250: [{ name: 'r', enabled: 'True', direction: 'Inbound', action: 'Allow' }],
      }),
    /"firewallRules10250\[0\]\.enabled" is "True", expected true or false/,
  );
  assert.throws(() => readPreflightFacts([sampleAnswer()]), /expected a JSON object/);
});

test('a missing field is refused naming it', () => {
  const answer = sampleAnswer();
  delete answer.memoryBytes;
  assert.throws(() => readPreflightFacts(answer), /"memoryBytes" is missing/);
});

test('a huge string or too many rows is refused, without echoing it whole', () => {
  const huge = 'A'.repeat(maxFactString + 1);
  let message = '';
  try {
    readPreflightFacts({ ...sampleAnswer(), userName: huge });
  } catch (error) {
    message = (error as Error).message;
  }
  assert.match(message, /"userName" is 2049 characters long, more than 2048 accepted/);
  assert.ok(message.length < 400, 'the error does not carry the huge value');
  assert.throws(
    () =>
      readPreflightFacts({
        ...sampleAnswer(),
        winHttpProxy: { proxyServer: 'p:1', bypassList: huge },
      }),
    /"winHttpProxy\.bypassList" is 2049 characters long/,
  );
  const row = { localAddress: '::', owningProcess: 1, processName: 'x' };
  assert.throws(
    () =>
      readPreflightFacts({
        ...sampleAnswer(),
        listeners10250: Array.from({ length: maxFactRows + 1 }, () => row),
      }),
    /"listeners10250" has 65 rows, more than 64 accepted/,
  );
});

test('host-facts basics are read strictly too', () => {
  const good = {
    hostname: 'WIN-NODE-01',
    osVersion: {
      major: 10,
      minor: 0,
      build: 20348,
      ubr: 2582,
      productName: 'Windows Server 2022 Datacenter',
    },
    freeBytes: 100,
    containersFeature: 'Installed',
    ipAddresses: [],
  };
  assert.equal(readHostBasics(good).osVersion.build, 20348);
  assert.throws(
    () => readHostBasics({ ...good, osVersion: { ...good.osVersion, build: '20348' } }),
    /"osVersion\.build" is "20348", expected a whole number/,
  );
  assert.throws(() => readHostBasics({ ...good, freeBytes: '1' }), /"freeBytes" is "1"/);
  assert.throws(
    () => readHostBasics({ ...good, containersFeature: 1 }),
    /"containersFeature" is 1/,
  );
});
