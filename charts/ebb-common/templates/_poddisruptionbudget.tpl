{{- /* templates/poddisruptionbudget.yaml of every ebb chart: `{{ include "ebb.poddisruptionbudget" . }}`. */ -}}
{{- define "ebb.poddisruptionbudget" -}}
{{- /*
With a warm standby (replicas > 1), a voluntary disruption such as a node drain takes one replica at
a time, so the Lease always has a replica to go to. podDisruptionBudget.minAvailable or
.maxUnavailable (one of them, never both; empty: unset) replaces that maxUnavailable: 1.
*/ -}}
{{- $pdb := .Values.podDisruptionBudget }}
{{- $min := "" }}
{{- if not (kindIs "invalid" $pdb.minAvailable) }}{{ $min = toString $pdb.minAvailable }}{{ end }}
{{- $max := "" }}
{{- if not (kindIs "invalid" $pdb.maxUnavailable) }}{{ $max = toString $pdb.maxUnavailable }}{{ end }}
{{- if and $min $max }}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable, not both" }}
{{- end }}
{{- if and (gt (int .Values.replicas) 1) $pdb.enabled }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "ebb.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
spec:
  {{- if $min }}
  minAvailable: {{ $min }}
  {{- else }}
  maxUnavailable: {{ $max | default 1 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "ebb.selectorLabels" . | nindent 6 }}
{{- end }}
{{- end -}}
