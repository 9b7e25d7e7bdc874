{{/*
What is particular to service-scaler. The shared templates include these names through "ebb.own".
They are "service-scaler.*", not "ebb.*": all subcharts of an umbrella chart share one set of
template names, and a name defined by two charts would keep one definition for both.
*/}}

{{/* Flags of this controller beyond the common ones: none. */}}
{{- define "service-scaler.controllerArgs" -}}
{{- end -}}
{{- define "service-scaler.controllerPorts" -}}
{{- end -}}
{{- define "service-scaler.controllerVolumes" -}}
{{- end -}}
{{- define "service-scaler.controllerVolumeMounts" -}}
{{- end -}}

{{/* Namespaced resources in the watched namespaces (see rbac-needs.yaml for the calls). */}}
{{- define "service-scaler.rules.watched" -}}
- apiGroups: ["scaler.udaan.io"]
  resources: ["servicescalers"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["scaler.udaan.io"]
  resources: ["servicescalers/status"]
  verbs: ["patch"]
# HPAs it creates carry a controller owner reference with blockOwnerDeletion, which the
# OwnerReferencesPermissionEnforcement admission plugin (on in OpenShift) allows only with this.
- apiGroups: ["scaler.udaan.io"]
  resources: ["servicescalers/finalizers"]
  verbs: ["update"]
# FleetSchedules: one schedule for every HPA a selector matches; their status.
- apiGroups: ["scaling.ebb.dev"]
  resources: ["fleetschedules"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["scaling.ebb.dev"]
  resources: ["fleetschedules/status"]
  verbs: ["patch"]
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# Hibernation (replicaSpec.hibernate): the replicas of an HPA's target, through /scale only.
- apiGroups: ["apps"]
  resources: ["deployments/scale", "statefulsets/scale", "replicasets/scale"]
  verbs: ["get", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* Cluster-scoped resources: HolidayCalendars, which ranges name in excludeCalendars. Always a
     ClusterRole, also when watchNamespaces makes the rest Roles: a calendar serves every namespace. */}}
{{- define "service-scaler.rules.cluster" -}}
- apiGroups: ["scaling.ebb.dev"]
  resources: ["holidaycalendars"]
  verbs: ["list", "watch"]
{{- end -}}

{{/* The release namespace: the hibernation ledger (controllers/service-scaler/src/ledger.rs), a
     ConfigMap named after the Lease: made once (RBAC cannot limit a create to a name), then read and
     patched, one entry per hibernating ServiceScaler; `cleanup` deletes it. */}}
{{- define "service-scaler.rules.release" -}}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["create"]
- apiGroups: [""]
  resources: ["configmaps"]
  resourceNames: [{{ printf "%s-hibernation" (include "ebb.leaseName" .) | quote }}]
  verbs: ["get", "patch"{{ if .Values.cleanupOnUninstall.enabled }}, "delete"{{ end }}]
{{- end -}}

{{/* Metrics: controllers/service-scaler/src/metrics.rs. */}}
{{- define "service-scaler.alerts" -}}
{{- include "ebb.alert" (dict "ctx" . "name" "ServiceScalerInvalid" "cfg" .Values.prometheusRule.alerts.invalid
  "expr" (printf "max by (namespace) (ebb_service_scaler_managed_objects{state=\"invalid\", namespace=%q}) > 0" .Release.Namespace)
  "summary" "{{ $value }} ServiceScaler(s) cannot be decided"
  "description" "ebb-service-scaler finds ServiceScalers whose spec it cannot decide (see their conditions: `kubectl get servicescalers -A`); their HPAs keep their last settings until fixed.") }}
{{- end -}}
