import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeConsoleInput } from './console-code-page.ts';

test('stdin bytes as Windows PowerShell 5.1 reads them in each console code page', () => {
  const utf8 = Buffer.from('Pä€£', 'utf8');
  assert.equal(decodeConsoleInput(utf8, 437), 'P├ñΓé¼┬ú', 'OEM United States');
  assert.equal(decodeConsoleInput(utf8, 1252), 'PÃ¤â‚¬Â£', 'ANSI Latin 1');
  assert.equal(decodeConsoleInput(utf8, 65001), 'Pä€£');
  const ascii = Buffer.from('{"password":"P\\u00e4\\u20ac\\u00a3"}', 'ascii');
  for (const cp of [437, 1252, 65001] as const)
    assert.equal(decodeConsoleInput(ascii, cp), ascii.toString('ascii'), `ASCII in ${cp}`);
});
