{{/*
What is particular to workshop-scaler. The shared templates include these names through "ebb.own".
They are "workshop-scaler.*", not "ebb.*": all subcharts of an umbrella chart share one set of
template names, and a name defined by two charts would keep one definition for both.
*/}}

{{/* Flags of this controller beyond the common ones: none. */}}
{{- define "workshop-scaler.controllerArgs" -}}
{{- end -}}
{{- define "workshop-scaler.controllerPorts" -}}
{{- end -}}
{{- define "workshop-scaler.controllerVolumes" -}}
{{- end -}}
{{- define "workshop-scaler.controllerVolumeMounts" -}}
{{- end -}}

{{/* Namespaced resources in the watched namespaces (see rbac-needs.yaml for the calls). */}}
{{- define "workshop-scaler.rules.watched" -}}
- apiGroups: ["babylon.gpte.redhat.com"]
  resources: ["workshopprovisions"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["babylon.gpte.redhat.com"]
  resources: ["workshopprovisions/status"]
  verbs: ["patch"]
- apiGroups: ["babylon.gpte.redhat.com"]
  resources: ["workshops", "workshopuserassignments"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["poolboy.gpte.redhat.com"]
  resources: ["resourceclaims"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["scaling.ebb.dev"]
  resources: ["workshopscalingpolicies"]
  verbs: ["list", "watch"]
- apiGroups: ["scaling.ebb.dev"]
  resources: ["workshopscalingpolicies/status"]
  verbs: ["patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end -}}

{{/* Cluster-scoped resources: none. */}}
{{- define "workshop-scaler.rules.cluster" -}}
{{- end -}}

{{/* The release namespace: nothing of its own. */}}
{{- define "workshop-scaler.rules.release" -}}
{{- end -}}

{{/* Metrics: controllers/workshop-scaler/src/metrics.rs. */}}
{{- define "workshop-scaler.alerts" -}}
{{- $alerts := .Values.prometheusRule.alerts }}
{{- $atMax := $alerts.atMaxProvisions }}
{{- /* The controller exports the condition itself (it knows each provision's threshold). */}}
{{- include "ebb.alert" (dict "ctx" . "name" "WorkshopProvisionAtMaxProvisions" "cfg" $atMax
  "expr" "max by (namespace, name) (ebb_workshop_scaler_provision_at_max_with_demand) == 1"
  "summary" "WorkshopProvision {{ $labels.namespace }}/{{ $labels.name }} is at maxProvisions while seats run out"
  "description" "spec.count has reached autoScaling.maxProvisions and the workshop's utilization is at or above the provision's threshold: new attendees may find no seat. Raise maxProvisions or add a provision.") }}
{{- include "ebb.alert" (dict "ctx" . "name" "WorkshopProvisionScaleUpStuck" "cfg" $alerts.scaleUpStuck
  "expr" "max by (namespace, name) (ebb_workshop_scaler_provision_active) == 1"
  "summary" "WorkshopProvision {{ $labels.namespace }}/{{ $labels.name }}: scale-up not settling"
  "description" "status.autoScalingActive has been true for a long time: a ResourceClaim of the provision neither became ready nor completed/failed, so no further scale-up happens. See the provision's conditions and Events.") }}
{{- end -}}
