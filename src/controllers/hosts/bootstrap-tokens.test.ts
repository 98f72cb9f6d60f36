import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostForTokenId, tokenIdFor } from './bootstrap-tokens.ts';

const uid = '0b7e4c1a-5d0f-4c59-9a55-1f2b3c4d5e6f';

test('the host behind a token id is the one whose UID it derives from, never a deleting one', () => {
  const hosts = [
    { metadata: { uid: 'a-uid', name: 'a' } },
    { metadata: { uid, name: 'win-1' } },
    { metadata: { uid: 'gone-uid', name: 'gone', deletionTimestamp: new Date() } },
  ];
  assert.equal(hostForTokenId(hosts, tokenIdFor(uid))?.metadata.name, 'win-1');
  assert.equal(hostForTokenId(hosts, tokenIdFor('a-uid'))?.metadata.name, 'a');
  assert.equal(hostForTokenId(hosts, tokenIdFor('gone-uid')), undefined);
  assert.equal(hostForTokenId(hosts, 'zzzzzz'), undefined);
  assert.equal(hostForTokenId([{ metadata: {} }], tokenIdFor('')), undefined);
});
