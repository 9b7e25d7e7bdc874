{{- /* templates/deployment.yaml of every ebb chart: `{{ include "ebb.deployment" . }}`. */ -}}
{{- define "ebb.deployment" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail "replicas > 1 needs leaderElection.enabled=true: only the leader may write" }}
{{- end }}
{{- $webhook := .Values.webhook | default dict }}
{{- $ports := list (int .Values.metrics.port) (int .Values.health.port) }}
{{- if $webhook.enabled }}{{ $ports = append $ports (int $webhook.port) }}{{ end }}
{{- if ne (len $ports) (len ($ports | uniq)) }}
{{- fail (printf "metrics.port, health.port and (when on) webhook.port must differ, got %v" $ports) }}
{{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "ebb.fullname" . }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "ebb.labelsWith" (dict "ctx" . "extra" (dict "app.kubernetes.io/component" "controller")) | nindent 4 }}
spec:
  replicas: {{ .Values.replicas }}
  revisionHistoryLimit: {{ .Values.revisionHistoryLimit }}
  {{- with .Values.updateStrategy }}
  strategy:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "ebb.selectorLabels" . | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "ebb.podLabels" . | nindent 8 }}
      {{- with .Values.podAnnotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      serviceAccountName: {{ include "ebb.serviceAccountName" . }}
      automountServiceAccountToken: true
      terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
      {{- with .Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.dnsPolicy }}
      dnsPolicy: {{ . }}
      {{- end }}
      {{- with .Values.dnsConfig }}
      dnsConfig:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if kindIs "bool" .Values.hostUsers }}
      hostUsers: {{ .Values.hostUsers }}
      {{- end }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      containers:
        - name: {{ include "ebb.controller" . }}
          image: {{ include "ebb.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            {{- include "ebb.commonArgs" . | nindent 12 }}
            {{- include "ebb.own" (dict "ctx" . "name" "controllerArgs") | nindent 12 }}
            {{- with .Values.extraArgs }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          env:
            # Leader identity and Lease namespace (--lease-namespace falls back to POD_NAMESPACE).
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
            {{- with .Values.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            # /metrics (over TLS with metrics.tls or metrics.authenticated).
            - name: metrics
              containerPort: {{ .Values.metrics.port }}
              protocol: TCP
            # /healthz and /readyz alone, plain HTTP (--health-addr): the kubelet's probes.
            - name: health
              containerPort: {{ .Values.health.port }}
              protocol: TCP
            {{- include "ebb.own" (dict "ctx" . "name" "controllerPorts") | nindent 12 }}
          # The probes' timings are values (livenessProbe, readinessProbe); what they ask is not.
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            {{- toYaml .Values.livenessProbe | nindent 12 }}
          # /readyz fails until the controller's caches are warm.
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            {{- toYaml .Values.readinessProbe | nindent 12 }}
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
          {{- $mounts := include "ebb.volumeMounts" . | trim }}
          {{- if or $mounts .Values.extraVolumeMounts }}
          volumeMounts:
            {{- with $mounts }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with .Values.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- end }}
      {{- $volumes := include "ebb.volumes" . | trim }}
      {{- if or $volumes .Values.extraVolumes }}
      volumes:
        {{- with $volumes }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with .Values.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- end }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml . | nindent 8 }}
      {{- end }}
{{- end -}}
