{{/*
What is particular to stackable-scaler. The shared templates include these names through "ebb.own".
They are "stackable-scaler.*", not "ebb.*": all subcharts of an umbrella chart share one set of
template names, and a name defined by two charts would keep one definition for both.
*/}}

{{- define "stackable-scaler.webhookCertDir" -}}/etc/ebb/webhook-certs{{- end -}}

{{/* cert-manager's `<fullname>-webhook-tls`, or webhook.tls.secretName: the mechanism /metrics
     shares ("Serving certificates" in _helpers.tpl). */}}
{{- define "stackable-scaler.webhookSecretName" -}}
{{- include "ebb.servingSecretName" (dict "ctx" . "name" "webhook") -}}
{{- end -}}

{{/* --hook-service-accounts, --enable-webhook, --webhook-addr, --webhook-cert-dir
     (controllers/stackable-scaler/src/lib.rs). */}}
{{- define "stackable-scaler.controllerArgs" -}}
- {{ printf "--hook-service-accounts=%s" (join "," .Values.hooks.serviceAccounts) | quote }}
{{- if .Values.webhook.enabled }}
- "--enable-webhook"
- {{ printf "--webhook-addr=0.0.0.0:%v" .Values.webhook.port | quote }}
- {{ printf "--webhook-cert-dir=%s" (include "stackable-scaler.webhookCertDir" .) | quote }}
{{- end }}
{{- end -}}

{{- define "stackable-scaler.controllerPorts" -}}
{{- if .Values.webhook.enabled }}
- name: webhook
  containerPort: {{ .Values.webhook.port }}
  protocol: TCP
{{- end }}
{{- end -}}

{{/* The serving certificate: re-read when the Secret changes, so renewals need no restart. */}}
{{- define "stackable-scaler.controllerVolumes" -}}
{{- if .Values.webhook.enabled }}
- name: webhook-certs
  secret:
    secretName: {{ include "stackable-scaler.webhookSecretName" . }}
{{- end }}
{{- end -}}

{{- define "stackable-scaler.controllerVolumeMounts" -}}
{{- if .Values.webhook.enabled }}
- name: webhook-certs
  mountPath: {{ include "stackable-scaler.webhookCertDir" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* Namespaced resources in the watched namespaces (see rbac-needs.yaml for the calls). */}}
{{- define "stackable-scaler.rules.watched" -}}
- apiGroups: ["autoscaling.stackable.tech"]
  resources: ["stackablescalers"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["autoscaling.stackable.tech"]
  resources: ["stackablescalers/status"]
  verbs: ["patch"]
# Hook Jobs carry a controller owner reference with blockOwnerDeletion, which the
# OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift) allows only with this.
- apiGroups: ["autoscaling.stackable.tech"]
  resources: ["stackablescalers/finalizers"]
  verbs: ["update"]
- apiGroups: ["apps"]
  resources: ["statefulsets", "deployments"]
  verbs: ["get", "list", "watch"]
# Replicas change through /scale only: no write to a workload's pod template is possible.
- apiGroups: ["apps"]
  resources: ["statefulsets/scale", "deployments/scale"]
  verbs: ["patch"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* Cluster-scoped resources: none (the webhook reads StackableScalers with the rules above). */}}
{{- define "stackable-scaler.rules.cluster" -}}
{{- end -}}

{{/* The release namespace: nothing of its own. */}}
{{- define "stackable-scaler.rules.release" -}}
{{- end -}}

{{/* Metrics: controllers/stackable-scaler/src/metrics.rs. */}}
{{- define "stackable-scaler.alerts" -}}
{{- $alerts := .Values.prometheusRule.alerts }}
{{- include "ebb.alert" (dict "ctx" . "name" "StackableScalerStuck" "cfg" $alerts.stageStuck
  "expr" "max by (namespace, name, stage) (ebb_stackable_scaler_stage{stage=~\"PreScaling|Scaling|PostScaling\"}) == 1"
  "summary" "StackableScaler {{ $labels.namespace }}/{{ $labels.name }} stuck in {{ $labels.stage }}"
  "description" "The scaling operation has not left {{ $labels.stage }}: a hook Job or the workload does not finish. See `kubectl -n {{ $labels.namespace }} describe stackablescaler {{ $labels.name }}` and its hook Jobs.") }}
{{- include "ebb.alert" (dict "ctx" . "name" "StackableScalerFailed" "cfg" $alerts.failed
  "expr" "max by (namespace, name) (ebb_stackable_scaler_stage{stage=\"Failed\"}) == 1"
  "summary" "StackableScaler {{ $labels.namespace }}/{{ $labels.name }} is Failed"
  "description" "A hook or the scale step failed; the scaler ignores its HPA until retried. Read status.currentState.reason, fix the cause, then `kubectl -n {{ $labels.namespace }} annotate stackablescaler {{ $labels.name }} autoscaling.stackable.tech/retry=true`.") }}
{{- end -}}
