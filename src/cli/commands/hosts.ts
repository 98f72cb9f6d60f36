/** winfleet hosts (placeholder: being written). */
import type { Command } from 'commander';

export function registerHosts(program: Command): void {
  program.command('hosts').description('not written yet');
}
