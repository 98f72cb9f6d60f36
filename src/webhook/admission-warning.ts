/**
 * Admission warnings as users see them: kubectl prints each as `Warning: <text>`. The API
 * server keeps a request's warnings whole until together they pass 4096 runes; from then on it
 * cuts every warning to 256 runes, and it drops a text it has already sent for the request
 * (k8s.io/apiserver/pkg/endpoints/filters/warning.go: truncateAtTotalRunes,
 * truncateItemRunes). So a winfleet warning is one problem in at most 256 runes, and it leads
 * with the field and the fix: when something must be shortened, it is the detail, never the
 * part that says what to do.
 *
 * @example
 * admissionWarning({ field: 'spec.containers[0].image', fix: 'use a Windows image', detail: 'app:1 has no Windows variant' })
 * // 'spec.containers[0].image: use a Windows image; app:1 has no Windows variant'
 */

/** The API server's per-warning limit once a request's warnings are long (runes). */
export const maxWarningRunes = 256;

/** One problem: the field it is about, what to do, and what was found. */
export interface AdmissionProblem {
  field: string;
  fix: string;
  detail?: string;
}

/** The problem as one line, fix first, in full (for a denial, which has no per-line limit). */
export function problemText(problem: AdmissionProblem): string {
  return `${problem.field}: ${problem.fix}${problem.detail ? `; ${problem.detail}` : ''}`;
}

/**
 * The problem as a warning of at most maxWarningRunes runes. The text ends with the detail,
 * so a cut shortens only the detail while field and fix fit.
 * @package
 */
export function admissionWarning(problem: AdmissionProblem): string {
  return fitWarning(problemText(problem));
}

/** Cuts `text` to maxWarningRunes runes on a rune boundary, ending in "…". */
export function fitWarning(text: string): string {
  const runes = [...text];
  if (runes.length <= maxWarningRunes) return text;
  return `${runes.slice(0, maxWarningRunes - 1).join('')}…`;
}
