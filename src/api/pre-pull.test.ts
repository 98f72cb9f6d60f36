import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  formatPrePullCommand,
  hostPrePullStatus,
  parsePrePullCommand,
  prePullCommand,
  prePullProblems,
  prePullRunMark,
  prePullState,
} from './pre-pull.ts';

test('a good spec has no problems and gets the defaults', () => {
  const spec = { images: ['mcr.microsoft.com/windows/servercore:ltsc2022', 'nginx'] };
  assert.deepEqual(prePullProblems(spec), []);
  assert.deepEqual(prePullCommand(spec, new Map([['docker.io/library/nginx:latest', 5]])), {
    images: [
      { reference: 'mcr.microsoft.com/windows/servercore:ltsc2022' },
      { reference: 'docker.io/library/nginx:latest', bytes: 5 },
    ],
    timeoutSeconds: 900,
    maxParallel: 2,
  });
});

test('bad references, duplicates, refused addresses and numbers are named by field', () => {
  const problems = prePullProblems({
    images: [
      'Bad Name',
      'nginx',
      'docker.io/library/nginx:latest',
      '169.254.169.254/x:1',
      '127.0.0.1:5000/y:1',
      '[::1]:5000/z:1',
    ],
    timeoutSeconds: 5,
    maxParallel: 0,
  });
  assert.equal(problems.length, 7, problems.join('\n'));
  assert.match(problems[0]!, /^spec\.prePull\.images\[0\]: /);
  assert.match(problems[1]!, /^spec\.prePull\.images\[2\]: .* listed twice/);
  assert.match(problems[2]!, /^spec\.prePull\.images\[3\]: .*link-local.*address policy/);
  assert.match(problems[3]!, /^spec\.prePull\.images\[4\]: .*loopback/);
  assert.match(problems[4]!, /^spec\.prePull\.images\[5\]: .*loopback/);
  assert.match(problems[5]!, /^spec\.prePull\.timeoutSeconds: /);
  assert.match(problems[6]!, /^spec\.prePull\.maxParallel: /);
  assert.match(prePullProblems({ images: [] })[0]!, /^spec\.prePull\.images: /);
});

test('the command round-trips, and the agent parses nothing but its canonical form', () => {
  const command = prePullCommand(
    { images: ['nginx:1.27'], maxParallel: 3 },
    new Map([['docker.io/library/nginx:1.27', 10]]),
  );
  const value = formatPrePullCommand(command);
  assert.deepEqual(parsePrePullCommand(value), command);
  const bad = [
    '[]',
    '{"images":[{"reference":"nginx"}],"timeoutSeconds":900,"maxParallel":2}',
    '{"images":[{"reference":"docker.io/library/nginx:latest","x":1}],"timeoutSeconds":900,"maxParallel":2}',
    '{"images":[{"reference":"docker.io/library/nginx:latest"}],"timeoutSeconds":9,"maxParallel":2}',
    '{"images":[{"reference":"docker.io/library/nginx:latest"}],"timeoutSeconds":900,"maxParallel":99}',
    '{"images":[{"reference":"docker.io/library/nginx:latest"}],"timeoutSeconds":900,"maxParallel":2,"run":"x"}',
    '{"maxParallel":2,"images":[{"reference":"docker.io/library/nginx:latest"}],"timeoutSeconds":900}',
    '{"images":[{"reference":"docker.io/library/nginx:latest","bytes":-1}],"timeoutSeconds":900,"maxParallel":2}',
    '{"images":[],"timeoutSeconds":900,"maxParallel":2}',
  ];
  for (const text of bad) assert.throws(() => parsePrePullCommand(text), Error, text);
});

test('prePullState counts only the run of the Node’s current boot and services version', () => {
  const node = (reason: string | undefined, mark: string, bootID = '7', version = 'v2') => ({
    metadata: { name: 'n', annotations: { 'winfleet.io/services-version': version } },
    status: {
      nodeInfo: { bootID } as never,
      conditions: reason
        ? [{ type: 'ImagesPrePulled', status: 'True', reason, message: `2 images pulled ${mark}` }]
        : [],
    },
  });
  assert.equal(prePullState(node(undefined, '')), undefined, 'no report yet');
  assert.equal(prePullState(node('PrePulled', prePullRunMark('7', 'v2'))), 'ended');
  assert.equal(prePullState(node('PrePullFailed', prePullRunMark('7', 'v2'))), 'ended');
  assert.equal(prePullState(node('PrePulling', prePullRunMark('7', 'v2'))), 'pulling');
  // Left from before the upgrade (services v1) or the reboot (boot 6): not this run's.
  assert.equal(prePullState(node('PrePulled', prePullRunMark('7', 'v1'))), undefined);
  assert.equal(prePullState(node('PrePulled', prePullRunMark('6', 'v2'))), undefined);
  // A message without the mark (an older agent's) is no report of this run either.
  assert.equal(prePullState(node('PrePulled', '')), undefined);
});

test('hostPrePullStatus: the Node’s ImagesPrePulled condition with the counts its message gives', () => {
  const mark = prePullRunMark('b1', '1.0.0');
  const node = (reason: string, status: string, message: string) => ({
    status: {
      conditions: [
        { type: 'Ready', status: 'True' },
        {
          type: 'ImagesPrePulled',
          status,
          reason,
          message: `${message} ${mark}`,
          lastTransitionTime: new Date('2026-11-29T03:00:00.123Z'),
        },
      ],
    },
  });
  assert.deepEqual(hostPrePullStatus(node('PrePulling', 'False', '2 of 5 images done')), {
    status: 'False',
    reason: 'PrePulling',
    message: `2 of 5 images done ${mark}`,
    imagesDone: 2,
    imagesTotal: 5,
    lastTransitionTime: '2026-11-29T03:00:00Z',
  });
  const counts = (reason: string, status: string, message: string) => {
    const s = hostPrePullStatus(node(reason, status, message));
    return [s?.imagesDone, s?.imagesTotal];
  };
  assert.deepEqual(counts('PrePulled', 'True', 'All 3 images were there'), [3, 3]);
  assert.deepEqual(counts('PrePulled', 'True', '4 images pulled'), [4, 4]);
  assert.deepEqual(
    counts('PrePullFailed', 'False', '1 of 4 images could not be pulled: x'),
    [4, 4],
  );
  assert.deepEqual(counts('PrePullTimedOut', 'False', '3 of 4 images there after 900s'), [3, 4]);
  // No counts where the message gives none; the status never other than True or False.
  assert.deepEqual(counts('PrePullNoSpace', 'False', 'a.test/big:1 (3.7 GiB) need about'), [
    undefined,
    undefined,
  ]);
  assert.equal(hostPrePullStatus(node('PrePulling', 'Unknown', 'x'))?.status, 'False');
  assert.equal(hostPrePullStatus({ status: { conditions: [] } }), undefined);
  assert.equal(hostPrePullStatus(undefined), undefined);
  // A message longer than the CRD allows is cut to 1024 characters.
  assert.equal(
    hostPrePullStatus(node('PrePullFailed', 'False', 'x'.repeat(2000)))?.message.length,
    1024,
  );
});
