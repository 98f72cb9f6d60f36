/** Test assertions on Windows executables the build makes (the agent and its service shim). */
import assert from 'node:assert/strict';
import {
  PE_FILE_DLL,
  PE_FILE_EXECUTABLE_IMAGE,
  PE_MACHINE_AMD64,
  PE_SUBSYSTEM_WINDOWS_CUI,
  PE32_PLUS_MAGIC,
  parsePeFile,
} from './pe-file.ts';

/** `exe` is a PE32+ x86-64 console executable (not a DLL) with code in a .text section. */
export function assertWindowsConsoleExecutable(exe: Uint8Array): void {
  const pe = parsePeFile(exe);
  assert.equal(pe.machine, PE_MACHINE_AMD64);
  assert.equal(pe.optionalHeaderMagic, PE32_PLUS_MAGIC);
  assert.equal(pe.subsystem, PE_SUBSYSTEM_WINDOWS_CUI);
  assert.ok(pe.characteristics & PE_FILE_EXECUTABLE_IMAGE, 'IMAGE_FILE_EXECUTABLE_IMAGE is set');
  assert.equal(pe.characteristics & PE_FILE_DLL, 0, 'it is not a DLL');
  assert.ok(
    pe.sections.some((s) => s.name === '.text'),
    'it has a .text section',
  );
}
