/**
 * Property test of the kubelet subject rule, through real CSRs: generated subjects (repeated
 * CNs, multi-valued and reordered RDNs, extra attribute types, other string types, look-alike
 * letters, trailing spaces and NULs) are signed into PKCS#10 DER, parsed and decided. None is
 * approved unless it is exactly the subject a kubelet's Go x509 writes; those are approved.
 *
 * The seed is printed; `WINFLEET_SEED=<seed>` replays a run.
 */
// @peculiar/x509 needs the Reflect metadata polyfill before it loads.
import 'reflect-metadata';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AsnConvert } from '@peculiar/asn1-schema';
import {
  AttributeTypeAndValue,
  AttributeValue,
  Name,
  RelativeDistinguishedName,
} from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import fc from 'fast-check';
import { hostAnnotation, hostIdentity } from '../../api/node-annotations.ts';
import type { WindowsHost } from '../../api/windows-host.ts';
import { generateKeyPair, parseCsrPem } from '../../pki/certificates.ts';
import { sameBytes } from '../../pki/distinguished-name.ts';
import { apiServerNamesOf } from './api-server-names.ts';
import {
  type CsrLookup,
  clientSigner,
  decideKubeletCsr,
  servingSigner,
} from './kubelet-csr-policy.ts';

type StringType = 'printableString' | 'utf8String' | 'bmpString' | 'teletexString' | 'ia5String';
interface Attribute {
  type: string;
  stringType: StringType;
  value: string;
}
type Subject = Attribute[][];

const oid = { CN: '2.5.4.3', O: '2.5.4.10', OU: '2.5.4.11', C: '2.5.4.6', SN: '2.5.4.5' };
const o: Attribute = { type: oid.O, stringType: 'printableString', value: 'system:nodes' };
const cn = (node: string): Attribute => ({
  type: oid.CN,
  stringType: 'printableString',
  value: `system:node:${node}`,
});
const canonical = (node: string): Subject => [[o], [cn(node)]];

const validNode = fc.stringMatching(
  /^[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?){0,2}$/,
);
const nodeName = fc.oneof(
  { weight: 6, arbitrary: validNode },
  {
    weight: 1,
    arbitrary: fc.constantFrom('Win-A', 'win_a', '-win', 'win-', 'win..a', 'wіn-a', 'ｗin'),
  },
);
const isValidNode = (name: string) =>
  name.length <= 253 &&
  /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name);

/** Cyrillic and fullwidth look-alikes of the letters in system:node(s). */
const lookAlikes: Record<string, string[]> = {
  e: ['е', 'ｅ'],
  o: ['о', 'ο'],
  s: ['ѕ', 'ｓ'],
  y: ['у'],
  ':': ['：', '꞉'],
  m: ['ｍ'],
};

const stringType = fc.constantFrom<StringType>(
  'utf8String',
  'bmpString',
  'teletexString',
  'ia5String',
);
const extraAttribute = (other: string): fc.Arbitrary<Attribute> =>
  fc.oneof(
    fc.constant(cn(other)),
    fc.constant({ ...o, value: 'system:masters' }),
    fc.constant({ ...o }),
    fc.record({
      type: fc.constantFrom(oid.OU, oid.C, oid.SN, '1.2.3.4', '2.5.4.3.1'),
      stringType: fc.constant<StringType>('printableString'),
      value: fc.constantFrom('system:nodes', 'x', `system:node:${other}`),
    }),
  );

type Mutation = (s: Subject) => Subject;
const at = <T>(list: T[], i: number) => i % Math.max(list.length, 1);
const mapAttribute = (s: Subject, i: number, f: (a: Attribute) => Attribute): Subject => {
  const flat = s.flat();
  if (flat.length === 0) return s;
  const target = flat[at(flat, i)];
  return s.map((rdn) => rdn.map((a) => (a === target ? f(a) : a)));
};

const mutation = (other: string): fc.Arbitrary<Mutation> =>
  fc.oneof(
    // Another RDN anywhere: a second CN naming another node is the attack of issue 8.
    fc.tuple(fc.nat(), extraAttribute(other)).map(
      ([i, a]) =>
        (s: Subject) =>
          s.toSpliced(i % (s.length + 1), 0, [a]),
    ),
    // An attribute added to an RDN (multi-valued RDN).
    fc.tuple(fc.nat(), extraAttribute(other)).map(
      ([i, a]) =>
        (s: Subject) =>
          s.map((rdn, j) => (j === at(s, i) ? [...rdn, a] : rdn)),
    ),
    // All RDNs merged into one, in either order.
    fc.boolean().map((reverse) => (s: Subject) => {
      const flat = s.flat();
      return [reverse ? flat.reverse() : flat];
    }),
    fc.constant((s: Subject) => s.toReversed()),
    fc.nat().map((i) => (s: Subject) => s.toSpliced(at(s, i), 1)),
    fc.tuple(fc.nat(), stringType).map(
      ([i, t]) =>
        (s: Subject) =>
          mapAttribute(s, i, (a) => ({ ...a, stringType: t })),
    ),
    fc.tuple(fc.nat(), fc.constantFrom(' ', '\u0000', '.', '\n'), fc.boolean()).map(
      ([i, extra, lead]) =>
        (s: Subject) =>
          mapAttribute(s, i, (a) => ({ ...a, value: lead ? extra + a.value : a.value + extra })),
    ),
    fc.tuple(fc.nat(), fc.nat()).map(
      ([i, k]) =>
        (s: Subject) =>
          mapAttribute(s, i, (a) => {
            const places = [...a.value].flatMap((c, p) => (lookAlikes[c] ? [p] : []));
            if (places.length === 0) return a;
            const p = places[k % places.length]!;
            const chars = [...a.value];
            const options = lookAlikes[chars[p]!]!;
            chars[p] = options[k % options.length]!;
            return { ...a, value: chars.join('') };
          }),
    ),
    fc.nat().map((i) => (s: Subject) => mapAttribute(s, i, (a) => ({ ...a, value: '' }))),
    fc
      .nat()
      .map(
        (i) => (s: Subject) => mapAttribute(s, i, (a) => ({ ...a, value: a.value.toUpperCase() })),
      ),
  );

const world = fc.tuple(nodeName, validNode).chain(([node, other]) =>
  fc.record({
    node: fc.constant(node),
    other: fc.constant(other),
    mutations: fc.oneof(
      { weight: 1, arbitrary: fc.constant<Mutation[]>([]) },
      { weight: 3, arbitrary: fc.array(mutation(other), { minLength: 1, maxLength: 3 }) },
    ),
  }),
);

/** PrintableString, IA5String and TeletexString carry bytes; other text goes as UTF8String. */
function encodable(a: Attribute): Attribute {
  const ascii = [...a.value].every((c) => c.codePointAt(0)! < 0x80);
  return ascii || ['utf8String', 'bmpString'].includes(a.stringType)
    ? a
    : { ...a, stringType: 'utf8String' };
}

function nameDer(subject: Subject): Uint8Array {
  const rdn = (attributes: Attribute[]) =>
    new RelativeDistinguishedName(
      attributes.map(
        (a) =>
          new AttributeTypeAndValue({
            type: a.type,
            value: new AttributeValue({ [a.stringType]: a.value }),
          }),
      ),
    );
  return new Uint8Array(AsnConvert.serialize(new Name(subject.map(rdn))));
}

const sameSubject = (a: Subject, b: Subject) => JSON.stringify(a) === JSON.stringify(b);

const network = {
  serviceCIDR: '10.96.0.0/12',
  podCIDR: '10.244.0.0/16',
  clusterDomain: 'cluster.local',
};

function hostNamed(nodeName: string): WindowsHost {
  return {
    apiVersion: 'winfleet.io/v1alpha1',
    kind: 'WindowsHost',
    metadata: { name: 'win-a', namespace: 'winfleet-system', uid: 'uid-a' },
    spec: { address: '127.0.0.11', username: 'Administrator', sshKeySecretRef: { name: 'k' } },
    status: { nodeName, addresses: ['127.0.0.11'] },
  } as WindowsHost;
}

test('only the exact kubelet subject is approved, over generated subjects', async (t) => {
  const seed = Number(process.env.WINFLEET_SEED ?? Math.floor(Math.random() * 2 ** 31));
  t.diagnostic(`fast-check seed ${seed} (replay with WINFLEET_SEED=${seed})`);
  console.log(`kubelet subject property: fast-check seed ${seed}`);
  const keys = await generateKeyPair();
  let approved = 0;
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(world, async ({ node, other, mutations }) => {
      const subject = mutations
        .reduce((s, m) => m(s), canonical(node))
        .map((rdn) => rdn.map(encodable));
      const der = nameDer(subject);
      const csr = await x509.Pkcs10CertificateRequestGenerator.create({
        name: new x509.Name(der),
        keys,
        signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      });
      const parsed = parseCsrPem(csr.toString('pem'));
      assert.ok(sameBytes(parsed.subjectDer, der), 'the CSR carries the subject built');
      const host = hostNamed(node);
      // Before the join (no Node yet) for the bootstrap CSR; after it for the node's own.
      const joined = {
        metadata: { name: node, annotations: { [hostAnnotation]: hostIdentity(host) } },
      };
      const lookup = (hasJoined: boolean): CsrLookup => ({
        hostForToken: async () => host,
        hostsForNode: (name) => (name === node ? [host] : []),
        node: (name) => (hasJoined && name === node ? joined : undefined),
        nodeHolding: () => undefined,
        network: () => network,
        apiServerNames: async () => apiServerNamesOf(),
      });
      const expected = isValidNode(node) && sameSubject(subject, canonical(node));
      const client = await decideKubeletCsr(
        {
          name: 'c',
          signerName: clientSigner,
          username: 'system:bootstrap:abcdef',
          groups: ['system:bootstrappers', 'system:bootstrappers:winfleet'],
          usages: ['digital signature', 'key encipherment', 'client auth'],
          parsed,
        },
        lookup(false),
      );
      const renewal = await decideKubeletCsr(
        {
          name: 'r',
          signerName: clientSigner,
          username: `system:node:${node}`,
          groups: ['system:nodes', 'system:authenticated'],
          usages: ['digital signature', 'client auth'],
          parsed,
        },
        lookup(true),
      );
      const serving = await decideKubeletCsr(
        {
          name: 's',
          signerName: servingSigner,
          username: `system:node:${node}`,
          groups: ['system:nodes', 'system:authenticated'],
          usages: ['digital signature', 'key encipherment', 'server auth'],
          parsed,
        },
        lookup(true),
      );
      const want = expected ? 'approve' : 'deny';
      const context = `node ${JSON.stringify(node)}, other ${other}, subject ${JSON.stringify(subject)}`;
      assert.equal(client.action, want, `client CSR: ${client.reason}; ${context}`);
      assert.equal(renewal.action, want, `renewal CSR: ${renewal.reason}; ${context}`);
      assert.equal(serving.action, want, `serving CSR: ${serving.reason}; ${context}`);
      if (expected) approved++;
      else refused++;
    }),
    {
      seed,
      numRuns: 1200,
      examples: [
        // Issue 8: a second CN after the expected ones (Go keeps the last), and the swap.
        [
          {
            node: 'win-a',
            other: 'lab-linux-1',
            mutations: [() => [[cn('win-a')], [o], [cn('lab-linux-1')]]],
          },
        ],
        [
          {
            node: 'win-a',
            other: 'lab-linux-1',
            mutations: [() => [[cn('lab-linux-1')], [o], [cn('win-a')]]],
          },
        ],
        [{ node: 'win-a', other: 'x', mutations: [] }],
      ],
    },
  );
  t.diagnostic(`${approved} canonical subjects approved, ${refused} others refused`);
  assert.ok(approved >= 100, `only ${approved} canonical subjects were generated`);
  assert.ok(refused >= 500, `only ${refused} non-canonical subjects were generated`);
});
