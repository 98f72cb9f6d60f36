/** winfleet diagnose (placeholder: being written). */
import type { Command } from 'commander';

export function registerDiagnose(program: Command): void {
  program.command('diagnose').description('not written yet');
}
