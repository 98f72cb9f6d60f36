/** winfleet check (placeholder: being written). */
import type { Command } from 'commander';

export function registerCheck(program: Command): void {
  program.command('check').description('not written yet');
}
