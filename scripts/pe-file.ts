/**
 * A reader for Windows PE executables, just enough to check what scripts/build-agent.ts produces
 * without running it: the headers (machine, PE32/PE32+, subsystem), the section table and the
 * resource tree (.rsrc), where postject puts the single executable application blob.
 *
 * Every read is bounds-checked, so a truncated or corrupted file fails with an error that says
 * which structure could not be read and where, never with garbage values.
 *
 * Layout reference: Microsoft's "PE Format" specification (learn.microsoft.com/windows/win32/
 * debug/pe-format).
 *
 * @example
 * const pe = parsePeFile(await readFile('winfleet-agent.exe'));
 * pe.machine === PE_MACHINE_AMD64;
 * findPeResource(pe, RT_RCDATA, 'NODE_SEA_BLOB')?.data;
 */

/** COFF machine type of x86-64 images. */
export const PE_MACHINE_AMD64 = 0x8664;
/** Optional-header magic of PE32 (32-bit) images. */
export const PE32_MAGIC = 0x10b;
/** Optional-header magic of PE32+ (64-bit) images. */
export const PE32_PLUS_MAGIC = 0x20b;
/** Subsystem of console programs (IMAGE_SUBSYSTEM_WINDOWS_CUI). */
export const PE_SUBSYSTEM_WINDOWS_CUI = 3;
/** COFF characteristic: the image is executable (IMAGE_FILE_EXECUTABLE_IMAGE). */
export const PE_FILE_EXECUTABLE_IMAGE = 0x0002;
/** COFF characteristic: the image is a DLL (IMAGE_FILE_DLL). */
export const PE_FILE_DLL = 0x2000;
/** Resource type of raw application data, the type postject injects (RT_RCDATA). */
export const RT_RCDATA = 10;

/** Indexes into the optional header's data directories. */
export const PE_DIRECTORY_RESOURCE = 2;
export const PE_DIRECTORY_SECURITY = 4;

export interface PeSection {
  /** Up to 8 ASCII characters, e.g. ".rsrc". */
  name: string;
  virtualAddress: number;
  virtualSize: number;
  rawDataOffset: number;
  rawDataSize: number;
}

export interface PeDataDirectory {
  /** An RVA, except for the security directory, where it is a file offset. */
  address: number;
  size: number;
}

export interface PeFile {
  bytes: Uint8Array;
  /** File offset of the "PE\0\0" signature (e_lfanew). */
  peHeaderOffset: number;
  machine: number;
  characteristics: number;
  /** PE32_MAGIC or PE32_PLUS_MAGIC. */
  optionalHeaderMagic: number;
  subsystem: number;
  dataDirectories: PeDataDirectory[];
  /** File offset of the first data directory entry. */
  dataDirectoriesOffset: number;
  sections: PeSection[];
}

export interface PeResource {
  /** A numeric id (RT_RCDATA) or a name, as the resource directory stores it. */
  type: number | string;
  name: number | string;
  language: number;
  codePage: number;
  /** The resource's bytes (a view into PeFile.bytes). */
  data: Uint8Array;
}

const coffHeaderSize = 20;
const sectionHeaderSize = 40;
const resourceDirectorySize = 16;
const resourceEntrySize = 8;
const highBit = 0x8000_0000;

/** Bounds-checked little-endian reads that name what they were reading when they fail. */
function byteReader(bytes: Uint8Array) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  function check(offset: number, length: number, what: string): void {
    if (offset < 0 || offset + length > bytes.byteLength) {
      throw new Error(
        `Cannot read ${what} at offset 0x${offset.toString(16)}: the file is only ${bytes.byteLength} bytes`,
      );
    }
  }
  return {
    u16(offset: number, what: string): number {
      check(offset, 2, what);
      return view.getUint16(offset, true);
    },
    u32(offset: number, what: string): number {
      check(offset, 4, what);
      return view.getUint32(offset, true);
    },
    slice(offset: number, length: number, what: string): Uint8Array {
      check(offset, length, what);
      return bytes.subarray(offset, offset + length);
    },
  };
}

function hex(value: number): string {
  return `0x${value.toString(16)}`;
}

function printable(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
}

/**
 * Parses the DOS, COFF and optional headers and the section table. Throws when the file is not a
 * PE image (no "MZ" or "PE\0\0" signature, unknown optional-header magic) or is cut short.
 */
export function parsePeFile(bytes: Uint8Array): PeFile {
  const read = byteReader(bytes);
  const mz = read.slice(0, 2, 'the DOS header');
  if (mz[0] !== 0x4d || mz[1] !== 0x5a) {
    throw new Error(
      `Cannot parse PE file: no "MZ" signature at offset 0 (found "${printable(mz)}")`,
    );
  }
  const peHeaderOffset = read.u32(0x3c, 'e_lfanew');
  const signature = read.slice(peHeaderOffset, 4, 'the PE signature');
  if (
    !(signature[0] === 0x50 && signature[1] === 0x45 && signature[2] === 0 && signature[3] === 0)
  ) {
    throw new Error(
      `Cannot parse PE file: no "PE\\0\\0" signature at e_lfanew ${hex(peHeaderOffset)} (found "${printable(signature)}")`,
    );
  }

  const coff = peHeaderOffset + 4;
  const machine = read.u16(coff, 'the COFF machine');
  const sectionCount = read.u16(coff + 2, 'the COFF section count');
  const optionalHeaderSize = read.u16(coff + 16, 'the optional header size');
  const characteristics = read.u16(coff + 18, 'the COFF characteristics');

  const optional = coff + coffHeaderSize;
  const optionalHeaderMagic = read.u16(optional, 'the optional header magic');
  let directoryCountOffset: number;
  if (optionalHeaderMagic === PE32_PLUS_MAGIC) directoryCountOffset = optional + 108;
  else if (optionalHeaderMagic === PE32_MAGIC) directoryCountOffset = optional + 92;
  else {
    throw new Error(
      `Cannot parse PE file: unknown optional header magic ${hex(optionalHeaderMagic)} (expected 0x10b or 0x20b)`,
    );
  }
  const subsystem = read.u16(optional + 68, 'the subsystem');
  const directoryCount = read.u32(directoryCountOffset, 'the data directory count');
  const directoriesEnd = directoryCountOffset + 4 + directoryCount * 8;
  if (directoriesEnd > optional + optionalHeaderSize) {
    throw new Error(
      `Cannot parse PE file: ${directoryCount} data directories do not fit in an optional header of ${optionalHeaderSize} bytes`,
    );
  }
  const dataDirectories: PeDataDirectory[] = [];
  for (let i = 0; i < directoryCount; i++) {
    const at = directoryCountOffset + 4 + i * 8;
    dataDirectories.push({
      address: read.u32(at, `data directory ${i}`),
      size: read.u32(at + 4, `data directory ${i}`),
    });
  }

  const sections: PeSection[] = [];
  const sectionTable = optional + optionalHeaderSize;
  for (let i = 0; i < sectionCount; i++) {
    const at = sectionTable + i * sectionHeaderSize;
    const what = `section header ${i}`;
    const rawName = read.slice(at, 8, what);
    const nameEnd = rawName.indexOf(0);
    sections.push({
      name: printable(rawName.subarray(0, nameEnd === -1 ? 8 : nameEnd)),
      virtualSize: read.u32(at + 8, what),
      virtualAddress: read.u32(at + 12, what),
      rawDataSize: read.u32(at + 16, what),
      rawDataOffset: read.u32(at + 20, what),
    });
  }

  return {
    bytes,
    peHeaderOffset,
    machine,
    characteristics,
    optionalHeaderMagic,
    subsystem,
    dataDirectories,
    dataDirectoriesOffset: directoryCountOffset + 4,
    sections,
  };
}

/** Maps an RVA to a file offset through the section that holds it. */
export function rvaToFileOffset(pe: PeFile, rva: number): number {
  for (const s of pe.sections) {
    if (
      rva >= s.virtualAddress &&
      rva < s.virtualAddress + Math.max(s.virtualSize, s.rawDataSize)
    ) {
      const delta = rva - s.virtualAddress;
      if (delta >= s.rawDataSize) {
        throw new Error(
          `Cannot map RVA ${hex(rva)}: it lies in the uninitialized part of "${s.name}"`,
        );
      }
      return s.rawDataOffset + delta;
    }
  }
  throw new Error(`Cannot map RVA ${hex(rva)}: it lies outside every section`);
}

/**
 * Walks the resource tree (type → name → language) and returns every resource, with its data.
 * Returns an empty list when the image has no resource directory.
 */
export function listPeResources(pe: PeFile): PeResource[] {
  const directory = pe.dataDirectories[PE_DIRECTORY_RESOURCE];
  if (!directory || directory.address === 0 || directory.size === 0) return [];
  const read = byteReader(pe.bytes);
  const root = rvaToFileOffset(pe, directory.address);

  const end = root + directory.size;

  function entries(offset: number, level: string) {
    const what = `the ${level} resource directory`;
    const count =
      read.u16(offset + 12, what) + // named entries
      read.u16(offset + 14, what); // id entries
    const tableEnd = offset + resourceDirectorySize + count * resourceEntrySize;
    if (tableEnd > end) {
      throw new Error(
        `Cannot walk resources: the ${level} directory at ${hex(offset)} has ${count} entries, which run past the resource directory's end at ${hex(end)}`,
      );
    }
    const list: { id: number | string; target: number; isDirectory: boolean }[] = [];
    for (let i = 0; i < count; i++) {
      const at = offset + resourceDirectorySize + i * resourceEntrySize;
      const nameField = read.u32(at, `${level} resource entry ${i}`);
      const targetField = read.u32(at + 4, `${level} resource entry ${i}`);
      const target = root + (targetField & ~highBit);
      if (target >= end) {
        throw new Error(
          `Cannot walk resources: ${level} resource entry ${i} points to ${hex(target)}, past the resource directory's end at ${hex(end)}`,
        );
      }
      list.push({
        id: nameField & highBit ? resourceName(root + (nameField & ~highBit)) : nameField,
        target,
        isDirectory: (targetField & highBit) !== 0,
      });
    }
    return list;
  }

  function resourceName(offset: number): string {
    const length = read.u16(offset, 'a resource name');
    const units = read.slice(offset + 2, length * 2, 'a resource name');
    return new TextDecoder('utf-16le').decode(units);
  }

  function expectDirectory(entry: { id: number | string; isDirectory: boolean }, level: string) {
    if (!entry.isDirectory) {
      throw new Error(`Cannot walk resources: ${level} entry "${entry.id}" is not a directory`);
    }
  }

  const resources: PeResource[] = [];
  for (const type of entries(root, 'root')) {
    expectDirectory(type, 'type');
    for (const name of entries(type.target, 'type')) {
      expectDirectory(name, 'name');
      for (const language of entries(name.target, 'name')) {
        if (language.isDirectory) {
          throw new Error(
            `Cannot walk resources: language entry "${language.id}" of "${name.id}" is a directory, not data`,
          );
        }
        const dataRva = read.u32(language.target, 'a resource data entry');
        const size = read.u32(language.target + 4, 'a resource data entry');
        const codePage = read.u32(language.target + 8, 'a resource data entry');
        const data = read.slice(rvaToFileOffset(pe, dataRva), size, `resource "${name.id}"`);
        resources.push({
          type: type.id,
          name: name.id,
          language: typeof language.id === 'number' ? language.id : 0,
          codePage,
          data,
        });
      }
    }
  }
  return resources;
}

/**
 * The first resource of that type and name (names compare case-insensitively, as FindResource
 * does), or undefined.
 */
export function findPeResource(
  pe: PeFile,
  type: number | string,
  name: number | string,
): PeResource | undefined {
  const same = (a: number | string, b: number | string) =>
    typeof a === 'string' && typeof b === 'string' ? a.toUpperCase() === b.toUpperCase() : a === b;
  return listPeResources(pe).find((r) => same(r.type, type) && same(r.name, name));
}

/**
 * A copy of the image without its Authenticode signature, as `signtool remove /s` makes it: the
 * security directory cleared, the certificate table (which signing appends at the end of the
 * file) cut off and the header checksum zeroed (0 means "not checked"). Returns the bytes as
 * they are when the image is not signed.
 */
export function removeCertificateTable(bytes: Uint8Array): Uint8Array {
  const pe = parsePeFile(bytes);
  const table = pe.dataDirectories[PE_DIRECTORY_SECURITY];
  if (!table || (table.address === 0 && table.size === 0)) return bytes;
  const end = table.address + table.size;
  // Entries are padded to 8 bytes, so up to 7 bytes may follow the last one.
  if (end > bytes.byteLength || bytes.byteLength - end >= 8) {
    throw new Error(
      `Cannot remove the signature: its certificate table (${hex(table.address)}, ${table.size} bytes) is not at the end of the ${bytes.byteLength}-byte file`,
    );
  }
  const copy = bytes.slice(0, table.address);
  const view = new DataView(copy.buffer, copy.byteOffset, copy.byteLength);
  const entry = pe.dataDirectoriesOffset + PE_DIRECTORY_SECURITY * 8;
  view.setUint32(entry, 0, true);
  view.setUint32(entry + 4, 0, true);
  view.setUint32(pe.peHeaderOffset + 4 + coffHeaderSize + 64, 0, true); // CheckSum
  return copy;
}
