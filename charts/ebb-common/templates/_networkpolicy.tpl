{{- /* templates/networkpolicy.yaml of every ebb chart: `{{ include "ebb.networkpolicy" . }}`. */ -}}
{{- define "ebb.networkpolicy" -}}
{{- /*
With networkPolicy.enabled, the controller's pods accept only the metrics port (from
networkPolicy.metricsFrom, default: anyone), the health port (the kubelet's probes) and, with
stackable-scaler's webhook on, the webhook port (from networkPolicy.webhookFrom; the API server
calls it), and reach only the API server (networkPolicy.apiServer) and DNS.
*/ -}}
{{- with .Values.networkPolicy }}
{{- if .enabled }}
{{- $webhook := $.Values.webhook | default dict }}
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: {{ include "ebb.fullname" $ }}
  namespace: {{ $.Release.Namespace }}
  labels:
    {{- include "ebb.labels" $ | nindent 4 }}
spec:
  podSelector:
    matchLabels:
      {{- include "ebb.selectorLabels" $ | nindent 6 }}
  policyTypes: [Ingress, Egress]
  ingress:
    - ports:
        - port: metrics
          protocol: TCP
      {{- with .metricsFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    # The kubelet's probes: /healthz and /readyz, nothing else, from the pod's own node. Most
    # CNIs never apply policies to a node's traffic to its own pods, but some can (Cilium with
    # `allow-localhost: policy`, for one), and the node's address is not known here: open to
    # any peer.
    - ports:
        - port: health
          protocol: TCP
    {{- if $webhook.enabled }}
    - ports:
        - port: webhook
          protocol: TCP
      {{- with .webhookFrom }}
      from:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    {{- end }}
  egress:
    # The Kubernetes API (the Service's port 443, or the API server's own port behind it).
    - ports:
        {{- range .apiServer.ports }}
        - port: {{ . }}
          protocol: TCP
        {{- end }}
      {{- with .apiServer.cidrs }}
      to:
        {{- range . }}
        - ipBlock:
            cidr: {{ . }}
        {{- end }}
      {{- end }}
    # DNS, to resolve the API server's name.
    - ports:
        - port: 53
          protocol: UDP
        - port: 53
          protocol: TCP
{{- end }}
{{- end }}
{{- end -}}
