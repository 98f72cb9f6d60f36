import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { isDocumentError } from '../schema/validator.ts';
import { parseServicesManifest } from '../servicesmanifest/services-manifest.ts';
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

test('the kubelet and kube-proxy run under kube-log-runner.exe, each with its log file', async (t) => {
  const dir = await payloadDir(t);
  const manifest = servicesManifestFor(await writeStandInPayload(dir));
  const byName = new Map(manifest.services.map((s) => [s.name, s]));
  assert.deepEqual(byName.get('kubelet')?.logRunner, {
    binary: 'C:\\k\\kube-log-runner.exe',
    logFile: 'C:\\k\\logs\\kubelet.log',
    maxSize: '100M',
    maxAge: '168h',
  });
  assert.deepEqual(byName.get('kube-proxy')?.logRunner, {
    binary: 'C:\\k\\kube-log-runner.exe',
    logFile: 'C:\\k\\logs\\kube-proxy.log',
    maxSize: '100M',
    maxAge: '168h',
  });
  // The others write their own log files.
  assert.equal(byName.get('containerd')?.logRunner, undefined);
  assert.ok(byName.get('containerd')?.args.includes('--log-file'));
  assert.ok(
    byName.get('windows_exporter')?.args.includes('--log.file=C:\\k\\logs\\windows_exporter.log'),
  );
  assert.ok(manifest.files.some((f) => f.path === 'C:\\k\\kube-log-runner.exe'));
  // It is a valid manifest (the runner a payload file, the log files in C:\k\logs).
  parseServicesManifest(JSON.stringify(manifest));
});

test('a payload with the kubelet but not kube-log-runner.exe is refused, saying how to fix it', async (t) => {
  const dir = await payloadDir(t);
  const payload = await writeStandInPayload(dir);
  const withoutRunner: Payload = {
    ...payload,
    files: payload.files.filter((f) => f.name !== 'kube-log-runner.exe'),
  };
  await writeFile(join(dir, 'payload.json'), JSON.stringify(withoutRunner));
  await assert.rejects(loadPayload(dir), (error: unknown) => {
    assert.ok(isDocumentError(error, 'WF_PAYLOAD_INVALID'));
    assert.deepEqual(error.details?.problems, [
      'files: kubelet.exe and kube-proxy.exe are listed without kube-log-runner.exe, which keeps their logs (a service has no console); rebuild the payload with make payload',
    ]);
    return true;
  });
  assert.throws(
    () => servicesManifestFor(withoutRunner),
    /has kubelet\.exe but not kube-log-runner\.exe, which keeps its log .*; rebuild the payload with make payload/,
  );
});
