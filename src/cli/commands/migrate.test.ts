import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatPlan, type MigrationPlan, parseTarget, planMoves } from './migrate.ts';

test('--to takes a release name or a build, and names both choices when it is neither', () => {
  assert.deepEqual(parseTarget('2025'), { name: '2025', build: '10.0.26100' });
  assert.deepEqual(parseTarget('10.0.20348.2582'), { name: '2022', build: '10.0.20348' });
  assert.deepEqual(parseTarget('10.0.25398'), { name: '10.0.25398', build: '10.0.25398' });
  assert.throws(
    () => parseTarget('ltsc2022'),
    /Cannot parse --to "ltsc2022".*or give a release: 2019, 2022, 2025/,
  );
});

const plan: MigrationPlan = {
  target: { name: '2022', build: '10.0.20348' },
  namespace: 'namespace apps',
  summary: { ready: 1, hyperv: 1, blocked: 1, unknown: 0 },
  workloads: [
    {
      kind: 'Deployment',
      namespace: 'apps',
      name: 'iis',
      verdict: 'ready',
      images: [
        {
          container: 'spec.containers[0]',
          image: 'iis:latest',
          verdict: 'process',
          osVersion: '10.0.20348.2582',
          variants: ['10.0.17763.6054', '10.0.20348.2582'],
        },
      ],
      blockers: [],
      notes: [],
    },
    {
      kind: 'Deployment',
      namespace: 'apps',
      name: 'old',
      verdict: 'hyperv',
      images: [
        {
          container: 'spec.containers[0]',
          image: 'old:2019',
          verdict: 'hyperv',
          osVersion: '10.0.17763.6054',
          variants: ['10.0.17763.6054'],
        },
      ],
      blockers: [],
      notes: ['HostProcess containers run on the host without isolation: check'],
    },
    {
      kind: 'Job',
      namespace: 'apps',
      name: 'pinned',
      verdict: 'blocked',
      images: [],
      blockers: ['nodeSelector x pins it to 10.0.17763: set it', 'second reason'],
      notes: [],
    },
  ],
};

test('the table: a summary, one row per workload with the first reason, the rest below; wide: one row per image', () => {
  const table = formatPlan(plan, 'table', false);
  assert.equal(
    table,
    [
      'Migration to Windows Server 2022 (10.0.20348), namespace apps: 3 workload(s) with Windows pods; 1 ready, 1 only under Hyper-V isolation, 1 blocked, 0 unknown',
      'NAMESPACE   WORKLOAD         VERDICT        IMAGES   WHY',
      'apps        Deployment/iis   ready          1',
      'apps        Deployment/old   hyper-v only   1        old:2019 run on 2022 only under Hyper-V isolation',
      'apps        Job/pinned       blocked        0        nodeSelector x pins it to 10.0.17763: set it',
      '',
      '  apps/Deployment/old: HostProcess containers run on the host without isolation: check',
      '  apps/Job/pinned: second reason',
      '',
      'Hyper-V isolation: these move only onto a pool with spec.isolation.hyperV: true (the webhook then gives their pods a Hyper-V RuntimeClass); otherwise rebuild their images for 2022.',
      '',
    ].join('\n'),
  );
  const wide = formatPlan(plan, 'wide', false);
  assert.match(
    wide,
    /apps\s+Deployment\/iis\s+spec\.containers\[0\]\s+iis:latest\s+process 10\.0\.20348\.2582\s+10\.0\.17763\.6054,10\.0\.20348\.2582/,
  );
  assert.match(wide, /apps\/Job\/pinned: nodeSelector x pins it/);
  assert.deepEqual(JSON.parse(formatPlan(plan, 'json')), plan);
  assert.equal(planMoves(plan), false);
  assert.equal(planMoves({ ...plan, workloads: [plan.workloads[0]!] }), true);
});
