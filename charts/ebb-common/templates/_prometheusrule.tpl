{{- /* templates/prometheusrule.yaml of every ebb chart: `{{ include "ebb.prometheusrule" . }}`. */ -}}
{{- define "ebb.prometheusrule" -}}
{{- /*
Needs the Prometheus Operator CRDs. Alerts every controller has are here; its own ones are
"<controller>.alerts" in _controller.tpl.
*/ -}}
{{- if .Values.prometheusRule.enabled }}
{{- $controller := include "ebb.controller" . }}
{{- $prefix := printf "ebb_%s" ($controller | replace "-" "_") }}
{{- $alerts := .Values.prometheusRule.alerts }}
{{- $ns := .Release.Namespace }}
{{- /* A process that has heard nothing from the API server for 3 minutes (silenceSeconds; it probes the server
     after 60 s of silence, so a healthy one is never more than ~90 s behind), or nothing at all
     since it started (build_info without api_last_contact). EbbWatchesDisconnected leaves these
     to EbbApiUnreachable: one cause, one alert. */}}
{{- $contact := printf "%s_api_last_contact_timestamp_seconds{namespace=%q}" $prefix $ns }}
{{- $silence := $alerts.apiUnreachable.silenceSeconds | default 180 | int }}
{{- $unreachable := printf "time() - max by (namespace, pod) (%s) > %d or (max by (namespace, pod) (%s_build_info{namespace=%q}) unless on (namespace, pod) %s)" $contact $silence $prefix $ns $contact }}
{{- $disconnected := printf "max by (namespace, pod) (%s_watches{namespace=%q}) - max by (namespace, pod) (%s_watches_connected{namespace=%q}) > 0" $prefix $ns $prefix $ns }}
{{- if $alerts.apiUnreachable.enabled }}
{{- $disconnected = printf "(%s) unless on (namespace, pod) (%s)" $disconnected $unreachable }}
{{- end }}
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: {{ include "ebb.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" . "extra" .Values.prometheusRule.labels) | nindent 4 }}
spec:
  groups:
    - name: {{ include "ebb.fullname" . }}
      rules:
        {{- include "ebb.alert" (dict "ctx" . "name" "EbbControllerDown" "cfg" $alerts.controllerDown
          "expr" (printf "absent(%s_build_info{namespace=%q})" $prefix $ns)
          "summary" (printf "%s is not running or not scraped" (include "ebb.fullname" .))
          "description" (printf "No process of %s in %s has been scraped for a while (its build_info series is absent), however it is scraped (ServiceMonitor or not): nothing reconciles %s objects." (include "ebb.fullname" .) $ns $controller)) | nindent 8 }}
        {{- include "ebb.alert" (dict "ctx" . "name" "EbbReconcileErrors" "cfg" $alerts.reconcileErrors
          "expr" (printf "sum by (namespace, category) (rate(%s_reconcile_errors_total{namespace=%q}[5m])) > 0" $prefix $ns)
          "summary" (printf "%s keeps failing to reconcile ({{ $labels.category }})" (include "ebb.fullname" .))
          "description" (printf "%s in %s has had %s reconcile errors for a while ({{ $value | humanize }}/s). Check its logs and the Events of the objects it manages." (include "ebb.fullname" .) $ns "{{ $labels.category }}")) | nindent 8 }}
        {{- include "ebb.alert" (dict "ctx" . "name" "EbbNoLeader" "cfg" $alerts.noLeader
          "expr" (printf "max(%s_leader{namespace=%q}) < 1" $prefix $ns)
          "summary" (printf "No replica of %s holds the leader Lease" (include "ebb.fullname" .))
          "description" (printf "%s in %s runs, but no replica leads: nothing is written. Check the Lease and the replicas' logs (leader election, RBAC on leases)." (include "ebb.fullname" .) $ns)) | nindent 8 }}
        {{- include "ebb.alert" (dict "ctx" . "name" "EbbOverlappingInstalls" "cfg" $alerts.overlappingInstalls
          "expr" (printf "max(%s_overlapping_installs{namespace=%q}) > 0" $prefix $ns)
          "summary" (printf "Another install of %s manages some of the same objects" $controller)
          "description" (printf "%s in %s shares objects with another running install of %s (same namespaces, selectors that can match the same objects). The newer of the two writes nothing until their watchNamespaces or labelSelector no longer overlap, or one is uninstalled; the controllers' logs name both." (include "ebb.fullname" .) $ns $controller)) | nindent 8 }}
        {{- include "ebb.alert" (dict "ctx" . "name" "EbbApiUnreachable" "cfg" $alerts.apiUnreachable
          "expr" $unreachable
          "summary" (printf "%s pod {{ $labels.pod }} cannot reach the Kubernetes API server" (include "ebb.fullname" .))
          "description" (printf "%s in %s (pod {{ $labels.pod }}) has had no answer from the API server for over 3 minutes, or none since it started. It keeps its caches and retries about every second; a leader stops writing before its Lease could expire, so nothing is written until the server answers again. Check the API server and the path to it (NetworkPolicy egress, apiServer.cidrs, the node's network); a restart does not bring the server back and drops the caches." (include "ebb.fullname" .) $ns)) | nindent 8 }}
        {{- include "ebb.alert" (dict "ctx" . "name" "EbbWatchesDisconnected" "cfg" $alerts.watchesDisconnected
          "expr" $disconnected
          "summary" (printf "%s pod {{ $labels.pod }} has watches that stay disconnected" (include "ebb.fullname" .))
          "description" (printf "{{ $value }} watch(es) of %s in %s (pod {{ $labels.pod }}) have not delivered since the API server last served a request well, while the server still answers (with 429/5xx, say): the caches behind them are going stale, and what they watch is not acted on. The pod's log names each watch (\"watch failed; retrying\")." (include "ebb.fullname" .) $ns)) | nindent 8 }}
        {{- include "ebb.own" (dict "ctx" . "name" "alerts") | nindent 8 }}
        {{- with .Values.prometheusRule.additionalRules }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
{{- end }}
{{- end -}}
