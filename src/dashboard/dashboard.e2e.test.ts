/**
 * The dashboard in a real browser: Debian's chromium driven by playwright-core (which downloads
 * no browser), against a real cluster, the operator in-process and simulated Windows hosts.
 * The hosts appear; a host whose Node goes NotReady shows it without a reload; the detail view
 * opens with conditions and Events; markup in cluster strings renders as text.
 *
 * Screenshots go to $WINFLEET_TEST_ARTIFACTS/dashboard (default .cache/test-artifacts/dashboard,
 * git-ignored). With WINFLEET_UPDATE_DOCS_SCREENSHOT=1 the overview is also written to
 * docs/dashboard.png for the README.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { type Browser, chromium, type Page } from 'playwright-core';
import { freePort } from '../../sim/cluster/free-port.ts';
import { type JoinWorld, joinWorld } from '../../sim/testkit/join-fixture.ts';
import { createLinuxNode } from '../../sim/testkit/nodes.ts';
import { createPool, labelHosts } from '../../sim/testkit/pools.ts';
import {
  createWindowsHosts,
  hostReady,
  listWindowsHosts,
  sshKeySecretName,
} from '../../sim/testkit/windows-hosts.ts';
import { apiVersion } from '../api/group-version.ts';
import type { WindowsHost } from '../api/windows-host.ts';
import { waitFor } from '../kube/wait-for.ts';

// The callbacks given to page.evaluate run in the page; the project has no DOM types.
// biome-ignore lint/suspicious/noExplicitAny: the browser's globals, seen from Node
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: the browser's globals, seen from Node
declare const window: any;

const chromiumPath = process.env.WINFLEET_CHROMIUM ?? '/usr/bin/chromium';
const artifacts = join(
  process.env.WINFLEET_TEST_ARTIFACTS ?? join(process.cwd(), '.cache', 'test-artifacts'),
  'dashboard',
);
const xssUser = '<img src=x onerror="window.__xss=1">';
const xssHostname = '<script>window.__xss=2</script>';

/**
 * Chromium without its sandbox (Playwright's default, chromiumSandbox false): it works as root
 * and as a normal user, in containers without user namespaces; the page is our own, on loopback.
 */
async function launchChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    throw new Error(
      `No chromium at ${chromiumPath}: install Debian's chromium package (hack/ensure-packages.sh) or set WINFLEET_CHROMIUM to a Chromium binary`,
    );
  }
  return chromium.launch({ executablePath: chromiumPath, headless: true, chromiumSandbox: false });
}

async function shot(page: Page, name: string): Promise<string> {
  await mkdir(artifacts, { recursive: true });
  const path = join(artifacts, `${name}.png`);
  await page.screenshot({ path });
  return path;
}

/** The text of a host's row in the hosts table ('' when there is none). */
const rowText = (page: Page, key: string) =>
  page.evaluate(
    (k) =>
      [...document.querySelectorAll('#hosts tbody tr')].find(
        (tr) => tr.getAttribute('data-host') === k,
      )?.textContent ?? '',
    key,
  );

test('the dashboard in chromium: hosts, live NotReady without reload, the detail view, markup as text', async (t) => {
  const world = await joinWorld(t, { releases: ['2022', '2019'] });
  const { kc, namespace } = world;
  await createLinuxNode(kc, { name: 'linux-1' });
  await createWindowsHosts(kc, namespace, world.fleet.hosts);
  await labelHosts(kc, namespace, { pool: 'web' });
  await createPool(kc, namespace, 'web', {
    selector: { matchLabels: { pool: 'web' } },
    maxUnavailable: 1,
  });

  const joined = await waitFor(
    async () => {
      const list = (await listWindowsHosts(kc, namespace)).filter(
        (h) => h.metadata.name !== 'hostile',
      );
      return list.length === 2 && list.every(hostReady) ? list : undefined;
    },
    { description: 'both simulated hosts Ready', timeoutMs: 180_000, intervalMs: 500 },
  );
  const [first, second] = joined.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name)) as [
    WindowsHost,
    WindowsHost,
  ];
  const key = (h: WindowsHost) => `${namespace}/${h.metadata.name}`;

  // Closed before the world's teardown (t.after hooks run first-registered first): an open
  // page keeps reconnecting its stream to the operator being stopped.
  const browser = await launchChromium();
  try {
    await drive(t, browser, { world, first, second, key });
  } finally {
    await browser.close();
  }
});

async function drive(
  t: TestContext,
  browser: Browser,
  {
    world,
    first,
    second,
    key,
  }: {
    world: JoinWorld;
    first: WindowsHost;
    second: WindowsHost;
    key: (h: WindowsHost) => string;
  },
): Promise<void> {
  const { kc, namespace } = world;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const page = await browser.newPage({ viewport: { width: 1366, height: 768 } });
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text());
  });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  page.on('requestfailed', (r) => consoleErrors.push(`${r.url()}: ${r.failure()?.errorText}`));
  // Page loads (a reload is one; the hash changes of the detail view are not).
  let navigations = 0;
  page.on('load', () => {
    navigations++;
  });
  const base = `http://127.0.0.1:${world.operator!.dashboard!.port}/`;
  await page.goto(base);

  // 1. The hosts appear, Ready, with their conditions, and the pool.
  for (const h of [first, second]) {
    await page.waitForFunction(
      (k) =>
        [...document.querySelectorAll('#hosts tbody tr')]
          .find((tr) => tr.getAttribute('data-host') === k)
          ?.querySelector('.state')?.textContent === 'Ready',
      key(h),
      { timeout: 30_000 },
    );
    const text = await rowText(page, key(h));
    assert.match(text, /Reachable.*Bootstrapped.*NodeRegistered.*Ready/);
    assert.match(text, /Node Ready/);
    assert.ok(
      text.includes(h.status!.windowsVersion!),
      `${text} shows ${h.status!.windowsVersion}`,
    );
  }
  await page.waitForFunction(
    () =>
      document.querySelector('#pools tbody tr[data-pool]')?.textContent?.includes('web') ?? false,
    undefined,
    { timeout: 30_000 },
  );
  assert.match((await page.textContent('#conn')) ?? '', /live/);
  await shot(page, '1-overview');

  // 3. The detail view: conditions, join steps, versions and the Events about the host.
  await page.click(`#hosts tbody tr[data-host="${key(first)}"]`);
  await page.waitForSelector('#detail .events tbody tr', { timeout: 15_000 });
  const detail = (await page.textContent('#detail-body')) ?? '';
  for (const expected of [
    'Join steps',
    'Bootstrapped',
    'AgentBootstrapped',
    'Node conditions',
    'KubeletReady',
    'Recent events',
    'Kubelet',
    'UBR',
  ]) {
    assert.ok(detail.includes(expected), `the detail shows ${expected}`);
  }
  const reasons = await page.$$eval('#detail .events tbody tr', (rows) =>
    rows.map((r) => r.getAttribute('data-reason')),
  );
  assert.ok(
    reasons.includes('HostKeyPinned') || reasons.includes('Bootstrapped'),
    `events: ${reasons.join(', ')}`,
  );
  assert.match(page.url(), new RegExp(`#host/${namespace}/${first.metadata.name}$`));
  await shot(page, '2-detail');
  await page.click('#detail-close');
  assert.equal(await page.isHidden('#detail'), true);

  // 4. A Node goes NotReady (containerd crash-loops: the kubelet reports the runtime down):
  // the page shows it from the stream, without a reload.
  await page.evaluate(() => {
    (window as unknown as { __marker?: string }).__marker = 'same page';
  });
  const navigationsBefore = navigations;
  const sim = world.fleet.hosts.find((h) => h.address === second.spec.address)!;
  await sim.faults.crashLoop('containerd');
  const nodeName = second.status!.nodeName!;
  await waitFor(
    async () =>
      (await core.readNode({ name: nodeName })).status?.conditions?.some(
        (c) => c.type === 'Ready' && c.status !== 'True',
      ),
    {
      description: `Node ${nodeName} NotReady on the API server`,
      timeoutMs: 60_000,
      intervalMs: 200,
    },
  );
  const seenAt = Date.now();
  await page.waitForFunction(
    (k) =>
      [...document.querySelectorAll('#hosts tbody tr')]
        .find((tr) => tr.getAttribute('data-host') === k)
        ?.textContent?.includes('Node NotReady') ?? false,
    key(second),
    { timeout: 10_000 },
  );
  t.diagnostic(
    `NotReady on the page ${((Date.now() - seenAt) / 1000).toFixed(1)} s after the API server had it`,
  );
  assert.equal(
    await page.evaluate(() => (window as unknown as { __marker?: string }).__marker),
    'same page',
  );
  assert.equal(navigations, navigationsBefore, 'no navigation: the page was not reloaded');
  // The kubelet's own words (sim/hosts/kubelet-standin.ts posts Ready False with the message
  // "container runtime is down"), as the row renders the Node's Ready message.
  const kubeletSays = 'Node: container runtime is down';
  const notReadyRow = await page
    .waitForFunction(
      ([k, text]) =>
        [...document.querySelectorAll('#hosts tbody tr')]
          .find((tr) => tr.getAttribute('data-host') === k)
          ?.textContent?.includes(text) ?? false,
      [key(second), kubeletSays] as const,
      { timeout: 10_000 },
    )
    .then(
      () => rowText(page, key(second)),
      async () => rowText(page, key(second)),
    );
  assert.ok(notReadyRow.includes(kubeletSays), `the row shows "${kubeletSays}": ${notReadyRow}`);
  assert.match(await rowText(page, key(first)), /Node Ready/);
  const overviewShot = await shot(page, '3-not-ready');
  if (process.env.WINFLEET_UPDATE_DOCS_SCREENSHOT === '1') {
    await page.screenshot({ path: join(process.cwd(), 'docs', 'dashboard.png') });
    const size = (await stat(join(process.cwd(), 'docs', 'dashboard.png'))).size;
    assert.ok(size < 300 * 1024, `docs/dashboard.png is ${size} bytes; keep it under 300 KB`);
  }
  // 5. A host nobody answers for (a loopback port nothing listens on) appears without a reload,
  // with markup in its user name and, written into its status as a compromised writer could,
  // its host name: both render as text and run nothing.
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const objectRef = {
    group: 'winfleet.io',
    version: 'v1alpha1',
    namespace,
    plural: 'windowshosts',
  };
  await custom.createNamespacedCustomObject({
    ...objectRef,
    body: {
      apiVersion,
      kind: 'WindowsHost',
      metadata: { name: 'hostile', namespace },
      spec: {
        address: '127.0.0.1',
        port: await freePort(),
        username: xssUser,
        sshKeySecretRef: { name: sshKeySecretName },
      },
    } satisfies WindowsHost,
  });
  await waitFor(
    async () =>
      (await listWindowsHosts(kc, namespace))
        .find((h) => h.metadata.name === 'hostile')
        ?.status?.conditions?.some((c) => c.type === 'Reachable' && c.status === 'False'),
    { description: 'the hostile host Unreachable', timeoutMs: 60_000 },
  );
  await custom.patchNamespacedCustomObjectStatus(
    { ...objectRef, name: 'hostile', body: { status: { hostname: xssHostname } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );

  await page.waitForFunction(
    (x) => document.querySelector('#hosts tbody')?.textContent?.includes(x) ?? false,
    xssHostname,
    { timeout: 15_000 },
  );
  const hostileRow = await rowText(page, `${namespace}/hostile`);
  assert.ok(hostileRow.includes(xssHostname), `the host name shows as text: ${hostileRow}`);
  await page.click(`#hosts tbody tr[data-host="${namespace}/hostile"]`);
  await page.waitForFunction(
    (u) => document.querySelector('#detail-body')?.textContent?.includes(u) ?? false,
    xssUser,
    { timeout: 10_000 },
  );
  assert.equal(
    await page.evaluate(() => (window as unknown as { __xss?: number }).__xss),
    undefined,
  );
  assert.equal(await page.locator('img').count(), 0, 'no <img> element was created from a string');
  assert.equal(await page.locator('body script').count(), 0, 'no <script> element was created');
  await page.click('#detail-close');

  assert.equal(navigations, navigationsBefore, 'the new host came without a reload');
  assert.equal(
    await page.evaluate(() => (window as unknown as { __marker?: string }).__marker),
    'same page',
  );
  await shot(page, '4-markup-as-text');
  t.diagnostic(`screenshots in ${artifacts} (last: ${overviewShot})`);
  assert.deepEqual(consoleErrors, [], 'no script errors in the page');
}
