{{- /* templates/grafana-dashboard.yaml of every ebb chart: `{{ include "ebb.grafana-dashboard" . }}`. */ -}}
{{- define "ebb.grafana-dashboard" -}}
{{- /*
With grafanaDashboard.enabled, the controller's Grafana dashboard (files/dashboards/<chart>.json,
written by `make dashboards`) in a ConfigMap labelled for Grafana's dashboard sidecar
(grafana_dashboard: "1" by default).
*/ -}}
{{- with .Values.grafanaDashboard }}
{{- if .enabled }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "ebb.fullname" $ }}-dashboard
  namespace: {{ .namespace | default $.Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" $ "extra" .labels) | nindent 4 }}
  {{- with .annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
data:
  {{- $controller := include "ebb.controller" $ }}
  {{ printf "ebb-%s.json" $controller }}: |-
    {{- $.Files.Get (printf "files/dashboards/%s.json" $controller) | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}
