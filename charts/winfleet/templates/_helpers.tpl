{{/* Names, labels and the values the templates share. */}}

{{- define "winfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name: the release name when it holds the chart name ("winfleet"). */}}
{{- define "winfleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "winfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "winfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The webhook's pods: a name of their own, so the operator's selector never matches them. */}}
{{- define "winfleet.webhookSelectorLabels" -}}
app.kubernetes.io/name: {{ include "winfleet.name" . }}-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The webhook's Deployment, Service and ServiceAccount. */}}
{{- define "winfleet.webhookName" -}}{{ include "winfleet.fullname" . }}-webhook{{- end }}

{{- define "winfleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "winfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: winfleet
{{- end }}

{{- define "winfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "winfleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: give the existing ServiceAccount's name when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "winfleet.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* Names the operator itself uses (src/): keep in step with the code. */}}
{{- define "winfleet.configMapName" -}}winfleet-config{{- end }}
{{- define "winfleet.webhookConfigurationName" -}}winfleet-pods{{- end }}
{{- define "winfleet.webhookTlsSecret" -}}winfleet-webhook-tls{{- end }}
{{- define "winfleet.leaseName" -}}winfleet-operator{{- end }}
{{- define "winfleet.nodeManifestsRbacName" -}}winfleet:node-manifests{{- end }}
{{- define "winfleet.joinInfoRbacName" -}}winfleet:join-info{{- end }}
{{- define "winfleet.joinInfoConfigMap" -}}winfleet-join{{- end }}
{{- define "winfleet.publishedManifestsConfigMap" -}}winfleet-published-manifests{{- end }}
{{- define "winfleet.windowsInstancesConfigMap" -}}windows-instances{{- end }}

{{/* cert-manager's Certificate and the Secret it writes. */}}
{{- define "winfleet.certificateName" -}}{{ include "winfleet.fullname" . }}-webhook{{- end }}
{{- define "winfleet.certificateSecret" -}}{{ include "winfleet.fullname" . }}-webhook-cert{{- end }}

{{/* The operator's config.yaml: the config value, with the webhook failure policy. */}}
{{- define "winfleet.config" -}}
{{- $config := deepCopy (default dict .Values.config) }}
{{- $webhook := deepCopy (default dict $config.webhook) }}
{{- $_ := set $webhook "validationFailurePolicy" .Values.webhook.failurePolicy }}
{{- $_ := set $config "webhook" $webhook }}
{{- toYaml $config }}
{{- end }}

{{/* The ConfigMap with Flannel's net-conf.json the operator may read (config.network.flannel.configMap.name). */}}
{{- define "winfleet.flannelConfigMapName" -}}
{{- dig "network" "flannel" "configMap" "name" "kube-flannel-cfg" (default dict .Values.config) }}
{{- end }}

{{/* Namespaces besides the release's whose WindowsHosts the operator acts on (config.hosts.namespaces). */}}
{{- define "winfleet.hostNamespaces" -}}
{{- $hosts := default dict (default dict .Values.config).hosts }}
{{- $out := list }}
{{- range (default list $hosts.namespaces) }}
{{- if ne . $.Release.Namespace }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toJson (uniq $out) }}
{{- end }}

{{/*
The webhooks' namespaceSelector, as src/webhook/webhook-configurations.ts builds it from the
configuration: never the release namespace, never config.webhook.excludedNamespaces (default
kube-system), never a namespace with the opt-out label.
*/}}
{{- define "winfleet.webhookNamespaceSelector" -}}
{{- $webhook := default dict (default dict .Values.config).webhook }}
{{- $excluded := list "kube-system" }}
{{- if hasKey $webhook "excludedNamespaces" }}{{ $excluded = $webhook.excludedNamespaces }}{{ end }}
{{- $excluded = uniq (append $excluded .Release.Namespace) }}
{{- $optOut := default (dict "key" "winfleet.io/webhook" "value" "disabled") $webhook.optOutLabel }}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values: {{ toJson $excluded }}
  - key: {{ $optOut.key | quote }}
    operator: NotIn
    values: [{{ $optOut.value | quote }}]
{{- end }}

{{- define "winfleet.webhookTimeout" -}}
{{- $webhook := default dict (default dict .Values.config).webhook }}
{{- min (default 5 $webhook.timeoutSeconds) 5 }}
{{- end }}

{{/* clientConfig of a webhook at path $.path: the URL when webhook.url is set, else the Service. */}}
{{- define "winfleet.webhookClientConfig" -}}
{{- $root := .root }}
{{- if $root.Values.webhook.url }}
url: {{ printf "%s%s" (trimSuffix "/" $root.Values.webhook.url) .path | quote }}
{{- else }}
service:
  namespace: {{ $root.Release.Namespace }}
  name: {{ include "winfleet.webhookName" $root }}
  path: {{ .path }}
  port: 443
{{- end }}
{{- end }}

{{/* Checks across values that the schema cannot express; each names the keys and the fix. */}}
{{- define "winfleet.validate" -}}
{{- if and (not .Values.leaderElection.enabled) (gt (int .Values.replicaCount) 1) }}
{{- fail "leaderElection.enabled=false needs replicaCount: 1 (replicas without a leader would all run the controllers)" }}
{{- end }}
{{- if and (eq .Values.payload.source "image") (not .Values.payload.image.reference) }}
{{- fail "payload.source=image needs payload.image.reference (the OCI image holding payload.json at its root)" }}
{{- end }}
{{- if and (eq .Values.payload.source "image") (semverCompare "<1.35.0-0" .Capabilities.KubeVersion.Version) }}
{{- fail (printf "payload.source=image mounts an image volume, which needs Kubernetes 1.35 or later (this is %s); use payload.source=persistentVolumeClaim" .Capabilities.KubeVersion.Version) }}
{{- end }}
{{- if and (eq .Values.payload.source "registry") (not .Values.payload.registry.reference) }}
{{- fail "payload.source=registry needs payload.registry.reference: registry/repository@sha256:…, as winfleet payload push prints it" }}
{{- end }}
{{- if and (eq .Values.payload.source "registry") (not (regexMatch "@sha256:[0-9a-f]{64}$" .Values.payload.registry.reference)) }}
{{- fail (printf "payload.registry.reference %q names no sha256 digest; a tag can be moved, so give the payload by digest (registry/repository@sha256:…), as winfleet payload push prints it" .Values.payload.registry.reference) }}
{{- end }}
{{- if and .Values.payload.registry.pullSecret (ne .Values.payload.source "registry") }}
{{- fail "payload.registry.pullSecret is for payload.source=registry" }}
{{- end }}
{{- if and (eq .Values.payload.source "persistentVolumeClaim") (not .Values.payload.persistentVolumeClaim.claimName) }}
{{- fail "payload.source=persistentVolumeClaim needs payload.persistentVolumeClaim.claimName (an existing PVC in the release namespace)" }}
{{- end }}
{{- $configWebhook := default dict (default dict .Values.config).webhook }}
{{- if and (hasKey $configWebhook "validationFailurePolicy") (ne $configWebhook.validationFailurePolicy .Values.webhook.failurePolicy) }}
{{- fail (printf "config.webhook.validationFailurePolicy: set webhook.failurePolicy=%s instead (the chart writes it into the configuration and the ValidatingWebhookConfiguration)" $configWebhook.validationFailurePolicy) }}
{{- end }}
{{- if and .Values.webhook.certManager.enabled (not .Values.webhook.enabled) }}
{{- fail "webhook.certManager.enabled needs webhook.enabled" }}
{{- end }}
{{- end }}

{{/* What both webhooks share (webhook-configurations.ts: `common`). */}}
{{- define "winfleet.webhookCommon" -}}
admissionReviewVersions: [v1]
sideEffects: None
timeoutSeconds: {{ include "winfleet.webhookTimeout" . }}
matchPolicy: Equivalent
namespaceSelector:
  {{- include "winfleet.webhookNamespaceSelector" . | nindent 2 }}
objectSelector: {}
{{- end }}

{{/*
The status port (/healthz, /readyz, /metrics, /config) from networkPolicy.statusFrom alone:
the monitoring namespace by default. Empty: no pod at all (kubelet probes come from the node,
which network plugins let through to the node's own pods).
*/}}
{{- define "winfleet.statusIngress" -}}
{{- with .Values.networkPolicy.statusFrom }}
# Prometheus (networkPolicy.statusFrom); probes come from the node.
- ports:
    - port: status
      protocol: TCP
  from:
    {{- toYaml . | nindent 4 }}
{{- end }}
{{- end }}

{{- define "winfleet.dnsEgress" -}}
# DNS (registry, host and API server names).
- ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end }}
