{{- /* templates/service.yaml of every ebb chart: `{{ include "ebb.service" . }}`. */ -}}
{{- define "ebb.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "ebb.fullname" . }}-metrics
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" . "extra" (dict "app.kubernetes.io/component" "metrics")) | nindent 4 }}
spec:
  type: ClusterIP
  selector:
    {{- include "ebb.selectorLabels" . | nindent 4 }}
  ports:
    - name: metrics
      port: {{ .Values.metrics.port }}
      targetPort: metrics
      protocol: TCP
{{- end -}}
