/**
 * One DNS query for a name's A records, run inside a pod namespace with `ip netns exec NS node …`:
 *   dns-query-program.ts --server IP --name NAME [--tcp] [--timeout-ms T]
 * Over UDP it asks through node:dns's Resolver with `server` as its only server (one try); with
 * --tcp it sends the query itself over a TCP connection to server:53 (RFC 1035 4.2.2: a
 * two-byte length before each message) and reads the A records of the answer. Prints
 * {"addresses":[…]} and exits 0; exits 1 with the reason on stderr (NXDOMAIN, a timeout, …).
 */
import { randomInt } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { createConnection } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    server: { type: 'string' },
    name: { type: 'string' },
    tcp: { type: 'boolean', default: false },
    'timeout-ms': { type: 'string', default: '3000' },
  },
  strict: true,
});

function fail(code: number, message: string): never {
  process.stderr.write(`dns-query: ${message}\n`);
  process.exit(code);
}

const server = values.server;
const name = values.name;
const timeoutMs = Number(values['timeout-ms']);
if (!server || !name || !Number.isInteger(timeoutMs) || timeoutMs <= 0)
  fail(2, 'usage: dns-query-program.ts --server IP --name NAME [--tcp] [--timeout-ms T]');

/** A standard query with recursion desired for `qname`'s A records (RFC 1035 4.1). */
function encodeQuery(id: number, qname: string): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(id, 0);
  header.writeUInt16BE(0x0100, 2);
  header.writeUInt16BE(1, 4);
  const labels = qname.replace(/\.$/, '').split('.');
  const parts = labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  return Buffer.concat([header, ...parts, Buffer.from([0, 0, 1, 0, 1])]);
}

/** Past a name at `offset` (labels or a compression pointer). */
function skipName(message: Buffer, offset: number): number {
  for (;;) {
    const length = message[offset]!;
    if (length === 0) return offset + 1;
    if ((length & 0xc0) === 0xc0) return offset + 2;
    offset += 1 + length;
  }
}

/** The A records of a response to query `id`; throws on another id or an error rcode. */
function decodeAnswer(message: Buffer, id: number): string[] {
  if (message.readUInt16BE(0) !== id) throw new Error('the answer is for another query');
  const rcode = message.readUInt16BE(2) & 0xf;
  if (rcode !== 0) throw new Error(`rcode ${rcode}${rcode === 3 ? ' (NXDOMAIN)' : ''}`);
  let offset = 12;
  for (let q = message.readUInt16BE(4); q > 0; q--) offset = skipName(message, offset) + 4;
  const addresses: string[] = [];
  for (let a = message.readUInt16BE(6); a > 0; a--) {
    offset = skipName(message, offset);
    const type = message.readUInt16BE(offset);
    const length = message.readUInt16BE(offset + 8);
    offset += 10;
    if (type === 1 && length === 4)
      addresses.push([...message.subarray(offset, offset + 4)].join('.'));
    offset += length;
  }
  return addresses;
}

function queryOverTcp(): Promise<string[]> {
  const id = randomInt(0x10000);
  const query = encodeQuery(id, name!);
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: server, port: 53 });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer over TCP within ${timeoutMs} ms`));
    }, timeoutMs);
    let buffered = Buffer.alloc(0);
    socket.on('connect', () => {
      const length = Buffer.alloc(2);
      length.writeUInt16BE(query.length);
      socket.write(Buffer.concat([length, query]));
    });
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 2 || buffered.length < 2 + buffered.readUInt16BE(0)) return;
      clearTimeout(timer);
      socket.end();
      try {
        resolve(decodeAnswer(buffered.subarray(2, 2 + buffered.readUInt16BE(0)), id));
      } catch (error) {
        reject(error);
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

async function queryOverUdp(): Promise<string[]> {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  resolver.setServers([server!]);
  return resolver.resolve4(name!);
}

try {
  const addresses = await (values.tcp ? queryOverTcp() : queryOverUdp());
  process.stdout.write(`${JSON.stringify({ addresses })}\n`);
} catch (error) {
  fail(1, `${name} from ${server} over ${values.tcp ? 'TCP' : 'UDP'}: ${(error as Error).message}`);
}
