{{- /* templates/certificates.yaml of every ebb chart: `{{ include "ebb.certificates" . }}`. */ -}}
{{- define "ebb.certificates" -}}
{{- /*
The cert-manager objects of the chart's serving certificates ("Serving certificates" in
_helpers.tpl): a Certificate for each server whose certManager.enabled is on (/metrics:
metrics.tls.certManager; stackable-scaler's webhook: webhook.certManager), and for those that name
no issuerRef the chart's own CA (below).
*/ -}}
{{- $selfSigned := false }}
{{- range include "ebb.certManagerServings" . | fromJsonArray }}
{{- $serving := include "ebb.serving" (dict "ctx" $ "name" .) | fromJson }}
{{- if not $serving.certManager.issuerRef }}{{ $selfSigned = true }}{{ end }}
---
{{ include "ebb.servingCertificate" (dict "ctx" $ "name" .) }}
{{- end }}
{{- if $selfSigned }}
{{- $fullname := include "ebb.fullname" . }}
{{- /* The chart's own CA, for the Certificates that name no issuerRef: a self-signed Issuer
signs one CA Certificate (isCA, its key kept at renewal), and a CA Issuer signs the serving
Certificates from it. Clients trust the CA (the webhook's caBundle is injected from it), which
outlives the serving certificates: a renewal of a serving certificate never changes what clients
trust, so no write is refused, or skips the webhook, while the two catch up. */}}
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: {{ $fullname }}-selfsigned
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: {{ $fullname }}-ca
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
spec:
  isCA: true
  commonName: {{ $fullname }}-ca
  secretName: {{ $fullname }}-ca
  duration: 87600h
  renewBefore: 720h
  privateKey:
    algorithm: ECDSA
    size: 256
    rotationPolicy: Never
  issuerRef:
    kind: Issuer
    name: {{ $fullname }}-selfsigned
---
apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: {{ $fullname }}-ca
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
spec:
  ca:
    secretName: {{ $fullname }}-ca
{{- end }}
{{- end -}}
