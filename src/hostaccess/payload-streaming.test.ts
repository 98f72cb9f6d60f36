import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { writeStandInPayload } from '../../sim/testkit/payload.ts';
import { connectedSimHost } from '../../sim/testkit/ssh-host.ts';
import { errorCode } from '../errors/catalog.ts';
import { payloadFileOnDisk } from '../payload/payload-file.ts';
import { hostPaths } from '../servicesmanifest/host-paths.ts';
import { syncPayload } from './payload-sync.ts';

const MiB = 1024 * 1024;

// Garbage is collected before each sample, so the samples count what is held, not what
// awaits collection (freed chunks pile up between collections whatever the code does).
setFlagsFromString('--expose-gc');
// Freed ArrayBuffers are counted until swept: sweeping with the collection keeps the count exact.
setFlagsFromString('--no-concurrent-array-buffer-sweeping');
const collectGarbage = runInNewContext('gc') as () => void;

/** The most `process.memoryUsage()` grew above its level at the start while `work` ran. */
async function peakGrowth<T>(work: () => Promise<T>) {
  collectGarbage();
  const start = process.memoryUsage();
  const peak = { arrayBuffers: 0, heapUsed: 0 };
  const sample = () => {
    collectGarbage();
    const now = process.memoryUsage();
    peak.arrayBuffers = Math.max(peak.arrayBuffers, now.arrayBuffers - start.arrayBuffers);
    peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed - start.heapUsed);
  };
  const sampler = setInterval(sample, 1000);
  try {
    const result = await work();
    sample();
    return { result, peak };
  } finally {
    clearInterval(sampler);
  }
}

async function tempDir(t: { after(fn: () => unknown): void }) {
  const dir = await mkdtemp(join(tmpdir(), 'winfleet-payload-streaming-test-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

test('a large payload file is streamed to the host: memory grows far less than the file', async (t) => {
  const { host, remote } = await connectedSimHost(t, { address: '127.0.0.181' });
  const dir = await tempDir(t);
  const size = 64 * MiB;
  const payload = await writeStandInPayload(dir, { sizes: { 'kubelet.exe': size } });
  const kubelet = payload.files.find((f) => f.name === 'kubelet.exe')!;

  const { result: copied, peak } = await peakGrowth(() =>
    syncPayload(remote, payload, (f) => payloadFileOnDisk(dir, f)),
  );

  t.diagnostic(`peak growth: arrayBuffers ${peak.arrayBuffers} bytes, heap ${peak.heapUsed} bytes`);
  assert.ok(copied.includes(`${hostPaths.payload}\\kubelet.exe`));
  const onHost = `${hostPaths.payload}\\kubelet.exe`;
  assert.equal((await host.machine.fs.stat(onHost))?.size, size);
  assert.equal(await host.machine.fs.sha256(onHost), kubelet.sha256);
  // Reading the file whole would hold all 64 MiB (as a Buffer) at once; streamed, what is
  // held is the chunks in flight and the SSH windows (of both ends: the host is in-process).
  assert.ok(peak.arrayBuffers < size / 4, `arrayBuffers grew by ${peak.arrayBuffers} bytes`);
  assert.ok(peak.heapUsed < size / 4, `the heap grew by ${peak.heapUsed} bytes`);
});

test('a copy cut off by a dropped connection fails at once and leaves no timer behind', async (t) => {
  const { host, session } = await connectedSimHost(t, { address: '127.0.0.182' });
  const dir = await tempDir(t);
  await writeStandInPayload(dir, { sizes: { 'kubelet.exe': 64 * MiB } });
  await host.machine.fs.mkdir(hostPaths.payload, { recursive: true });
  const onHost = `${hostPaths.payload}\\kubelet.exe`;
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  // An hour: a timer left behind by the copy would still be there when the test looks.
  const copy = session.uploadFile(onHost, join(dir, 'kubelet.exe'), 3_600_000);
  copy.catch(() => {});
  // Drop the connection once the copy is under way (bounded: the copy is 64 MiB).
  for (let i = 0; i < 2000 && ((await host.machine.fs.stat(onHost))?.size ?? 0) < MiB; i++)
    await new Promise((resolve) => setImmediate(resolve));
  host.faults.dropConnection();
  const error = await copy.then(
    () => assert.fail('the copy finished despite the dropped connection'),
    (e: unknown) => e,
  );
  assert.ok(['WF_SSH_DROPPED', 'WF_SSH_FILE_COPY'].includes(errorCode(error) ?? ''), String(error));
  assert.ok(timers() <= before, `${timers() - before} timer(s) outlived the copy`);
});
