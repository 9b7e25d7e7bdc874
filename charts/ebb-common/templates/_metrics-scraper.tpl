{{- /* templates/metrics-scraper.yaml of every ebb chart: `{{ include "ebb.metrics-scraper" . }}`. */ -}}
{{- define "ebb.metrics-scraper" -}}
{{- /*
With metrics.authenticated and the ServiceMonitor, the identity Prometheus scrapes /metrics with,
unless metrics.serviceMonitor.authorization.credentials names a token Secret of your own: a
ServiceAccount `<fullname>-metrics-scraper`, bound to the `<fullname>-metrics-reader` ClusterRole
and nothing else, and a Secret for which Kubernetes issues a long-lived token of it (the
ServiceMonitor's `authorization`, which Prometheus Operator reads from the release namespace).
*/ -}}
{{- $monitor := .Values.metrics.serviceMonitor }}
{{- if and $monitor.enabled .Values.metrics.authenticated (not $monitor.authorization.credentials.name) }}
{{- if not .Values.rbac.create }}
{{- fail "metrics.serviceMonitor with metrics.authenticated=true and rbac.create=false: the chart cannot bind its scraper to the metrics-reader ClusterRole. Set metrics.serviceMonitor.authorization.credentials.name (and .key) to a token Secret of an account allowed `get` on /metrics, or rbac.create=true" }}
{{- end }}
{{- $fullname := include "ebb.fullname" . }}
{{- $scraper := printf "%s-metrics-scraper" $fullname }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ $scraper }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" . "extra" (dict "app.kubernetes.io/component" "metrics")) | nindent 4 }}
# No pod runs as it: its token is in the Secret below.
automountServiceAccountToken: false
---
# Kubernetes fills in `token` (and `ca.crt`, `namespace`) for the ServiceAccount named below.
apiVersion: v1
kind: Secret
type: kubernetes.io/service-account-token
metadata:
  name: {{ $scraper }}-token
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" . "extra" (dict "app.kubernetes.io/component" "metrics")) | nindent 4 }}
  annotations:
    kubernetes.io/service-account.name: {{ $scraper }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $scraper }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" . "extra" (dict "app.kubernetes.io/component" "metrics")) | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $fullname }}-metrics-reader
subjects:
  - kind: ServiceAccount
    name: {{ $scraper }}
    namespace: {{ .Release.Namespace }}
{{- end }}
{{- end -}}
