{{- /* templates/rbac.yaml of every ebb chart: `{{ include "ebb.rbac" . }}`. */ -}}
{{- define "ebb.rbac" -}}
{{- /*
The rules themselves are in _controller.tpl ("<controller>.rules.watched",
"<controller>.rules.cluster"); rbac-needs.yaml next to the chart lists the API calls the code makes,
and .ci/check-charts fails unless the two agree.
  - watched rules: namespaced resources the controller reads/writes. Cluster-wide (watchNamespaces
    empty): a ClusterRole. Otherwise a Role + RoleBinding in each watched namespace, nothing more.
  - cluster rules: cluster-scoped resources: always a ClusterRole.
  - the release namespace's Role: the leader-election Lease (leaderElection.enabled) and the
    uninstall hook's stop of the Deployment (cleanupOnUninstall.enabled).
*/ -}}
{{- if .Values.rbac.create }}
{{- $fullname := include "ebb.fullname" . }}
{{- $sa := include "ebb.serviceAccountName" . }}
{{- $namespaces := include "ebb.watchNamespaces" . | fromJsonArray }}
{{- $watched := include "ebb.own" (dict "ctx" . "name" "rules.watched") | trim }}
{{- $cluster := include "ebb.own" (dict "ctx" . "name" "rules.cluster") | trim }}
{{- $clusterRules := list }}
{{- if $cluster }}{{ $clusterRules = append $clusterRules $cluster }}{{ end }}
{{- if and $watched (not $namespaces) }}{{ $clusterRules = append $clusterRules $watched }}{{ end }}
{{- if .Values.leaderElection.enabled }}
{{- /* Other installs' Leases (by label): an install whose scope overlaps an older one's stands down. */}}
{{- $clusterRules = append $clusterRules "- apiGroups: [\"coordination.k8s.io\"]\n  resources: [\"leases\"]\n  verbs: [\"list\"]" }}
{{- end }}
{{- if .Values.metrics.authenticated }}
{{- /* --metrics-auth: who calls /metrics (TokenReview) and whether it may (SubjectAccessReview). */}}
{{- $clusterRules = append $clusterRules "- apiGroups: [\"authentication.k8s.io\"]\n  resources: [\"tokenreviews\"]\n  verbs: [\"create\"]\n- apiGroups: [\"authorization.k8s.io\"]\n  resources: [\"subjectaccessreviews\"]\n  verbs: [\"create\"]" }}
{{- end }}
{{- if $clusterRules }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
rules:
{{- range $clusterRules }}
{{ . }}
{{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $fullname }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $fullname }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ .Release.Namespace }}
{{- end }}
{{- if and $watched $namespaces }}
{{- range $ns := $namespaces }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $fullname }}
  namespace: {{ $ns }}
  labels:
    {{- include "ebb.labels" $ | nindent 4 }}
rules:
{{ $watched }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $fullname }}
  namespace: {{ $ns }}
  labels:
    {{- include "ebb.labels" $ | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $fullname }}
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ $.Release.Namespace }}
{{- end }}
{{- end }}
{{- /* The release namespace's Role: the Lease (leaderElection.enabled), what the uninstall
hook's `cleanup` does there (cleanupOnUninstall.enabled), and the controller's own objects there
("<controller>.rules.release"), any without the others. */}}
{{- $release := include "ebb.own" (dict "ctx" . "name" "rules.release") | trim }}
{{- if or .Values.leaderElection.enabled .Values.cleanupOnUninstall.enabled $release }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $fullname }}-leader-election
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
rules:
  {{- if .Values.leaderElection.enabled }}
  # Leader election creates the Lease once, held by nobody (RBAC cannot limit a create to a name) ...
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["create"]
  # ... then reads it, and takes, renews and releases it with updates on condition of the
  # resourceVersion it read; a standby watches it (by its name, a metadata.name field selector)
  # to take a released Lease at once; the install's scope is patched onto it once: this Lease only.
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: [{{ include "ebb.leaseName" . | quote }}]
    verbs: ["get", "list", "watch", "update", "patch"]
  {{- end }}
  {{- if .Values.cleanupOnUninstall.enabled }}
  # `cleanup` (the pre-delete hook) stops the controller first: scales its Deployment to 0.
  - apiGroups: ["apps"]
    resources: ["deployments/scale"]
    resourceNames: [{{ $fullname | quote }}]
    verbs: ["patch"]
  # ... and waits until none of its pods is left (a replica still stopping would take the Lease
  # again once cleanup lets go of it).
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["list"]
  # ... and deletes the Lease it took over last, so nothing of the release is left.
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    resourceNames: [{{ include "ebb.leaseName" . | quote }}]
    verbs: ["delete"]
  {{- end }}
  {{- with $release }}
  {{- . | nindent 2 }}
  {{- end }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $fullname }}-leader-election
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $fullname }}-leader-election
subjects:
  - kind: ServiceAccount
    name: {{ $sa }}
    namespace: {{ .Release.Namespace }}
{{- end }}
{{- end }}
{{- end -}}
