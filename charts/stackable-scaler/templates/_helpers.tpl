{{/*
Shared by every ebb chart: this file is identical in every chart's templates/ (.ci/check-charts fails
when the copies differ). What differs per controller lives in _controller.tpl.
*/}}

{{/* The controller's name: binary = chart name. */}}
{{- define "ebb.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Deployment = ServiceAccount = field manager: ebb-<controller>. */}}
{{- define "ebb.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "ebb-%s" (include "ebb.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ebb.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ebb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ebb.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "ebb.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ebb
{{- end -}}

{{- define "ebb.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ebb.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ebb.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Watched namespaces (empty = cluster-wide). Charts without the value watch cluster-wide. */}}
{{- define "ebb.watchNamespaces" -}}
{{- (.Values.watchNamespaces | default list) | uniq | toJson -}}
{{- end -}}

{{/* The flags every ebb binary takes (shared/runtime/src/args.rs), one per values key. */}}
{{- define "ebb.commonArgs" -}}
- {{ printf "--metrics-addr=0.0.0.0:%v" .Values.metrics.port | quote }}
{{- if .Values.metrics.authenticated }}
- "--metrics-auth"
{{- end }}
- {{ printf "--log-format=%s" .Values.logFormat | quote }}
- {{ printf "--leader-election=%t" .Values.leaderElection.enabled | quote }}
{{- if .Values.leaderElection.enabled }}
{{- /* The controller's name (the Lease a running install already holds), or the fullnameOverride
     that lets a second install live in the same namespace. */}}
{{- $lease := .Values.leaderElection.leaseName | default (.Values.fullnameOverride | default (include "ebb.name" .)) }}
- {{ printf "--lease-name=%s" $lease | quote }}
{{- end }}
{{- with (include "ebb.watchNamespaces" . | fromJsonArray) }}
- {{ printf "--namespace=%s" (join "," .) | quote }}
{{- end }}
{{- with .Values.labelSelector }}
- {{ printf "--label-selector=%s" . | quote }}
{{- end }}
{{- if .Values.dryRun }}
- "--dry-run"
{{- end }}
{{- end -}}

{{/* One alert of the PrometheusRule: (dict "ctx" $ "name" "Alert" "cfg" .Values.prometheusRule.alerts.x "expr" "..." "summary" "..." "description" "...").
     runbook_url: prometheusRule.runbookBaseUrl + "#" + the alert's name in lower case (the anchor of
     its section in docs/runbooks.md). */}}
{{- define "ebb.alert" -}}
{{- if .cfg.enabled }}
- alert: {{ .name }}
  expr: {{ .expr | quote }}
  for: {{ .cfg.for }}
  labels:
    severity: {{ .cfg.severity }}
    {{- with .ctx.Values.prometheusRule.alertLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    summary: {{ .summary | quote }}
    description: {{ .description | quote }}
    {{- with .ctx.Values.prometheusRule.runbookBaseUrl }}
    runbook_url: {{ printf "%s#%s" . (lower $.name) | quote }}
    {{- end }}
{{- end }}
{{- end -}}
