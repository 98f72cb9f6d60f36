/**
 * Kubernetes label selectors (metav1.LabelSelector) as the API machinery evaluates them
 * (`metav1.LabelSelectorAsSelector`): every matchLabels pair and every matchExpressions
 * requirement must hold; `NotIn` and `DoesNotExist` hold for objects without the key; an empty
 * selector matches everything. The client library has no evaluator, so this is the one.
 */
import type { LabelSelector, LabelSelectorRequirement } from '../api/windows-node-pool.ts';

const operators: readonly LabelSelectorRequirement['operator'][] = [
  'In',
  'NotIn',
  'Exists',
  'DoesNotExist',
];

/**
 * The problems of a selector the API schema lets through but Kubernetes would refuse, one
 * line each naming the field under `field` and the fix. Empty when the selector is usable.
 */
export function selectorProblems(selector: unknown, field: string): string[] {
  if (typeof selector !== 'object' || selector === null || Array.isArray(selector)) {
    return [`${field}: must be a label selector ({matchLabels: {…}, matchExpressions: […]})`];
  }
  const { matchLabels, matchExpressions } = selector as LabelSelector;
  const problems: string[] = [];
  if (matchLabels !== undefined) {
    if (typeof matchLabels !== 'object' || matchLabels === null || Array.isArray(matchLabels)) {
      problems.push(`${field}.matchLabels: must be a map of label keys to values`);
    } else {
      for (const [key, value] of Object.entries(matchLabels)) {
        if (typeof value !== 'string') {
          problems.push(`${field}.matchLabels.${key}: must be a string value`);
        }
      }
    }
  }
  if (matchExpressions !== undefined) {
    if (!Array.isArray(matchExpressions)) {
      problems.push(`${field}.matchExpressions: must be a list of {key, operator, values}`);
    } else {
      matchExpressions.forEach((requirement, i) => {
        problems.push(...requirementProblems(requirement, `${field}.matchExpressions[${i}]`));
      });
    }
  }
  return problems;
}

function requirementProblems(requirement: LabelSelectorRequirement, at: string): string[] {
  if (typeof requirement !== 'object' || requirement === null) {
    return [`${at}: must be {key, operator, values}`];
  }
  const { key, operator, values } = requirement;
  const problems: string[] = [];
  if (typeof key !== 'string' || key === '') problems.push(`${at}.key: must be a label key`);
  if (!operators.includes(operator)) {
    problems.push(`${at}.operator: "${String(operator)}" is not one of ${operators.join(', ')}`);
    return problems;
  }
  if (
    values !== undefined &&
    (!Array.isArray(values) || values.some((v) => typeof v !== 'string'))
  ) {
    problems.push(`${at}.values: must be a list of strings`);
  } else if ((operator === 'In' || operator === 'NotIn') && !values?.length) {
    problems.push(`${at}.values: ${operator} needs at least one value`);
  } else if ((operator === 'Exists' || operator === 'DoesNotExist') && values?.length) {
    problems.push(`${at}.values: ${operator} takes no values; remove them`);
  }
  return problems;
}

/**
 * True when `labels` satisfy `selector`. The selector must be free of problems
 * (selectorProblems); an unknown operator matches nothing.
 *
 * @example matchesSelector({ matchLabels: { pool: 'web' } }, { pool: 'web', zone: 'a' }) // true
 */
export function matchesSelector(
  selector: LabelSelector,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const have = labels ?? {};
  const has = (key: string) => Object.hasOwn(have, key);
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (!has(key) || have[key] !== value) return false;
  }
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const holds =
      operator === 'In'
        ? has(key) && values.includes(have[key]!)
        : operator === 'NotIn'
          ? !has(key) || !values.includes(have[key]!)
          : operator === 'Exists'
            ? has(key)
            : operator === 'DoesNotExist'
              ? !has(key)
              : false;
    if (!holds) return false;
  }
  return true;
}
