import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isolationOn } from './isolation.ts';

const v2019 = '10.0.17763.6054';
const v2022 = '10.0.20348.2582';
const v2025 = '10.0.26100.1742';

test('process isolation where the build runs the image, Hyper-V for older images, none for newer ones', () => {
  // 2019 hosts run only 2019 images under process isolation.
  assert.deepEqual(isolationOn('10.0.17763', [v2019]), { isolation: 'process', osVersion: v2019 });
  assert.deepEqual(isolationOn('10.0.17763', [v2022]), { isolation: 'none' });
  // 2022 runs 2019 only under Hyper-V isolation.
  assert.deepEqual(isolationOn('10.0.20348', [v2019]), { isolation: 'hyperv', osVersion: v2019 });
  // 2025 runs 2022 images under process isolation (the LTSC before its own), 2019 only Hyper-V.
  assert.deepEqual(isolationOn('10.0.26100', [v2022]), { isolation: 'process', osVersion: v2022 });
  assert.deepEqual(isolationOn('10.0.26100', [v2019]), { isolation: 'hyperv', osVersion: v2019 });
  // A multi-build index: the newest variant the host runs is the one it takes.
  assert.deepEqual(isolationOn('10.0.26100', [v2019, v2022, v2025]), {
    isolation: 'process',
    osVersion: v2025,
  });
  assert.deepEqual(isolationOn('10.0.20348', [v2019, v2025]), {
    isolation: 'hyperv',
    osVersion: v2019,
  });
  // No Windows variant at all; a variant without os.version runs anywhere.
  assert.deepEqual(isolationOn('10.0.20348', []), { isolation: 'none' });
  assert.deepEqual(isolationOn('10.0.20348', ['']), { isolation: 'process', osVersion: '' });
});

test('malformed builds and os.versions are refused, naming the field', () => {
  assert.throws(() => isolationOn('2022', [v2022]), /host Windows build "2022"/);
  assert.throws(() => isolationOn('10.0.20348', ['ltsc2022']), /image os.version "ltsc2022"/);
});
