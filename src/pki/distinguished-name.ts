/**
 * Distinguished names byte for byte as Go's crypto/x509 writes them. kube-controller-manager
 * signs with Go, and Go reads a subject its own way (`pkix.Name.FillFromRDNSequence` keeps the
 * last CN; every string type passes), so a subject is only trusted after checking it is
 * exactly the bytes a Go client — a kubelet — writes for the fields expected. Comparing the
 * bytes leaves nothing for two readers to disagree on.
 *
 * The Go rules followed (crypto/x509/pkix/pkix.go, encoding/asn1/marshal.go and asn1.go):
 * - `Name.ToRDNSequence` writes C, ST, L, STREET, POSTALCODE, O, OU, CN, SERIALNUMBER in that
 *   order, one RDN per field holding all of that field's values (so O comes before CN).
 * - `asn1.Marshal` writes a string as a PrintableString when every byte passes `isPrintable`
 *   (letters, digits, space and `'()+,-./:=?`), else as a UTF8String. `system:node:win-a` is
 *   printable, so a kubelet's subject is all PrintableString.
 * - A SET OF is written in DER order: members sorted by their encodings.
 */
import { AsnConvert } from '@peculiar/asn1-schema';
import {
  AttributeTypeAndValue,
  AttributeValue,
  Name,
  RelativeDistinguishedName,
} from '@peculiar/asn1-x509';

export const oidCommonName = '2.5.4.3';
export const oidOrganization = '2.5.4.10';

const labels: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.5': 'SERIALNUMBER',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
  '2.5.4.9': 'STREET',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.17': 'POSTALCODE',
};

/** Go's `isPrintable` with `*` and `&` rejected, as `asn1.Marshal` uses it. */
const goPrintable = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

/** The subject fields winfleet writes; the same names as Go's `pkix.Name`. */
export interface NameFields {
  organizations?: string[];
  commonName?: string;
}

/** The ASN.1 string types a name attribute can be written in. */
export type NameStringType =
  | 'PrintableString'
  | 'UTF8String'
  | 'TeletexString'
  | 'UniversalString'
  | 'BMPString'
  | 'IA5String'
  | 'not a string';

/** One attribute of a name as sent: its type, the string type it was written in, its value. */
export interface NameAttribute {
  /** Object identifier, e.g. 2.5.4.3. */
  type: string;
  /** CN, O… or the identifier when it has no short name. */
  label: string;
  stringType: NameStringType;
  value: string;
}

function goAttribute(type: string, value: string): AttributeTypeAndValue {
  const written = goPrintable.test(value) ? { printableString: value } : { utf8String: value };
  return new AttributeTypeAndValue({ type, value: new AttributeValue(written) });
}

function goRdn(type: string, values: string[]): RelativeDistinguishedName {
  const members = values
    .map((value) => goAttribute(type, value))
    .map((attribute) => ({ attribute, der: Buffer.from(AsnConvert.serialize(attribute)) }))
    .sort((a, b) => Buffer.compare(a.der, b.der));
  return new RelativeDistinguishedName(members.map((m) => m.attribute));
}

/**
 * The DER of a name as Go's `asn1.Marshal(pkix.Name{…}.ToRDNSequence())` writes it.
 *
 * @example goNameDer({ organizations: ['system:nodes'], commonName: 'system:node:win-a' })
 * // SEQUENCE { SET { O PrintableString "system:nodes" }, SET { CN PrintableString "system:node:win-a" } }
 */
export function goNameDer(fields: NameFields): Uint8Array {
  const rdns: RelativeDistinguishedName[] = [];
  if (fields.organizations && fields.organizations.length > 0) {
    rdns.push(goRdn(oidOrganization, fields.organizations));
  }
  if (fields.commonName) rdns.push(goRdn(oidCommonName, [fields.commonName]));
  return new Uint8Array(AsnConvert.serialize(new Name(rdns)));
}

function describeValue(value: AttributeValue): { stringType: NameStringType; value: string } {
  const kinds: [keyof AttributeValue, NameStringType][] = [
    ['printableString', 'PrintableString'],
    ['utf8String', 'UTF8String'],
    ['teletexString', 'TeletexString'],
    ['universalString', 'UniversalString'],
    ['bmpString', 'BMPString'],
    ['ia5String', 'IA5String'],
  ];
  for (const [field, stringType] of kinds) {
    const text = value[field];
    if (typeof text === 'string') return { stringType, value: text };
  }
  const raw = value.anyValue ? Buffer.from(value.anyValue) : Buffer.alloc(0);
  return { stringType: 'not a string', value: raw.toString('hex') };
}

/** The RDNs of a parsed name in the order they were sent, each with its attributes. */
export function nameAttributes(name: Name): NameAttribute[][] {
  return name.map((rdn) =>
    rdn.map((attribute) => ({
      type: attribute.type,
      label: labels[attribute.type] ?? attribute.type,
      ...describeValue(attribute.value),
    })),
  );
}

/** Reads the RDNs of a DER name; throws if it is not one. */
export function readName(der: Uint8Array): NameAttribute[][] {
  return nameAttributes(AsnConvert.parse(der, Name));
}

/**
 * A name for messages, in the order sent (not RFC 4514's reversed order), with the string
 * type of every value that is not a PrintableString and quotes around odd values so trailing
 * spaces, NULs and look-alike letters show: `O=system:nodes, CN=system:node:win-a`.
 */
export function formatName(rdns: NameAttribute[][]): string {
  const value = (a: NameAttribute) => {
    const plain = /^[\x21-\x7e]+$/.test(a.value) && !/[",+\\]/.test(a.value);
    const shown = plain ? a.value : quoteValue(a.value);
    return a.stringType === 'PrintableString' ? shown : `${a.stringType}:${shown}`;
  };
  return rdns.map((rdn) => rdn.map((a) => `${a.label}=${value(a)}`).join('+')).join(', ');
}

/**
 * A value in double quotes with everything outside printable ASCII escaped, so a Cyrillic
 * 'е', a fullwidth ':' or a trailing NUL cannot pass for the expected text in a message:
 * `"system:nod\u{435}"`.
 */
export function quoteValue(value: string): string {
  const escapeChar = (c: string) =>
    c === '"' || c === '\\' ? `\\${c}` : `\\u{${c.codePointAt(0)!.toString(16)}}`;
  return `"${value.replace(/[^\x20-\x7e]|["\\]/gu, escapeChar)}"`;
}

/** True when two byte strings are the same. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}
