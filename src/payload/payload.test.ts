import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { isDocumentError } from '../schema/validator.ts';
import { servicesManifestFor } from './node-services.ts';
import { loadPayload, type Payload } from './payload.ts';

async function payloadDir(t: { after(fn: () => Promise<void>): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-payload-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('the agent and its service shim are the operator’s to install, not node services', async (t) => {
  const dir = await payloadDir(t);
  const payload = await writeStandInPayload(dir);
  const loaded = await loadPayload(dir);
  assert.deepEqual(loaded, payload);
  const names = loaded.files.map((f) => f.name);
  assert.ok(names.includes('winfleet-agent.exe') && names.includes('winfleet-service.exe'));
  const manifest = servicesManifestFor(loaded);
  const installed = manifest.files.map((f) => f.payload);
  assert.equal(installed.includes('winfleet-agent.exe'), false);
  assert.equal(installed.includes('winfleet-service.exe'), false);
  assert.equal(installed.length, names.length - 2);
});

test('a payload with the agent but not its service shim is refused, saying how to fix it', async (t) => {
  const dir = await payloadDir(t);
  const payload = await writeStandInPayload(dir);
  const withoutShim: Payload = {
    ...payload,
    files: payload.files.filter((f) => f.name !== 'winfleet-service.exe'),
  };
  await writeFile(join(dir, 'payload.json'), JSON.stringify(withoutShim));
  await assert.rejects(loadPayload(dir), (error: unknown) => {
    assert.ok(isDocumentError(error, 'WF_PAYLOAD_INVALID'));
    assert.deepEqual(error.details?.problems, [
      'files: winfleet-agent.exe is listed without winfleet-service.exe, which runs it as a Windows service; rebuild the payload with make payload',
    ]);
    return true;
  });
  // Without the agent, there is nothing for the shim to run: such a payload loads.
  const neither: Payload = {
    ...withoutShim,
    files: withoutShim.files.filter((f) => f.name !== 'winfleet-agent.exe'),
  };
  await writeFile(join(dir, 'payload.json'), JSON.stringify(neither));
  assert.equal((await loadPayload(dir)).files.length, payload.files.length - 2);
});
