{{- /* templates/cleanup-hook.yaml of every ebb chart: `{{ include "ebb.cleanup-hook" . }}`. */ -}}
{{- define "ebb.cleanup-hook" -}}
{{- /*
With cleanupOnUninstall.enabled (the default), `helm uninstall` first runs `<controller> cleanup` as
a Job (a pre-delete hook; Argo CD runs it as a PreDelete hook when the Application is deleted) under
the controller's own ServiceAccount: it scales the Deployment to 0 and waits until its pods are
gone, takes the controller's Lease, gives every object the controller changed its own values back
(only its finalizers with cleanupOnUninstall.keepSettings) and deletes the Lease
(docs/uninstall.md). A failed hook stops the uninstall; `helm uninstall --no-hooks` skips it.
*/ -}}
{{- if .Values.cleanupOnUninstall.enabled }}
apiVersion: batch/v1
kind: Job
metadata:
  name: {{ include "ebb.fullname" . }}-cleanup
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" . "extra" (dict "app.kubernetes.io/component" "cleanup")) | nindent 4 }}
  annotations:
    helm.sh/hook: pre-delete
    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
    # Argo CD does not run Helm's pre-delete hooks; this runs the same Job before it deletes the
    # Application's resources.
    argocd.argoproj.io/hook: PreDelete
    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded
spec:
  backoffLimit: {{ .Values.cleanupOnUninstall.backoffLimit }}
  activeDeadlineSeconds: {{ .Values.cleanupOnUninstall.activeDeadlineSeconds }}
  template:
    metadata:
      # Not the controller's selector labels: the metrics Service and the PodDisruptionBudget
      # must not count this pod, nor must cleanup's wait for the controller's pods.
      labels:
        {{- $own := dict "app.kubernetes.io/name" (printf "%s-cleanup" (include "ebb.name" .)) "app.kubernetes.io/instance" .Release.Name "app.kubernetes.io/part-of" "ebb" "app.kubernetes.io/component" "cleanup" }}
        {{- merge $own (.Values.commonLabels | default dict) | toYaml | nindent 8 }}
    spec:
      restartPolicy: Never
      serviceAccountName: {{ include "ebb.serviceAccountName" . }}
      automountServiceAccountToken: true
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      containers:
        - name: cleanup
          image: {{ include "ebb.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            - cleanup
            - {{ printf "--stop-deployment=%s" (include "ebb.fullname" .) | quote }}
            {{- if .Values.cleanupOnUninstall.keepSettings }}
            - "--keep-settings"
            {{- end }}
            {{- include "ebb.commonArgs" . | nindent 12 }}
            {{- include "ebb.own" (dict "ctx" . "name" "controllerArgs") | nindent 12 }}
          env:
            - name: POD_NAME
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            - name: RUST_LOG
              value: {{ .Values.logLevel | quote }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end }}
{{- end -}}
