/** winfleet version: the CLI's own version. */
import type { Command } from 'commander';
import { cliVersion } from '../version.ts';

export function registerVersion(program: Command): void {
  program
    .command('version')
    .description("print winfleet's version")
    .action(() => {
      process.stdout.write(`winfleet ${cliVersion}\n`);
    });
}
