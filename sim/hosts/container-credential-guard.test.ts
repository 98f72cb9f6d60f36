import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  azureKeyVaultCcgPlugin,
  ContainerCredentialGuard,
  simGmsaHostFacts,
} from './container-credential-guard.ts';
import { WindowsFeatures } from './windows-features.ts';

test('CCG and its plug-ins exist only while the Containers feature is installed', () => {
  const features = new WindowsFeatures({ Containers: 'Available' });
  const ccg = new ContainerCredentialGuard(features, [azureKeyVaultCcgPlugin]);
  assert.deepEqual(simGmsaHostFacts({ domain: undefined, ccg }), {
    partOfDomain: false,
    domain: 'WORKGROUP',
    ccgAvailable: false,
    ccgPlugins: [],
  });
  features.set('Containers', 'Installed');
  assert.deepEqual(simGmsaHostFacts({ domain: 'corp.winfleet.test', ccg }), {
    partOfDomain: true,
    domain: 'corp.winfleet.test',
    ccgAvailable: true,
    ccgPlugins: [{ clsid: azureKeyVaultCcgPlugin, comClassRegistered: true }],
  });
});

test('plug-ins are keyed by CLSID whatever its case; a listed one may lack its COM class', () => {
  const ccg = new ContainerCredentialGuard(new WindowsFeatures());
  ccg.registerPlugin(azureKeyVaultCcgPlugin.toLowerCase(), { comClassRegistered: false });
  ccg.registerPlugin(azureKeyVaultCcgPlugin);
  assert.deepEqual(ccg.plugins(), [{ clsid: azureKeyVaultCcgPlugin, comClassRegistered: true }]);
  ccg.removePlugin(azureKeyVaultCcgPlugin.toLowerCase());
  assert.deepEqual(ccg.plugins(), []);
  assert.throws(
    () => ccg.registerPlugin('CCC2A336-D7F3-4818-A213-272B7924213E'),
    /Cannot register CCG plug-in "CCC2A336-D7F3-4818-A213-272B7924213E": a COM class id is \{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx\}/,
  );
});
