import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkPoolSpec } from '../rollout/pool-spec.ts';
import {
  activeDirectoryProblems,
  checkedActiveDirectory,
  domainNameProblems,
  organizationalUnitProblems,
} from './active-directory.ts';

const good = {
  domain: 'corp.example.com',
  organizationalUnit: 'OU=Kubernetes,OU=Servers,DC=corp,DC=example,DC=com',
  credentialsSecretRef: { name: 'ad-join' },
};

test('a complete setting has no problem; absent is no setting at all', () => {
  assert.deepEqual(activeDirectoryProblems(good), []);
  assert.deepEqual(activeDirectoryProblems({ ...good, organizationalUnit: undefined }), []);
  assert.deepEqual(activeDirectoryProblems(undefined), []);
  assert.equal(checkedActiveDirectory(good), good);
});

test('the domain must be a DNS name of two labels or more', () => {
  for (const bad of [
    'corp',
    'corp..example.com',
    '-corp.example.com',
    'corp.example.123',
    'a b.com',
    '',
  ]) {
    const [problem] = domainNameProblems(bad, 'spec.activeDirectory.domain');
    assert.match(problem ?? '', /^spec\.activeDirectory\.domain: /, bad);
    assert.match(problem ?? '', /e\.g\. corp\.example\.com/, bad);
  }
  assert.deepEqual(domainNameProblems('CORP.Example.com', 'f'), []);
});

test('a crafted domain or OU cannot pass: quotes, semicolons, newlines and $ are refused', () => {
  const injections = [
    "corp.example.com'; Remove-Item C:\\ -Recurse; '",
    'corp.example.com$(Stop-Computer)',
    'corp.example.com\nStop-Computer',
  ];
  for (const domain of injections) {
    assert.notDeepEqual(activeDirectoryProblems({ ...good, domain }), [], JSON.stringify(domain));
  }
  const ous = [
    "OU=K8s'; Stop-Computer; ',DC=corp,DC=example,DC=com",
    'OU=K8s;Stop-Computer,DC=corp,DC=example,DC=com',
    'OU=K8s\n,DC=corp,DC=example,DC=com',
    'OU=K8s\\,DC=corp,DC=example,DC=com',
    'OU="K8s",DC=corp,DC=example,DC=com',
  ];
  for (const ou of ous) {
    const problems = organizationalUnitProblems(
      ou,
      good.domain,
      'spec.activeDirectory.organizationalUnit',
    );
    assert.match(
      problems[0] ?? '',
      /^spec\.activeDirectory\.organizationalUnit: /,
      JSON.stringify(ou),
    );
  }
});

test("the OU's DC= parts must be the domain's, OU= parts first", () => {
  assert.match(
    organizationalUnitProblems('OU=K8s,DC=other,DC=com', 'corp.example.com', 'f')[0] ?? '',
    /its DC= parts \(other\.com\) are not the domain corp\.example\.com; end it with DC=corp,DC=example,DC=com/,
  );
  assert.match(
    organizationalUnitProblems('DC=corp,OU=K8s,DC=example,DC=com', 'corp.example.com', 'f')[0] ??
      '',
    /comes after a DC= part/,
  );
  assert.match(
    organizationalUnitProblems('DC=corp,DC=example,DC=com', 'corp.example.com', 'f')[0] ?? '',
    /names no OU= part/,
  );
  assert.deepEqual(
    organizationalUnitProblems('ou=K8s, dc=CORP, dc=example, dc=com', 'corp.example.com', 'f'),
    [],
  );
});

test('the Secret reference is required and a Kubernetes name; unknown fields are named', () => {
  assert.match(
    activeDirectoryProblems({ domain: 'corp.example.com' }).join(),
    /spec\.activeDirectory\.credentialsSecretRef: missing; name a Secret in the pool's namespace with the keys username and password/,
  );
  assert.match(
    activeDirectoryProblems({ ...good, credentialsSecretRef: { name: 'AD_Join' } }).join(),
    /spec\.activeDirectory\.credentialsSecretRef\.name: "AD_Join" is not a Secret name/,
  );
  assert.match(
    activeDirectoryProblems({ ...good, password: 'x' }).join(),
    /spec\.activeDirectory\.password: unknown field/,
  );
  assert.match(activeDirectoryProblems('corp').join(), /spec\.activeDirectory: must be an object/);
});

test("a pool's spec.activeDirectory problems are the pool's problems", () => {
  const { problems } = checkPoolSpec({
    selector: {},
    activeDirectory: { ...good, domain: 'corp' },
  });
  assert.equal(problems.length, 1);
  assert.match(problems[0]!, /^spec\.activeDirectory\.domain: "corp" is not a domain DNS name/);
});
