{{- /* templates/aggregate-roles.yaml of every ebb chart: `{{ include "ebb.aggregate-roles" . }}`. */ -}}
{{- define "ebb.aggregate-roles" -}}
{{- /*
Aggregated ClusterRoles for the kinds this chart installs (Chart.yaml annotation ebb.dev/crds):
cluster users read them with the built-in `view` role and create, change and delete them with
`edit`/`admin`, as for built-in kinds. Bound to nobody by the chart; the controller's own rights are
in rbac.yaml.
*/ -}}
{{- if and .Values.rbac.create .Values.rbac.aggregateToDefaultRoles }}
{{- $fullname := include "ebb.fullname" . }}
{{- range $crd := splitList "," (index .Chart.Annotations "ebb.dev/crds") }}
{{- $parts := splitn "." 2 (trim $crd) }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ printf "%s-%s-view" $fullname $parts._0 }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" $ "extra" (dict "rbac.authorization.k8s.io/aggregate-to-view" "true")) | nindent 4 }}
rules:
  - apiGroups: [{{ $parts._1 | quote }}]
    resources: [{{ $parts._0 | quote }}, {{ printf "%s/status" $parts._0 | quote }}]
    verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ printf "%s-%s-edit" $fullname $parts._0 }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" $ "extra" (dict "rbac.authorization.k8s.io/aggregate-to-edit" "true" "rbac.authorization.k8s.io/aggregate-to-admin" "true")) | nindent 4 }}
rules:
  - apiGroups: [{{ $parts._1 | quote }}]
    resources: [{{ $parts._0 | quote }}]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]
{{- end }}
{{- end }}
{{- end -}}
