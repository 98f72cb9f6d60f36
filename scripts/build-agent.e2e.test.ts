/**
 * winfleet-agent.exe is checked without running it (no Windows here): it must be a PE32+ x86-64
 * console program that carries the current agent bundle as its SEA blob, with the fuse flipped.
 * The first run builds it (about half a minute, plus the node.exe download); later runs reuse it.
 */
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { before, describe, test } from 'node:test';
import { buildAgent, bundleAgent } from './build-agent.ts';
import { assertWindowsConsoleExecutable } from './pe-assertions.ts';
import {
  findPeResource,
  listPeResources,
  PE_DIRECTORY_RESOURCE,
  PE_DIRECTORY_SECURITY,
  parsePeFile,
  RT_RCDATA,
  removeCertificateTable,
} from './pe-file.ts';
import { SEA_BLOB_MAGIC, SEA_FUSE, SEA_RESOURCE } from './sea.ts';

// SeaFlags in Node's src/node_sea.h.
const seaFlagDisableWarning = 1 << 0;
const seaFlagUseSnapshot = 1 << 1;
const seaFlagUseCodeCache = 1 << 2;

let exePath: string;
let exe: Buffer;

before(
  async () => {
    exePath = await buildAgent();
    exe = await readFile(exePath);
  },
  { timeout: 10 * 60_000 },
);

function countOccurrences(haystack: Buffer, needle: string): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    count++;
  }
  return count;
}

describe('winfleet-agent.exe', () => {
  test('is a PE32+ x86-64 console executable', () => {
    assertWindowsConsoleExecutable(exe);
  });

  test('carries the agent bundle as its NODE_SEA_BLOB resource', async () => {
    const pe = parsePeFile(exe);
    const blob = findPeResource(pe, RT_RCDATA, SEA_RESOURCE);
    assert.ok(blob, `an RT_RCDATA resource named ${SEA_RESOURCE} exists`);
    const data = Buffer.from(blob.data.buffer, blob.data.byteOffset, blob.data.byteLength);

    assert.equal(data.readUInt32LE(0), SEA_BLOB_MAGIC, 'the blob starts with the SEA magic');
    const flags = data.readUInt32LE(4);
    assert.ok(flags & seaFlagDisableWarning, 'the experimental-SEA warning is disabled');
    assert.equal(flags & seaFlagUseSnapshot, 0, 'no V8 snapshot (Linux-made, unusable on Windows)');
    assert.equal(flags & seaFlagUseCodeCache, 0, 'no code cache (Linux-made, unusable on Windows)');

    const { code } = await bundleAgent();
    assert.ok(data.includes(code), 'the blob holds the current bundle of src/agent/main.ts');
    assert.ok(data.includes('winfleet-agent'), 'the blob holds the agent');
  });

  test('has the SEA fuse flipped, once', () => {
    assert.equal(countOccurrences(exe, SEA_FUSE), 1);
    assert.equal(countOccurrences(exe, `${SEA_FUSE}:1`), 1);
  });

  test('keeps node.exe resources beside the blob', () => {
    const resources = listPeResources(parsePeFile(exe));
    assert.ok(
      resources.some((r) => r.type !== RT_RCDATA),
      `node.exe's own resources (icon, version) are kept: ${resources.map((r) => `${r.type}/${r.name}`).join(', ')}`,
    );
  });

  test("has node.exe's signature removed, not left pointing into the rebuilt resources", () => {
    // The signature would be invalid anyway, and a security directory left pointing at the
    // rebuilt resources would get in the way of re-signing for production.
    assert.deepEqual(parsePeFile(exe).dataDirectories[PE_DIRECTORY_SECURITY], {
      address: 0,
      size: 0,
    });
  });

  test('is reused when nothing changed', async () => {
    const before = await stat(exePath);
    const messages: string[] = [];
    const again = await buildAgent({ onProgress: (m) => messages.push(m) });
    assert.equal(again, exePath);
    assert.equal((await stat(exePath)).mtimeMs, before.mtimeMs);
    assert.ok(
      messages.some((m) => m.startsWith('up to date')),
      messages.join('\n'),
    );
  });
});

describe('parsePeFile on a corrupted copy', () => {
  function corrupt(edit: (bytes: Buffer) => void): Buffer {
    const copy = Buffer.from(exe);
    edit(copy);
    return copy;
  }

  test('without "MZ", says so', () => {
    const bytes = corrupt((b) => b.write('ZZ', 0, 'latin1'));
    assert.throws(() => parsePeFile(bytes), /no "MZ" signature at offset 0 \(found "ZZ"\)/);
  });

  test('with e_lfanew past the end, says which field could not be read', () => {
    const bytes = corrupt((b) => b.writeUInt32LE(b.length + 16, 0x3c));
    assert.throws(
      () => parsePeFile(bytes),
      /Cannot read the PE signature at offset 0x[0-9a-f]+: the file is only \d+ bytes/,
    );
  });

  test('without "PE\\0\\0", says so', () => {
    const bytes = corrupt((b) => b.write('XX', b.readUInt32LE(0x3c), 'latin1'));
    assert.throws(() => parsePeFile(bytes), /no "PE\\0\\0" signature at e_lfanew 0x[0-9a-f]+/);
  });

  test('with an unknown optional header magic, says so', () => {
    const bytes = corrupt((b) => b.writeUInt16LE(0x1234, b.readUInt32LE(0x3c) + 24));
    assert.throws(() => parsePeFile(bytes), /unknown optional header magic 0x1234/);
  });

  test('cut short, fails when the resources are read', () => {
    const pe = parsePeFile(exe.subarray(0, 4096));
    assert.throws(() => listPeResources(pe), /Cannot (read|map) .*/);
  });

  test('with the resource directory outside every section, says so', () => {
    const bytes = corrupt((b) => {
      const pe = parsePeFile(b);
      // Data directories of a PE32+ optional header start 112 bytes in; 8 bytes each.
      const resourceDirectory = pe.peHeaderOffset + 24 + 112 + PE_DIRECTORY_RESOURCE * 8;
      b.writeUInt32LE(0x7fff_fff0, resourceDirectory);
    });
    assert.throws(
      () => listPeResources(parsePeFile(bytes)),
      /Cannot map RVA 0x7ffffff0: it lies outside every section/,
    );
  });

  test('with an inflated resource entry count, says so', () => {
    const bytes = corrupt((b) => {
      const pe = parsePeFile(b);
      const rsrc = pe.sections.find((s) => s.name === '.rsrc');
      assert.ok(rsrc);
      const root =
        rsrc.rawDataOffset +
        (pe.dataDirectories[PE_DIRECTORY_RESOURCE]!.address - rsrc.virtualAddress);
      b.writeUInt16LE(0xffff, root + 14); // NumberOfIdEntries
    });
    assert.throws(
      () => listPeResources(parsePeFile(bytes)),
      // Which check fires depends on how big the resource section (the bundled agent) is.
      /Cannot walk resources: (the root directory at 0x[0-9a-f]+ has \d+ entries, which run past|root resource entry \d+ points to 0x[0-9a-f]+, past) the resource directory's end/,
    );
  });
});

describe('removeCertificateTable', () => {
  function signed(unsigned: Buffer): Buffer {
    const certificate = Buffer.alloc(16, 0xab); // a WIN_CERTIFICATE stand-in, 8-byte aligned
    const bytes = Buffer.concat([unsigned, certificate]);
    const pe = parsePeFile(bytes);
    const entry = pe.dataDirectoriesOffset + PE_DIRECTORY_SECURITY * 8;
    bytes.writeUInt32LE(unsigned.length, entry);
    bytes.writeUInt32LE(certificate.length, entry + 4);
    return bytes;
  }

  test('cuts the certificate table off and clears the security directory', () => {
    const stripped = removeCertificateTable(signed(exe));
    assert.equal(stripped.byteLength, exe.length);
    assert.deepEqual(parsePeFile(stripped).dataDirectories[PE_DIRECTORY_SECURITY], {
      address: 0,
      size: 0,
    });
    assert.ok(Buffer.from(stripped).equals(exe), 'the rest of the image is unchanged');
  });

  test('leaves an unsigned image as it is', () => {
    assert.equal(removeCertificateTable(exe), exe);
  });

  test('refuses a certificate table that is not at the end of the file', () => {
    const bytes = Buffer.concat([signed(exe), Buffer.alloc(64)]);
    assert.throws(() => removeCertificateTable(bytes), /is not at the end of the \d+-byte file/);
  });
});
