{{- /* templates/servicemonitor.yaml of every ebb chart: `{{ include "ebb.servicemonitor" . }}`. */ -}}
{{- define "ebb.servicemonitor" -}}
{{- /*
Needs the Prometheus Operator CRDs; .ci/check-charts validates it against their current schema. With
TLS (metrics.tls, always with metrics.authenticated) Prometheus scrapes over https, checking the
certificate against the CA in the certificate's Secret (`ca.crt`) for the Service's name; with
metrics.authenticated it sends the token of metrics.serviceMonitor.authorization.credentials, by
default that of the chart's `<fullname>-metrics-scraper` ServiceAccount (metrics-scraper.yaml).
*/ -}}
{{- with .Values.metrics.serviceMonitor }}
{{- if .enabled }}
{{- $fullname := include "ebb.fullname" $ }}
apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: {{ $fullname }}
  namespace: {{ $.Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" $ "extra" .labels) | nindent 4 }}
spec:
  selector:
    matchLabels:
      {{- include "ebb.selectorLabels" $ | nindent 6 }}
      app.kubernetes.io/component: metrics
  namespaceSelector:
    matchNames:
      - {{ $.Release.Namespace }}
  endpoints:
    - port: metrics
      path: /metrics
      interval: {{ .interval }}
      {{- with .scrapeTimeout }}
      scrapeTimeout: {{ . }}
      {{- end }}
      {{- if include "ebb.metricsTLS" $ }}
      scheme: https
      tlsConfig:
        # The name the certificate is issued for (Prometheus connects to the pods' addresses).
        serverName: {{ printf "%s-metrics.%s.svc" $fullname $.Release.Namespace }}
        ca:
          secret:
            name: {{ include "ebb.servingSecretName" (dict "ctx" $ "name" "metrics") }}
            key: ca.crt
      {{- end }}
      {{- if $.Values.metrics.authenticated }}
      # --metrics-auth: a token the API server authenticates, of an account allowed `get` on
      # /metrics (the `-metrics-reader` ClusterRole).
      authorization:
        type: Bearer
        credentials:
          {{- with .authorization.credentials.name }}
          name: {{ . }}
          key: {{ $.Values.metrics.serviceMonitor.authorization.credentials.key }}
          {{- else }}
          name: {{ $fullname }}-metrics-scraper-token
          key: token
          {{- end }}
      {{- end }}
      # Per-object series carry the object's own `namespace` label; keep it rather than renaming
      # it to exported_namespace (the controller's own series get the pod's namespace as usual).
      honorLabels: true
      {{- with .relabelings }}
      relabelings:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .metricRelabelings }}
      metricRelabelings:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
{{- end }}
{{- end -}}
