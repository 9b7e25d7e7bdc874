{{/*
What is particular to scaledown-window. The shared templates include these names through "ebb.own".
They are "scaledown-window.*", not "ebb.*": all subcharts of an umbrella chart share one set of
template names, and a name defined by two charts would keep one definition for both.
*/}}

{{- define "scaledown-window.enabledTargets" -}}
{{- $on := list }}
{{- range $name := list "clusterAutoscaler" "nodeAnnotation" "machineAutoscalers" "karpenterNodePools" }}
{{- if (get $.Values.targets $name).enabled }}{{ $on = append $on $name }}{{ end }}
{{- end }}
{{- if not $on }}
{{- fail "enable at least one of targets.clusterAutoscaler, targets.nodeAnnotation, targets.machineAutoscalers, targets.karpenterNodePools" }}
{{- end }}
{{- join "," $on }}
{{- end -}}

{{/* --enable-<target>=<bool> and --enable-cluster-version (controllers/scaledown-window/src/lib.rs). */}}
{{- define "scaledown-window.controllerArgs" -}}
{{- $_ := include "scaledown-window.enabledTargets" . }}
{{- with .Values.targets }}
- {{ printf "--enable-cluster-autoscaler=%t" .clusterAutoscaler.enabled | quote }}
- {{ printf "--enable-node-annotation=%t" .nodeAnnotation.enabled | quote }}
- {{ printf "--enable-machine-autoscalers=%t" .machineAutoscalers.enabled | quote }}
- {{ printf "--enable-karpenter=%t" .karpenterNodePools.enabled | quote }}
{{- end }}
- {{ printf "--enable-cluster-version=%t" .Values.clusterVersion.enabled | quote }}
{{- end -}}
{{- define "scaledown-window.controllerPorts" -}}
{{- end -}}
{{- define "scaledown-window.controllerVolumes" -}}
{{- end -}}
{{- define "scaledown-window.controllerVolumeMounts" -}}
{{- end -}}

{{/* Namespaced resources in the watched namespaces: MachineAutoscalers and MachineSets (their
     watches follow --namespace). See rbac-needs.yaml for the calls. */}}
{{- define "scaledown-window.rules.watched" -}}
{{- if .Values.targets.machineAutoscalers.enabled }}
- apiGroups: ["autoscaling.openshift.io"]
  resources: ["machineautoscalers"]
  verbs: ["list", "watch", "patch"]
- apiGroups: ["machine.openshift.io"]
  resources: ["machinesets"]
  verbs: ["list", "watch"]
{{- end }}
{{- end -}}

{{/* ScaleDownSchedule and HolidayCalendar are cluster-scoped, and so are the other targets: a
     ClusterRole. Rules for a target only when it is enabled. */}}
{{- define "scaledown-window.rules.cluster" -}}
- apiGroups: ["scaling.ebb.dev"]
  resources: ["scaledownschedules"]
  verbs: ["get", "list", "watch", "patch"]
- apiGroups: ["scaling.ebb.dev"]
  resources: ["scaledownschedules/status"]
  verbs: ["patch"]
# HolidayCalendars, which windows name in excludeCalendars (read only).
- apiGroups: ["scaling.ebb.dev"]
  resources: ["holidaycalendars"]
  verbs: ["list", "watch"]
# Events about cluster-scoped objects land in the default namespace.
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- with .Values.targets }}
{{- if .clusterAutoscaler.enabled }}
- apiGroups: ["autoscaling.openshift.io"]
  resources: ["clusterautoscalers"]
  verbs: ["get", "list", "watch", "patch"]
{{- else if .machineAutoscalers.enabled }}
# machineAutoscalers schedules read ClusterAutoscaler default (it must allow scale-down).
- apiGroups: ["autoscaling.openshift.io"]
  resources: ["clusterautoscalers"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if .nodeAnnotation.enabled }}
- apiGroups: [""]
  resources: ["nodes"]
  verbs: ["list", "watch", "patch"]
{{- end }}
{{- if .karpenterNodePools.enabled }}
- apiGroups: ["karpenter.sh"]
  resources: ["nodepools"]
  verbs: ["list", "watch", "patch"]
{{- end }}
{{- end }}
{{- if .Values.clusterVersion.enabled }}
- apiGroups: ["config.openshift.io"]
  resources: ["clusterversions"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["machineconfiguration.openshift.io"]
  resources: ["machineconfigpools"]
  verbs: ["list", "watch"]
{{- end }}
{{- end -}}

{{/* The release namespace: nothing of its own. */}}
{{- define "scaledown-window.rules.release" -}}
{{- end -}}

{{/* Metrics: controllers/scaledown-window/src/metrics.rs. */}}
{{- define "scaledown-window.alerts" -}}
{{- $alerts := .Values.prometheusRule.alerts }}
{{- include "ebb.alert" (dict "ctx" . "name" "ScaleDownScheduleUndecidable" "cfg" $alerts.scheduleUndecidable
  "expr" "max by (name) (ebb_scaledown_window_schedule_invalid) == 1"
  "summary" "ScaleDownSchedule {{ $labels.name }} cannot be decided"
  "description" "Scale-down stays disabled (fail-safe) for its target until the schedule is fixed. `kubectl describe scaledownschedule {{ $labels.name }}`: its conditions say why.") }}
{{- include "ebb.alert" (dict "ctx" . "name" "ScaleDownScheduleTargetConflict" "cfg" $alerts.targetConflict
  "expr" "max by (name) (ebb_scaledown_window_target_conflict) == 1"
  "summary" "ScaleDownSchedule {{ $labels.name }} shares its target with another schedule"
  "description" "Two ScaleDownSchedules select the same target objects; ebb reports it instead of flipping the target back and forth. Make the selectors disjoint or delete one schedule.") }}
{{- end -}}
