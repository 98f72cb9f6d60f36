/**
 * Reading a join script as a host would have to run it: from its PowerShell syntax tree
 * (sim/testkit/powershell-grammar.ts), the literal values of `$agentUrl`, `$agentSha256` and
 * `$env:WINFLEET_JOIN_TOKEN` (the token, handed to the agent in its environment) and the
 * literal arguments of the one `& $agent join …` command. Only single-quoted literals count
 * (nothing PowerShell would expand); anything else is refused with the reason, and the caller
 * then requires the whole text to be exactly what the generator writes for those values
 * (userdata.ts), so a script that does one thing more is not run.
 */
import { joinTokenEnv } from '../../src/join/join-command-values.ts';
import type { PowerShellNode } from '../testkit/powershell-grammar.ts';

/** What the script carries, as the agent's `join` will receive it. */
export interface ReadJoinScript {
  agentUrl: string;
  agentSha256: string;
  /** The join token the script puts in the agent's environment (WINFLEET_JOIN_TOKEN). */
  token: string;
  /** The arguments after the executable: "join", then flags and values. */
  joinArgs: string[];
}

function* walk(node: PowerShellNode): Generator<PowerShellNode> {
  yield node;
  for (const child of node.children) yield* walk(child);
}

/** The value of a single-quoted literal node's text, or undefined for any other text. */
export function singleQuotedValue(text: string): string | undefined {
  const match = /^(['\u2018\u2019\u201a\u201b])([\s\S]*)(['\u2018\u2019\u201a\u201b])$/.exec(text);
  if (!match) return undefined;
  const inner = match[2]!;
  // Inside, a quote character stands only doubled (quotePowerShellString).
  if (/['\u2018\u2019\u201a\u201b]/.test(inner.replace(/(['\u2018\u2019\u201a\u201b])\1/g, ''))) {
    return undefined;
  }
  return inner.replace(/(['\u2018\u2019\u201a\u201b])\1/g, '$1');
}

/** The literal a value position holds (`'x'` as an expression), or undefined. */
function literalOf(node: PowerShellNode): string | undefined {
  const leaves = [...walk(node)].filter((n) => n.children.length === 0);
  const [leaf] = leaves;
  if (leaves.length !== 1 || leaf!.type !== 'verbatim_string_characters') return undefined;
  return singleQuotedValue(leaf!.text);
}

function assignedLiteral(root: PowerShellNode, variable: string): string {
  const found = [...walk(root)].filter(
    (n) =>
      n.type === 'assignment_expression' &&
      n.children[0]?.text === variable &&
      n.children[1]?.text === '=',
  );
  if (found.length !== 1) {
    throw new Error(`the script assigns ${variable} ${found.length} times, not once`);
  }
  const value = literalOf(found[0]!.children[2]!);
  if (value === undefined) throw new Error(`${variable} is not a single-quoted literal`);
  return value;
}

/** Reads the join script's values from its tree; throws saying what is not as generated. */
export function readJoinScript(root: PowerShellNode): ReadJoinScript {
  const commands = [...walk(root)].filter(
    (n) =>
      n.type === 'command' &&
      n.children[0]?.type === 'command_invokation_operator' &&
      n.children[1]?.text === '$agent',
  );
  if (commands.length !== 1) {
    throw new Error(`the script runs $agent ${commands.length} times, not once`);
  }
  const elements = commands[0]!.children.find((n) => n.type === 'command_elements');
  const args: string[] = [];
  for (const element of elements?.children ?? []) {
    if (element.type === 'command_argument_sep') continue;
    if (element.type === 'generic_token' || element.type === 'command_parameter') {
      args.push(element.text);
      continue;
    }
    const value = literalOf(element);
    if (value === undefined) {
      throw new Error(
        `an argument of $agent is not a single-quoted literal: ${element.text.slice(0, 60)}`,
      );
    }
    args.push(value);
  }
  return {
    agentUrl: assignedLiteral(root, '$agentUrl'),
    agentSha256: assignedLiteral(root, '$agentSha256'),
    token: assignedLiteral(root, `$env:${joinTokenEnv}`),
    joinArgs: args,
  };
}
