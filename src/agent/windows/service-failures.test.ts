import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertValidPowerShell } from '../../../sim/testkit/powershell-grammar.ts';
import {
  maxServiceFailures,
  parseServiceFailuresOutput,
  serviceFailuresScript,
} from './service-failures.ts';

test('the script reads 7031 and 7034 of the service’s display name since a time; valid PowerShell', async () => {
  const script = serviceFailuresScript('kubelet', 1_763_870_400_000);
  await assertValidPowerShell(script);
  assert.match(script, /Id = 7031, 7034/);
  assert.match(script, /ProviderName = 'Service Control Manager'/);
  assert.match(script, /FromUnixTimeMilliseconds\(1763870400000\)/);
  assert.match(
    script,
    /\$_\.Properties\[0\]\.Value\) -eq \$service\.DisplayName|Properties\[0\]\.Value -eq \$service\.DisplayName/,
  );
  assert.throws(() => serviceFailuresScript('kube\r\nlet', 0), /as a service name/);
  // A quote in a name is quoted, not run.
  const quoted = serviceFailuresScript("kubelet'; Stop-Computer", 0);
  await assertValidPowerShell(quoted);
  assert.match(quoted, /Get-Service -Name 'kubelet''; Stop-Computer'/);
  assert.throws(() => serviceFailuresScript('kubelet', -1), /give ms since the epoch/);
  assert.throws(() => serviceFailuresScript('kubelet', 1.5), /give ms since the epoch/);
});

test('the output is read strictly: times sorted, a single one, none, or refused', () => {
  assert.deepEqual(parseServiceFailuresOutput('{"ok":true,"times":[3,1,2]}', 'kubelet'), [1, 2, 3]);
  assert.deepEqual(parseServiceFailuresOutput('{"ok":true,"times":5}', 'kubelet'), [5]);
  assert.deepEqual(parseServiceFailuresOutput('{"ok":true,"times":[]}', 'kubelet'), []);
  assert.throws(
    () =>
      parseServiceFailuresOutput(
        '{"ok":false,"message":"service kubelet does not exist"}',
        'kubelet',
      ),
    /Cannot read the failures of service "kubelet": service kubelet does not exist/,
  );
  assert.throws(
    () => parseServiceFailuresOutput('{"ok":true,"times":["1"]}', 'kubelet'),
    /"1" is not a time/,
  );
  assert.throws(
    () => parseServiceFailuresOutput('{"ok":true,"times":[-4]}', 'kubelet'),
    /-4 is not a time/,
  );
  assert.throws(
    () =>
      parseServiceFailuresOutput(
        JSON.stringify({
          ok: true,
          times: Array.from({ length: maxServiceFailures + 1 }, () => 1),
        }),
        'kubelet',
      ),
    /more than 200 times/,
  );
  assert.throws(() => parseServiceFailuresOutput('[1]', 'kubelet'), /not an object/);
});
