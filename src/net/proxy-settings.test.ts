import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cidrWildcards,
  goNoProxy,
  nodeProxy,
  parseNoProxy,
  proxyProblems,
  winHttpBypassList,
} from './proxy-settings.ts';

const cluster = {
  serviceCIDR: '10.96.0.0/12',
  podCIDR: '10.244.0.0/16',
  apiServer: 'https://api.corp.example:6443',
};

test('one input gives NO_PROXY with commas and the WinHTTP bypass list with semicolons', () => {
  const { entries, problems } = parseNoProxy(
    ['.corp.example', 'registry.lab', '192.168.10.5', '172.16.0.0/16', '<local>'],
    'hosts.proxy.noProxy',
  );
  assert.deepEqual(problems, []);
  assert.equal(goNoProxy(entries), '.corp.example,registry.lab,192.168.10.5,172.16.0.0/16');
  assert.equal(
    winHttpBypassList(entries),
    '*.corp.example;registry.lab;*.registry.lab;192.168.10.5;172.16.*;<local>',
  );
});

test('a comma-separated string (the OpenShift form) is the same input as a list', () => {
  const fromString = parseNoProxy(' .corp.example , 10.0.0.0/8', 'f');
  const fromList = parseNoProxy(['.corp.example', '10.0.0.0/8'], 'f');
  assert.deepEqual(fromString, fromList);
  assert.equal(goNoProxy(fromString.entries), '.corp.example,10.0.0.0/8');
  assert.equal(winHttpBypassList(fromString.entries), '*.corp.example;10.*');
});

test('the cluster CIDRs, the API server host and loopback are always bypassed', () => {
  const proxy = nodeProxy(
    { httpProxy: 'http://proxy.corp.example:3128', httpsProxy: 'http://proxy.corp.example:3128' },
    cluster,
  );
  assert.ok(proxy);
  assert.equal(proxy.env.HTTP_PROXY, 'http://proxy.corp.example:3128');
  assert.equal(proxy.env.HTTPS_PROXY, 'http://proxy.corp.example:3128');
  assert.equal(
    proxy.env.NO_PROXY,
    '127.0.0.1,localhost,10.96.0.0/12,10.244.0.0/16,api.corp.example',
  );
  assert.doesNotMatch(proxy.env.NO_PROXY!, /;/);
  const bypass = proxy.winHttp.bypassList.split(';');
  assert.ok(bypass.includes('10.96.*') && bypass.includes('10.111.*'), 'the /12, octet by octet');
  assert.ok(bypass.includes('10.244.*'));
  assert.ok(bypass.includes('api.corp.example'));
  assert.doesNotMatch(proxy.winHttp.bypassList, /,/);
  assert.equal(
    proxy.winHttp.proxyServer,
    'http=proxy.corp.example:3128;https=proxy.corp.example:3128',
  );
});

test('no proxy set: nothing for the nodes', () => {
  assert.equal(nodeProxy(undefined, cluster), undefined);
  assert.equal(nodeProxy({}, cluster), undefined);
});

test('CIDRs become whole-octet wildcards, at most 128 of them', () => {
  assert.deepEqual(cidrWildcards({ network: 10 * 2 ** 24, prefix: 8 }), ['10.*']);
  assert.deepEqual(cidrWildcards({ network: 0, prefix: 0 }), ['*']);
  assert.equal(cidrWildcards({ network: 10 * 2 ** 24 + 96 * 2 ** 16, prefix: 12 }).length, 16);
  assert.deepEqual(cidrWildcards({ network: 3232235777, prefix: 32 }), ['192.168.1.1']);
  assert.ok(cidrWildcards({ network: 0, prefix: 1 }).length <= 128);
  assert.ok(cidrWildcards({ network: 10 * 2 ** 24, prefix: 9 }).length <= 128);
});

test('what neither list can say is refused, naming the entry and the fix', () => {
  const { problems } = parseNoProxy(
    ['a.example;b.example', 'registry:5000', 'http://x.example', 'under_score.example', ''],
    'hosts.proxy.noProxy',
  );
  assert.equal(problems.length, 5);
  assert.match(problems[0]!, /^hosts\.proxy\.noProxy\.0: "a\.example;b\.example" contains ";"/);
  assert.match(problems[1]!, /^hosts\.proxy\.noProxy\.1: .*port/);
  assert.match(problems[2]!, /^hosts\.proxy\.noProxy\.2: .*not a host name/);
  assert.match(problems[3]!, /^hosts\.proxy\.noProxy\.3: .*not a host name/);
  assert.match(problems[4]!, /^hosts\.proxy\.noProxy\.4: .*empty/);
});

test('proxy URLs: scheme, host and port only, and never credentials (which are not quoted)', () => {
  assert.deepEqual(proxyProblems({ httpProxy: 'http://proxy:3128' }), []);
  const problems = proxyProblems({
    httpProxy: 'http://alice:s3cret@proxy:3128',
    httpsProxy: 'socks5://proxy:1080',
  });
  assert.equal(problems.length, 2);
  assert.match(problems[0]!, /^hosts\.proxy\.httpProxy: .*credentials/);
  assert.doesNotMatch(problems.join('\n'), /s3cret|alice/);
  assert.match(problems[1]!, /^hosts\.proxy\.httpsProxy: .*http:\/\/ or https:\/\//);
  assert.match(proxyProblems({ httpProxy: 'http://proxy:3128/path' })[0]!, /no path/);
  assert.match(proxyProblems({ noProxy: ['.corp'] })[0]!, /without httpProxy or httpsProxy/);
});

test('an API server at an IPv6 address is bypassed too', () => {
  const proxy = nodeProxy(
    { httpProxy: 'http://proxy:3128' },
    { ...cluster, apiServer: 'https://[fd00::1]:6443' },
  );
  assert.ok(proxy?.env.NO_PROXY?.split(',').includes('fd00::1'));
  assert.ok(proxy?.winHttp.bypassList.split(';').includes('[fd00::1]'));
});
