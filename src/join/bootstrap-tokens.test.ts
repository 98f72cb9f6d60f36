import assert from 'node:assert/strict';
import { test } from 'node:test';
import { offlineInformer } from '../../sim/testkit/synthetic-nodes.ts';
import { type WindowsHost, windowsHostResource } from '../api/windows-host.ts';
import { hostByTokenId } from '../fleet/host-indexes.ts';
import { ownTokenId, tokenIdFor } from './bootstrap-tokens.ts';

const uid = '0b7e4c1a-5d0f-4c59-9a55-1f2b3c4d5e6f';

test('the host behind a token id is the one whose UID it derives from, never a deleting one', () => {
  const hosts = offlineInformer<WindowsHost>(windowsHostResource);
  const host = (
    name: string,
    metadata: Partial<WindowsHost['metadata']>,
    mode: 'SSH' | 'Pull' = 'SSH',
  ) =>
    ({
      metadata: { name, namespace: 'win', ...metadata },
      spec: mode === 'Pull' ? { mode } : { mode, address: '127.0.0.1' },
    }) as WindowsHost;
  hosts.replace([
    host('a', { uid: 'a-uid' }),
    host('win-1', { uid }),
    host('gone', { uid: 'gone-uid', deletionTimestamp: new Date() }),
    host('new', {}),
    host('pulled', { uid: 'pulled-uid' }, 'Pull'),
  ]);
  const hostForTokenId = hostByTokenId(hosts);
  assert.equal(hostForTokenId(tokenIdFor(uid))?.metadata.name, 'win-1');
  assert.equal(hostForTokenId(tokenIdFor('a-uid'))?.metadata.name, 'a');
  assert.equal(hostForTokenId(tokenIdFor('gone-uid')), undefined);
  assert.equal(hostForTokenId('zzzzzz'), undefined);
  // A Pull host joined with a join token: no bootstrap token of its own names it, so a token
  // id derived from its uid (guessable from the WindowsHost) finds nothing.
  assert.equal(hostForTokenId(tokenIdFor('pulled-uid')), undefined);
  assert.equal(hostForTokenId(tokenIdFor('')), undefined);
  assert.equal(ownTokenId({ metadata: {} }), undefined, 'a host not yet created has none');
});
