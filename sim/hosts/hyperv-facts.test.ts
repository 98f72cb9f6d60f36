import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readHyperVFacts } from '../../src/cli/check/preflight-facts.ts';
import { hyperVFeature } from './containerd-standin.ts';
import { hyperVFacts } from './preflight-facts.ts';
import { createTestMachine } from './test-machine.ts';

test('hyperv-facts: a VM without nested virtualization, with it, and after the role', async (t) => {
  const plain = await createTestMachine(t);
  assert.deepEqual(hyperVFacts(plain), {
    feature: 'Available',
    hypervisorPresent: true,
    virtualizationFirmwareEnabled: false,
  });
  const nested = await createTestMachine(t, { virtualization: { vm: true, extensions: true } });
  assert.equal(hyperVFacts(nested).virtualizationFirmwareEnabled, true);
  nested.features.set(hyperVFeature, 'Installed');
  assert.deepEqual(hyperVFacts(nested), {
    feature: 'Installed',
    hypervisorPresent: true,
    // Windows no longer reports the firmware setting once its own hypervisor runs.
    virtualizationFirmwareEnabled: false,
  });
  const metal = await createTestMachine(t, { virtualization: { vm: false, extensions: true } });
  assert.deepEqual(hyperVFacts(metal), {
    feature: 'Available',
    hypervisorPresent: false,
    virtualizationFirmwareEnabled: true,
  });
  // Read back strictly, as winfleet check does.
  assert.deepEqual(
    readHyperVFacts(JSON.parse(JSON.stringify(hyperVFacts(metal)))),
    hyperVFacts(metal),
  );
});

// Attacker: what a host prints is input. An answer with other fields or types is refused,
// naming the field, rather than read as a passing check.
test('hyperv-facts from a host is read strictly', () => {
  const good = {
    feature: 'Installed',
    hypervisorPresent: true,
    virtualizationFirmwareEnabled: false,
  };
  assert.throws(() => readHyperVFacts({ ...good, extra: 1 }), /hyperv-facts\.extra/);
  assert.throws(() => readHyperVFacts({ ...good, hypervisorPresent: 'true' }), /hypervisorPresent/);
  assert.throws(
    () => readHyperVFacts({ ...good, feature: 'Installed; rm' }),
    /hyperv-facts\.feature/,
  );
  assert.throws(() => readHyperVFacts(null), /hyperv-facts/);
  const { virtualizationFirmwareEnabled: _gone, ...missing } = good;
  assert.throws(() => readHyperVFacts(missing), /virtualizationFirmwareEnabled/);
});
