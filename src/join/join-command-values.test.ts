import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  caCertHashProblem,
  joinTokenProblem,
  parseCaCertHash,
  parseJoinToken,
} from './join-command-values.ts';

test('a bootstrap token splits into id and secret; anything else is refused unquoted', () => {
  assert.deepEqual(parseJoinToken('abcdef.0123456789abcdef'), {
    id: 'abcdef',
    secret: '0123456789abcdef',
  });
  for (const bad of [
    'ABCDEF.0123456789abcdef',
    'abcdef.0123456789abcde',
    'abcdef0123456789abcdef',
    'abcdef.0123456789abcdef\n',
    ' abcdef.0123456789abcdef',
    'abcdef.0123456789abcdeF',
    'abcdef:0123456789abcdef',
  ]) {
    assert.equal(parseJoinToken(bad), undefined, bad);
    const problem = joinTokenProblem(bad);
    assert.ok(problem);
    assert.ok(!problem.includes('0123456789abcde'), 'the secret is never echoed');
  }
  assert.equal(joinTokenProblem('abcdef.0123456789abcdef'), undefined);
});

test('a CA hash is sha256: and 64 hex digits, upper case accepted as kubeadm does', () => {
  const hex = '779e02b29905ad34c557aa7f17466bf3c1c70d308712a146151e4fc51d0d2768';
  assert.equal(parseCaCertHash(`sha256:${hex}`), `sha256:${hex}`);
  assert.equal(parseCaCertHash(`sha256:${hex.toUpperCase()}`), `sha256:${hex}`);
  for (const bad of [
    hex,
    `sha1:${hex}`,
    `sha256:${hex.slice(1)}`,
    `sha256:${hex}0`,
    `SHA256 ${hex}`,
  ]) {
    assert.equal(parseCaCertHash(bad), undefined, bad);
    assert.match(caCertHashProblem(bad)!, /not "sha256:" and the 64 hex digits/);
  }
});
