/** winfleet status (placeholder: being written). */
import type { Command } from 'commander';

export function registerStatus(program: Command): void {
  program.command('status').description('not written yet');
}
