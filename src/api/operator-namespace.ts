/**
 * The namespace winfleet's operator runs in, and keeps its WindowsHosts and pools in, unless
 * told otherwise (the chart's release namespace, the operator's --namespace, the CLI's
 * --operator-namespace and -n).
 */
export const defaultOperatorNamespace = 'winfleet-system';
