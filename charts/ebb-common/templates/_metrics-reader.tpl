{{- /* templates/metrics-reader.yaml of every ebb chart: `{{ include "ebb.metrics-reader" . }}`. */ -}}
{{- define "ebb.metrics-reader" -}}
{{- /*
With metrics.authenticated, the ClusterRole a scraper needs to read /metrics: with the
ServiceMonitor, the chart binds its own scraper to it (metrics-scraper.yaml); bind any other scraper
yourself. Not bound to the controller: the controller only asks the API server whether a caller
holds it.
*/ -}}
{{- if and .Values.rbac.create .Values.metrics.authenticated }}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ include "ebb.fullname" . }}-metrics-reader
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
rules:
  - nonResourceURLs: ["/metrics"]
    verbs: ["get"]
{{- end }}
{{- end -}}
