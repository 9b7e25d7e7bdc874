{{- /* Every ebb chart's templates/NOTES.txt: `{{ include "ebb.notes" . }}`. */ -}}
{{- define "ebb.notes" -}}
{{ include "ebb.fullname" . }} is installed in namespace {{ .Release.Namespace }}.
{{- $ns := include "ebb.watchNamespaces" . | fromJsonArray }}
Watching: {{ if $ns }}namespaces {{ join ", " $ns }}{{ else }}the whole cluster{{ end }}{{ with .Values.labelSelector }}, objects matching {{ . }}{{ end }}.
{{- if .Values.dryRun }}
DRY RUN: decisions are recorded as Events and in status; nothing else is written.
{{- end }}
{{- if not .Values.crds.install }}
CRDs were not installed by this chart (crds.install=false): the cluster must already have them.
{{- end }}
{{- $metrics := printf "%s-metrics" (include "ebb.fullname" .) }}
Metrics: {{ if include "ebb.metricsTLS" . }}https{{ else }}http{{ end }}://{{ $metrics }}.{{ .Release.Namespace }}.svc:{{ .Values.metrics.port }}/metrics
{{- if .Values.metrics.authenticated }}, for the bearer token of an account bound to ClusterRole {{ include "ebb.fullname" . }}-metrics-reader
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.serviceMonitor.authorization.credentials.name) }} (the ServiceMonitor sends ServiceAccount {{ $metrics }}-scraper's){{ end }}
{{- end }}; probes on port {{ .Values.health.port }} (/healthz, /readyz).
{{- with index (.Chart.Annotations | default dict) "ebb.dev/prerequisites" }}
Prerequisites: {{ . }}
{{- end }}

  kubectl -n {{ .Release.Namespace }} rollout status deployment/{{ include "ebb.fullname" . }}
  kubectl -n {{ .Release.Namespace }} logs deployment/{{ include "ebb.fullname" . }}
{{- end -}}
