{{- /* templates/serviceaccount.yaml of every ebb chart: `{{ include "ebb.serviceaccount" . }}`. */ -}}
{{- define "ebb.serviceaccount" -}}
{{- if .Values.serviceAccount.create }}
apiVersion: v1
kind: ServiceAccount
metadata:
  name: {{ include "ebb.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
  {{- with .Values.serviceAccount.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
automountServiceAccountToken: true
{{- end }}
{{- end -}}
