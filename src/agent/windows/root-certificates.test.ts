import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import { createCertificateAuthority } from '../../pki/certificates.ts';
import {
  addRootCertificateScript,
  listRootCertificatesScript,
  parseAddRootCertificateOutput,
  parseRemoveRootCertificateOutput,
  parseRootCertificatesOutput,
  parseSetWinHttpProxyOutput,
  removeRootCertificateScript,
  setWinHttpProxyScript,
} from './root-certificates.ts';

const thumbprint = 'A'.repeat(40);

test('every script parses as PowerShell', async () => {
  const ca = await createCertificateAuthority('Corp Root CA');
  await assertValidPowerShell(listRootCertificatesScript(), 'list Root certificates');
  const add = addRootCertificateScript(ca.certPem);
  assert.match(add, /X509Store -ArgumentList 'Root', 'LocalMachine'/);
  await assertValidPowerShell(add, 'add a Root certificate');
  const remove = removeRootCertificateScript(thumbprint);
  assert.match(remove, /\$path = 'Cert:\\LocalMachine\\Root\\A{40}'/);
  await assertValidPowerShell(remove, 'remove a Root certificate');
  const set = setWinHttpProxyScript({
    proxyServer: 'http=proxy:3128;https=proxy:3128',
    bypassList: '*.corp.example;10.*;<local>',
  });
  assert.match(
    set,
    /& netsh\.exe winhttp set proxy 'proxy-server=http=proxy:3128;https=proxy:3128' 'bypass-list=\*\.corp\.example;10\.\*;<local>'/,
  );
  await assertValidPowerShell(set, 'set the WinHTTP proxy');
  await assertValidPowerShell(setWinHttpProxyScript(undefined), 'reset the WinHTTP proxy');
});

test('attacker side: only a thumbprint forms a store path; only a certificate is added', () => {
  for (const bad of ["A'; Remove-Item C:\\ -Recurse; '", '..\\My\\X', 'a'.repeat(40), '']) {
    assert.throws(
      () => removeRootCertificateScript(bad),
      { code: 'WF_HOST_SETTINGS_FAILED', message: /as a certificate thumbprint/ },
      bad,
    );
  }
  assert.throws(() => addRootCertificateScript("'; Stop-Computer; '"), {
    code: 'WF_HOST_SETTINGS_FAILED',
    message: /not one PEM CERTIFICATE/,
  });
  assert.throws(
    () => setWinHttpProxyScript({ proxyServer: "p:1'; Stop-Computer; '", bypassList: '' }),
    /Cannot set the WinHTTP proxy/,
  );
});

test('the outputs are read strictly', () => {
  assert.deepEqual(
    parseRootCertificatesOutput(
      `{"certificates":[{"thumbprint":"${thumbprint}","subject":"CN=Corp Root CA"}]}\r\n`,
    ),
    [{ thumbprint, subject: 'CN=Corp Root CA' }],
  );
  assert.throws(() => parseRootCertificatesOutput('{"certificates":[{"thumbprint":"x"}]}'), {
    code: 'WF_HOST_SETTINGS_FAILED',
    message: /Cannot read/,
  });
  assert.deepEqual(parseAddRootCertificateOutput(`{"thumbprint":"${thumbprint}"}`), { thumbprint });
  assert.throws(() => parseAddRootCertificateOutput('{"thumbprint":null}'), /Cannot read/);
  assert.deepEqual(parseRemoveRootCertificateOutput('{"removed":false}'), { removed: false });
  parseSetWinHttpProxyOutput('{"exitCode":0}');
  assert.throws(() => parseSetWinHttpProxyOutput('{"exitCode":1}'), /netsh winhttp failed/);
});
