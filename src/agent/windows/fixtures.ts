/**
 * The recorded Windows outputs in ./fixtures, for the tests beside this file. They keep their
 * CRLF line endings (see fixtures/.gitattributes); reading one that lost them fails loudly,
 * since parsers must be tested against what Windows really prints.
 */
import { readFileSync } from 'node:fs';
import { WinfleetError } from '../../errors/catalog.ts';

/** The text of fixtures/`name`; throws if a multi-line fixture has LF-only line endings. */
export function windowsFixture(name: string): string {
  const text = readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
  if (/(^|[^\r])\n/.test(text)) {
    throw new WinfleetError(
      'WF_INVARIANT',
      `Fixture "${name}" has LF line endings; restore its CRLF endings (Windows prints CRLF)`,
    );
  }
  return text;
}
