{{/* The chart's name, at most 63 characters. */}}
{{- define "dnsplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: <release>-<chart>, or the release name when it holds the chart's name. */}}
{{- define "dnsplane.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "dnsplane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object (Helm's recommended labels). */}}
{{- define "dnsplane.labels" -}}
helm.sh/chart: {{ include "dnsplane.chart" . }}
{{ include "dnsplane.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: dnsplane
{{- end }}

{{/* The manager pods' selector labels. */}}
{{- define "dnsplane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dnsplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "dnsplane.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "dnsplane.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "dnsplane.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The watched namespaces in namespaced mode: the release namespace first, then the others, once each. */}}
{{- define "dnsplane.watchNamespaces" -}}
{{- prepend .Values.watchNamespaces .Release.Namespace | uniq | join "," }}
{{- end }}

{{/* --metrics-bind-address: metrics.bindAddress, else :8443, or 127.0.0.1:8080 when namespaced. */}}
{{- define "dnsplane.metricsAddress" -}}
{{- $bind := .Values.metrics.bindAddress | toString }}
{{- if and (not (kindIs "invalid" .Values.metrics.bindAddress)) (ne $bind "") }}
{{- $bind }}
{{- else if .Values.namespaced }}
{{- "127.0.0.1:8080" }}
{{- else }}
{{- ":8443" }}
{{- end }}
{{- end }}

{{/* The metrics port number, from the bind address. */}}
{{- define "dnsplane.metricsPort" -}}
{{- include "dnsplane.metricsAddress" . | splitList ":" | last }}
{{- end }}

{{/* "true" when /metrics is reachable from other pods: on, and not on a loopback host. */}}
{{- define "dnsplane.metricsExposed" -}}
{{- $addr := include "dnsplane.metricsAddress" . }}
{{- $host := $addr | trimSuffix (printf ":%s" (include "dnsplane.metricsPort" .)) | trimPrefix "[" | trimSuffix "]" }}
{{- if and (ne $addr "0") (not (or (hasPrefix "127." $host) (eq $host "localhost") (eq $host "::1"))) }}true{{ end }}
{{- end }}

{{/* "https" when the exposed /metrics endpoint is served over TLS, else "http". */}}
{{- define "dnsplane.metricsScheme" -}}
{{- if .Values.metrics.secure }}https{{ else }}http{{ end }}
{{- end }}

{{/* --ext-gslb-clusters from gslb.peers: geotag=host:port,... */}}
{{- define "dnsplane.gslbPeers" -}}
{{- $peers := list }}
{{- range .Values.gslb.peers }}
{{- $peers = append $peers (printf "%s=%s" .geoTag .address) }}
{{- end }}
{{- join "," $peers }}
{{- end }}

{{/*
--ext-gslb-witnesses from gslb.witnesses, as gslbPeers.
*/}}
{{- define "dnsplane.gslbWitnesses" -}}
{{- $ws := list }}
{{- range .Values.gslb.witnesses }}
{{- $ws = append $ws (printf "%s=%s" .geoTag .address) }}
{{- end }}
{{- join "," $ws }}
{{- end }}

{{/*
The rules of a Role or ClusterRole in files/rbac/<name> (copied from config/rbac by make manifests).
With namespaced, the rules on cluster-scoped resources are left out (a Role cannot grant them):
the kube-system Namespace (the default owner ID: namespaced mode needs ownerID), Nodes (the
service source's NodePort targets: namespaced mode publishes NodePort Services only through the
target annotation), and TokenReviews and SubjectAccessReviews (secure /metrics: namespaced mode
serves /metrics on loopback). Each resource is left out on its own: a rule keeps the rest.
*/}}
{{- /*
The rules of the namespaced Role in role.yaml (its second document: the markers with
namespace=system), granted in the release namespace: the zone store's ConfigMaps and the dns
Service. Empty when role.yaml has no such Role.
*/}}
{{- define "dnsplane.releaseNamespaceRules" -}}
{{- $docs := splitList "\n---\n" (.Files.Get "files/rbac/role.yaml") }}
{{- if gt (len $docs) 1 }}
{{- (index $docs 1 | fromYaml).rules | toYaml }}
{{- end }}
{{- end }}

{{- define "dnsplane.rulesFrom" -}}
{{- $role := .ctx.Files.Get (printf "files/rbac/%s" .file) | fromYaml }}
{{- $rules := required (printf "files/rbac/%s has no rules: run make manifests" .file) $role.rules }}
{{- if .namespaced }}
{{- $kept := list }}
{{- range $rules }}
{{- $res := list }}
{{- range (default (list) .resources) }}
{{- if not (has . (list "namespaces" "nodes" "tokenreviews" "subjectaccessreviews")) }}
{{- $res = append $res . }}
{{- end }}
{{- end }}
{{- if $res }}
{{- $rule := deepCopy . }}
{{- $_ := set $rule "resources" $res }}
{{- $kept = append $kept $rule }}
{{- end }}
{{- end }}
{{- $rules = $kept }}
{{- end }}
{{- $rules | toYaml }}
{{- end }}
