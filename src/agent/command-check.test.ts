/**
 * commandView from the attacker's side: what a principal that may patch the Node (or the node
 * itself) can put there — no signature, a signature made for another node, another Node
 * object, another boot or another command, an older signed value saved and put back — is
 * taken out of the agent's view, with a log line that never shows the signature.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import {
  deconfigureRequestAnnotation,
  desiredServicesVersionAnnotation,
  installUpdatesAnnotation,
  rebootRequestAnnotation,
} from '../api/node-annotations.ts';
import { type CommandAnnotation, signatureAnnotation } from '../api/node-commands.ts';
import { CommandSigner } from '../fleet/command-signer.ts';
import type { AgentConfig } from './agent-config.ts';
import type { AgentContext } from './agent-context.ts';
import { commandView } from './command-check.ts';

const t0 = Date.UTC(2026, 10, 28, 12, 0, 0);

function world(options: { pullsPayload?: boolean } = {}) {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const files = new Map<string, Buffer>();
  const log: string[] = [];
  const context = {
    hostOS: {
      readFile: async (path: string) => files.get(path),
      writeFile: async (path: string, data: string) => {
        files.set(path, Buffer.from(data));
      },
    },
    stderr: (text: string) => log.push(text),
  } as unknown as AgentContext;
  const config = {
    nodeName: 'win-1',
    operatorNamespace: 'winfleet-system',
    ...(options.pullsPayload ? { pullsPayload: true } : {}),
  } as AgentConfig;
  let clock = t0;
  const signer = new CommandSigner(privateKey, () => clock);
  const node = (
    annotations: Record<string, string>,
    facts: { name?: string; uid?: string; bootId?: string } = {},
  ): k8s.V1Node => ({
    metadata: { name: facts.name ?? 'win-1', uid: facts.uid ?? 'uid-1', annotations },
    status: { nodeInfo: { bootID: facts.bootId ?? 'boot-1' } as k8s.V1NodeSystemInfo },
  });
  /** The annotations the operator writes for `annotation` = `value` on `target`. */
  const signed = (target: k8s.V1Node, annotation: CommandAnnotation, value: string) =>
    signer.annotations(target, annotation, value) as Record<string, string>;
  const view = async (n: k8s.V1Node, now = clock) =>
    (await commandView(context, async () => pem, config, n, now)).metadata?.annotations ?? {};
  return {
    log,
    node,
    signed,
    view,
    setClock: (ms: number) => {
      clock = ms;
    },
  };
}

test('unsigned, forged or misdirected commands are not in the view; signed ones are', async () => {
  const w = world();
  const bare = w.node({});
  // The operator's own signatures, for this node, Node object and boot.
  const good = {
    ...w.signed(bare, rebootRequestAnnotation, 'r1'),
    ...w.signed(bare, installUpdatesAnnotation, 'Security'),
    ...w.signed(bare, desiredServicesVersionAnnotation, 'v2'),
  };
  assert.deepEqual(await w.view(w.node(good)), good);

  const forged = `v1.${Math.floor(t0 / 1000)}.${'A'.repeat(86)}`;
  const cases: [string, k8s.V1Node][] = [
    ['no signature', w.node({ [rebootRequestAnnotation]: 'r1' })],
    [
      'a forged signature',
      w.node({
        [rebootRequestAnnotation]: 'r1',
        [signatureAnnotation(rebootRequestAnnotation)]: forged,
      }),
    ],
    [
      'another node’s',
      w.node(w.signed(w.node({}, { name: 'win-2' }), rebootRequestAnnotation, 'r1')),
    ],
    [
      'an earlier Node object’s',
      w.node(w.signed(w.node({}, { uid: 'uid-0' }), rebootRequestAnnotation, 'r1')),
    ],
    [
      'another boot’s',
      w.node(w.signed(w.node({}, { bootId: 'boot-0' }), rebootRequestAnnotation, 'r1')),
    ],
    [
      'another command’s signature',
      w.node({
        [rebootRequestAnnotation]: 'v2',
        [signatureAnnotation(rebootRequestAnnotation)]:
          good[signatureAnnotation(desiredServicesVersionAnnotation)]!,
      }),
    ],
    [
      'another value',
      w.node({
        ...w.signed(bare, rebootRequestAnnotation, 'r1'),
        [rebootRequestAnnotation]: 'r2',
      }),
    ],
  ];
  for (const [what, n] of cases) {
    const annotations = await w.view(n);
    assert.equal(annotations[rebootRequestAnnotation], undefined, what);
  }
  assert.ok(w.log.length >= 3, w.log.join(''));
  for (const line of w.log) {
    assert.match(line, /^Ignoring winfleet\.io\/reboot-request=/);
    assert.ok(!line.includes(forged) && !line.includes('v1.'), `no signature in: ${line}`);
  }
});

test('a signed value saved and put back later is refused (replays)', async () => {
  const w = world();
  const bare = w.node({});
  const v1 = w.signed(bare, desiredServicesVersionAnnotation, 'v1');
  w.setClock(t0 + 60_000);
  const v2 = w.signed(bare, desiredServicesVersionAnnotation, 'v2');
  assert.equal((await w.view(w.node(v1)))[desiredServicesVersionAnnotation], 'v1');
  assert.equal((await w.view(w.node(v2)))[desiredServicesVersionAnnotation], 'v2');
  // The downgrade to v1, with the operator's own earlier signature: refused.
  assert.equal((await w.view(w.node(v1)))[desiredServicesVersionAnnotation], undefined);
  assert.match(w.log.join(''), /a replay/);

  // A level obeyed, then withdrawn by the operator, then put back: spent.
  const install = w.signed(bare, installUpdatesAnnotation, 'Security');
  assert.equal((await w.view(w.node(install)))[installUpdatesAnnotation], 'Security');
  assert.equal((await w.view(w.node({})))[installUpdatesAnnotation], undefined);
  assert.equal((await w.view(w.node(install)))[installUpdatesAnnotation], undefined);
  // The operator's next one is newer: obeyed.
  w.setClock(t0 + 120_000);
  const next = w.signed(bare, installUpdatesAnnotation, 'Security');
  assert.equal((await w.view(w.node(next)))[installUpdatesAnnotation], 'Security');
  // Past its lifetime by the host's clock: no longer obeyed.
  assert.equal(
    (await w.view(w.node(next), t0 + 120_000 + 3601_000))[installUpdatesAnnotation],
    undefined,
  );
});

test('a deconfigure request is obeyed only on a host that joined by command', async () => {
  const ssh = world();
  const request = 'f0e1d2c3-0000-4000-8000-000000000001';
  const signed = ssh.signed(ssh.node({}), deconfigureRequestAnnotation, request);
  assert.equal((await ssh.view(ssh.node(signed)))[deconfigureRequestAnnotation], undefined);
  assert.match(ssh.log.join(''), /did not join by command/);
  const pull = world({ pullsPayload: true });
  const pulled = pull.signed(pull.node({}), deconfigureRequestAnnotation, request);
  assert.equal((await pull.view(pull.node(pulled)))[deconfigureRequestAnnotation], request);
});
