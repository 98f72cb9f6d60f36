/**
 * winfleet join-tokens list | revoke ID: the join tokens `winfleet join-command` made, from
 * their records in the operator's namespace (-n, default winfleet-system). `list` shows each
 * token's id, pool, uses left, expiry and the hosts that used it — never its secret, which no
 * record holds. `revoke` deletes the record (from then on the operator denies the token's
 * CSRs) and the token's Secret. `prune` does that for every expired or used-up token
 * (`--dry-run`: only lists them); the controller manager's token cleaner removes an expired
 * token's Secret, never its record.
 */
import type { Command } from 'commander';
import { type JoinTokenUse, joinTokenExpired } from '../../join/join-token-record.ts';
import {
  type ListedJoinToken,
  listJoinTokens,
  pruneJoinTokens,
  revokeJoinToken,
} from '../../join/join-tokens.ts';
import { cliExit, ExitCode } from '../exit-codes.ts';
import { type KubeFlags, kubeConfigFrom, namespaceFrom, withKubeFlags } from '../kube-flags.ts';
import { formatData, formatTable, type OutputFormat, outputOption } from '../output.ts';

interface ListFlags extends KubeFlags {
  output: OutputFormat;
}

type ShownToken =
  | { id: string; problem: string }
  | {
      id: string;
      pool: string;
      usesLeft: number;
      uses: number;
      expires: string;
      expired: boolean;
      labels: Record<string, string>;
      joined: JoinTokenUse[];
    };

/** One token as -o json|yaml print it and the table shows it. */
function shown(token: ListedJoinToken, now: Date): ShownToken {
  if ('problem' in token) return { id: token.id, problem: token.problem };
  const { record } = token;
  return {
    id: token.id,
    pool: `${record.namespace}/${record.pool}`,
    usesLeft: record.usesLeft,
    uses: record.uses,
    expires: record.expires,
    expired: joinTokenExpired(record, now),
    labels: record.labels,
    joined: record.joined,
  };
}

function operatorNamespace(flags: KubeFlags, kc: ReturnType<typeof kubeConfigFrom>): string {
  if (flags.allNamespaces)
    throw cliExit(ExitCode.usage, '-A: join tokens live in the operator’s namespace; use -n');
  return namespaceFrom(flags, kc)!;
}

export function registerJoinTokens(program: Command): void {
  const tokens = program
    .command('join-tokens')
    .description(
      'the join tokens winfleet join-command made: list them, revoke one, prune the spent ones',
    );

  withKubeFlags(
    tokens.command('list').description('id, pool, uses left and expiry of each join token'),
  )
    .addOption(outputOption())
    .action(async (flags: ListFlags) => {
      const kc = kubeConfigFrom(flags);
      const now = new Date();
      const rows = (await listJoinTokens(kc, operatorNamespace(flags, kc))).map((t) =>
        shown(t, now),
      );
      if (flags.output === 'json' || flags.output === 'yaml') {
        process.stdout.write(formatData(flags.output, rows));
        return;
      }
      const wide = flags.output === 'wide';
      const headers = ['id', 'pool', 'uses left', 'expires', ...(wide ? ['joined'] : [])];
      process.stdout.write(
        formatTable(
          headers,
          rows.map((r) =>
            'problem' in r
              ? [r.id, '?', '?', `unreadable record: ${r.problem.split('\n')[0]}`]
              : [
                  r.id,
                  r.pool,
                  `${r.usesLeft}/${r.uses}`,
                  `${r.expires}${r.expired ? ' (expired)' : ''}`,
                  ...(wide ? [r.joined.map((j) => j.nodeName).join(',') || '-'] : []),
                ],
          ),
        ),
      );
    });

  withKubeFlags(
    tokens
      .command('revoke')
      .description(
        'delete a join token: its record (the operator denies it from then on) and its Secret',
      )
      .argument('<id>', 'the token id (6 characters, as join-tokens list shows it)'),
  ).action(async (id: string, flags: KubeFlags) => {
    if (!/^[a-z0-9]{6}$/.test(id))
      throw cliExit(ExitCode.usage, `"${id}" is not a join token id (6 characters a-z, 0-9)`);
    const kc = kubeConfigFrom(flags);
    const namespace = operatorNamespace(flags, kc);
    const revoked = await revokeJoinToken(kc, namespace, id);
    if (!revoked.record && !revoked.secret)
      throw cliExit(
        ExitCode.problem,
        `no join token ${id} in ${namespace} (winfleet join-tokens list)`,
      );
    process.stdout.write(`join token ${id} revoked\n`);
  });

  withKubeFlags(
    tokens
      .command('prune')
      .description('revoke every expired or used-up join token (record and Secret)')
      .option('--dry-run', 'only list the tokens that would be revoked', false),
  ).action(async (flags: KubeFlags & { dryRun: boolean }) => {
    const kc = kubeConfigFrom(flags);
    const namespace = operatorNamespace(flags, kc);
    const pruned = await pruneJoinTokens(kc, namespace, new Date(), flags.dryRun);
    const verb = flags.dryRun ? 'would be revoked' : 'revoked';
    for (const { id, why } of pruned) process.stdout.write(`join token ${id} ${verb}: ${why}\n`);
    if (pruned.length === 0)
      process.stdout.write(`no expired or used-up join token in ${namespace}\n`);
  });
}
