/** winfleet's API group and version: every CRD of winfleet.io serves this one version. */
export const apiGroup = 'winfleet.io';
export const apiVersion = `${apiGroup}/v1alpha1`;
