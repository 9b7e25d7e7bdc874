{{/*
The helpers of every ebb chart. Each chart depends on this library (Chart.yaml, file://../ebb-common)
and its templates/*.yaml are one include each of the template of that name here; what differs per
controller lives in the chart's own templates/_controller.tpl, included through "ebb.own".
*/}}

{{/* The controller this chart runs: its binary, the prefix of its metrics, the name of its own
     templates. Chart.yaml's ebb.dev/controller, which an umbrella chart's alias (renaming the chart)
     leaves alone. */}}
{{- define "ebb.controller" -}}
{{- index (.Chart.Annotations | default dict) "ebb.dev/controller" | default .Chart.Name -}}
{{- end -}}

{{/* One of the controller's own templates (_controller.tpl): (dict "ctx" $ "name" "rules.watched")
     includes "<controller>.rules.watched". Named per controller because all subcharts of an
     umbrella chart share one set of template names: four charts defining "ebb.rules.watched"
     would leave one definition for all four. */}}
{{- define "ebb.own" -}}
{{- include (printf "%s.%s" (include "ebb.controller" .ctx) .name) .ctx -}}
{{- end -}}

{{/* The controller's name: binary = chart name (an alias in an umbrella chart renames it). */}}
{{- define "ebb.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Lease (--lease-name): the controller's name (the Lease a running install already
     holds), or the fullnameOverride that lets a second install live in the same namespace. The
     release's Role names it (resourceNames). */}}
{{- define "ebb.leaseName" -}}
{{- .Values.leaderElection.leaseName | default (.Values.fullnameOverride | default (include "ebb.name" .)) -}}
{{- end -}}

{{/* Deployment = ServiceAccount = field manager: ebb-<controller>. */}}
{{- define "ebb.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "ebb-%s" (include "ebb.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ebb.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ebb.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object the chart renders: the chart's own, then commonLabels. */}}
{{- define "ebb.labels" -}}
{{- include "ebb.labelsWith" (dict "ctx" . "extra" dict) -}}
{{- end -}}

{{/* The same with labels of one object's own: (dict "ctx" $ "extra" (dict "app.kubernetes.io/component" "metrics")).
     One map, so a key is never written twice: the chart's labels win over `extra` (the object's
     own, e.g. serviceMonitor.labels), which wins over commonLabels. */}}
{{- define "ebb.labelsWith" -}}
{{- $ctx := .ctx -}}
{{- $labels := dict
    "helm.sh/chart" (printf "%s-%s" $ctx.Chart.Name $ctx.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-")
    "app.kubernetes.io/version" ($ctx.Chart.AppVersion | toString)
    "app.kubernetes.io/managed-by" $ctx.Release.Service
    "app.kubernetes.io/part-of" "ebb" -}}
{{- $labels = merge $labels (include "ebb.selectorLabels" $ctx | fromYaml) (.extra | default dict) ($ctx.Values.commonLabels | default dict) -}}
{{- toYaml $labels -}}
{{- end -}}

{{/* Labels of the controller's pods: the selector's and the component, then podLabels, then
     commonLabels (earlier wins). */}}
{{- define "ebb.podLabels" -}}
{{- $labels := merge (include "ebb.selectorLabels" . | fromYaml) (dict "app.kubernetes.io/component" "controller") (.Values.podLabels | default dict) (.Values.commonLabels | default dict) -}}
{{- toYaml $labels -}}
{{- end -}}

{{- define "ebb.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ebb.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image: image.repository, its registry host replaced by image.registry, else by
     global.image.registry (an umbrella chart's, for all its subcharts), when one is set. The
     repository's first part is a registry host when it has a "." or ":" or is "localhost" (as
     container runtimes read it); otherwise the registry is put in front. */}}
{{- define "ebb.image" -}}
{{- $repository := .Values.image.repository -}}
{{- $registry := .Values.image.registry | default (dig "image" "registry" "" (.Values.global | default dict)) -}}
{{- if $registry -}}
{{- $parts := splitn "/" 2 $repository -}}
{{- if and $parts._1 (or (contains "." $parts._0) (contains ":" $parts._0) (eq $parts._0 "localhost")) -}}
{{- $repository = $parts._1 -}}
{{- end -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" $registry) $repository -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* Watched namespaces (empty = cluster-wide). Charts without the value watch cluster-wide. */}}
{{- define "ebb.watchNamespaces" -}}
{{- (.Values.watchNamespaces | default list) | uniq | toJson -}}
{{- end -}}

{{/* The flags every ebb binary takes (shared/runtime/src/args.rs), one per values key. */}}
{{- define "ebb.commonArgs" -}}
- {{ printf "--metrics-addr=0.0.0.0:%v" .Values.metrics.port | quote }}
- {{ printf "--health-addr=0.0.0.0:%v" .Values.health.port | quote }}
{{- if .Values.metrics.authenticated }}
- "--metrics-auth"
{{- end }}
{{- if include "ebb.metricsTLS" . }}
- {{ printf "--metrics-cert-dir=%s" (include "ebb.metricsCertDir" .) | quote }}
{{- end }}
- {{ printf "--log-format=%s" .Values.logFormat | quote }}
- {{ printf "--leader-election=%t" .Values.leaderElection.enabled | quote }}
{{- if .Values.leaderElection.enabled }}
{{- /* The controller's name (the Lease a running install already holds), or the fullnameOverride
     that lets a second install live in the same namespace. */}}
- {{ printf "--lease-name=%s" (include "ebb.leaseName" .) | quote }}
{{- end }}
{{- with (include "ebb.watchNamespaces" . | fromJsonArray) }}
- {{ printf "--namespace=%s" (join "," .) | quote }}
{{- end }}
{{- with .Values.labelSelector }}
- {{ printf "--label-selector=%s" . | quote }}
{{- end }}
{{- if .Values.dryRun }}
- "--dry-run"
{{- end }}
- {{ printf "--concurrent-reconciles=%v" (int .Values.concurrentReconciles) | quote }}
{{- with .Values.kubeApi }}
{{- if .qps }}
- {{ printf "--kube-api-qps=%v" (int .qps) | quote }}
{{- end }}
{{- if .burst }}
- {{ printf "--kube-api-burst=%v" (int .burst) | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* One alert of the PrometheusRule: (dict "ctx" $ "name" "Alert" "cfg" .Values.prometheusRule.alerts.x "expr" "..." "summary" "..." "description" "...").
     runbook_url: prometheusRule.runbookBaseUrl + "#" + the alert's name in lower case (the anchor of
     its section in docs/runbooks.md). */}}
{{- define "ebb.alert" -}}
{{- if .cfg.enabled }}
- alert: {{ .name }}
  expr: {{ .expr | quote }}
  for: {{ .cfg.for }}
  labels:
    severity: {{ .cfg.severity }}
    {{- with .ctx.Values.prometheusRule.alertLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    summary: {{ .summary | quote }}
    description: {{ .description | quote }}
    {{- with .ctx.Values.prometheusRule.runbookBaseUrl }}
    runbook_url: {{ printf "%s#%s" . (lower $.name) | quote }}
    {{- end }}
{{- end }}
{{- end -}}

{{/* Serving certificates: one mechanism for every TLS server of a chart, /metrics (metrics.tls)
     and stackable-scaler's admission webhook (webhook.certManager, webhook.tls). Either
     cert-manager issues the certificate (certManager.enabled: a Certificate for the server's
     Service, from certManager.issuerRef or the chart's self-signed Issuer; templates/certificates.yaml)
     into the Secret `<fullname>-<server>-tls`, or the user gives a kubernetes.io/tls Secret of
     their own (secretName). The Secret is mounted as a directory, never by subPath, so a renewal
     reaches the pod and the controller serves it without a restart. */}}

{{/* Whether /metrics is served over TLS ("true" or ""): always with metrics.authenticated (the
     scraper's token must never cross the network in clear), else when a certificate is given. */}}
{{- define "ebb.metricsTLS" -}}
{{- $tls := .Values.metrics.tls -}}
{{- if or .Values.metrics.authenticated $tls.certManager.enabled $tls.secretName -}}true{{- end -}}
{{- end -}}

{{- define "ebb.metricsCertDir" -}}/etc/ebb/metrics-certs{{- end -}}

{{/* A TLS server's settings as JSON, by name: "metrics" or "webhook" (stackable-scaler): its
     cert-manager values and where they are (for messages), the Secret the user gives, and what
     to say when neither is given. */}}
{{- define "ebb.serving" -}}
{{- $v := .ctx.Values -}}
{{- if eq .name "metrics" -}}
{{- dict "certManager" $v.metrics.tls.certManager "certManagerKey" "metrics.tls.certManager"
    "secretName" $v.metrics.tls.secretName "instead" "give metrics.tls.secretName"
    "missing" "metrics.authenticated=true serves /metrics over TLS (the scraper's token must not cross the network in clear), with a certificate from cert-manager or from a Secret of yours: set metrics.tls.certManager.enabled=true, or metrics.tls.secretName to a kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt) in the release namespace" | toJson -}}
{{- else if eq .name "webhook" -}}
{{- dict "certManager" $v.webhook.certManager "certManagerKey" "webhook.certManager"
    "secretName" $v.webhook.tls.secretName "instead" "give webhook.tls.secretName and webhook.tls.caBundle"
    "missing" "webhook.tls.secretName is required when webhook.enabled=true and webhook.certManager.enabled=false" | toJson -}}
{{- else -}}
{{- fail (printf "ebb.serving: no TLS server %q" .name) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding a server's certificate: (dict "ctx" $ "name" "metrics"). cert-manager's
     `<fullname>-<name>-tls`, else the user's, which must then be given. */}}
{{- define "ebb.servingSecretName" -}}
{{- $s := include "ebb.serving" . | fromJson -}}
{{- if $s.certManager.enabled -}}
{{- printf "%s-%s-tls" (include "ebb.fullname" .ctx) .name -}}
{{- else -}}
{{- required $s.missing $s.secretName -}}
{{- end -}}
{{- end -}}

{{/* The cert-manager Certificate of a server, for its Service `<fullname>-<name>`:
     (dict "ctx" $ "name" "metrics"). Refuses a cluster that does not serve cert-manager.io/v1,
     saying how to proceed, unless certManager.skipCapabilityCheck (helm template, Argo CD). */}}
{{- define "ebb.servingCertificate" -}}
{{- $ctx := .ctx -}}
{{- $s := include "ebb.serving" . | fromJson -}}
{{- $cm := $s.certManager -}}
{{- if and (not $cm.skipCapabilityCheck) (not ($ctx.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
{{- fail (printf "%s.enabled: this cluster does not serve cert-manager.io/v1. Install cert-manager first; or set %s.enabled=false and %s; or, where capabilities are unknown (helm template, Argo CD), set %s.skipCapabilityCheck=true" $s.certManagerKey $s.certManagerKey $s.instead $s.certManagerKey) -}}
{{- end -}}
{{- $fullname := include "ebb.fullname" $ctx -}}
{{- $service := printf "%s-%s" $fullname .name }}
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: {{ $service }}
  namespace: {{ $ctx.Release.Namespace }}
  labels:
    {{- include "ebb.labels" $ctx | nindent 4 }}
spec:
  secretName: {{ include "ebb.servingSecretName" . }}
  dnsNames:
    - {{ printf "%s.%s.svc" $service $ctx.Release.Namespace }}
    - {{ printf "%s.%s.svc.cluster.local" $service $ctx.Release.Namespace }}
  privateKey:
    algorithm: ECDSA
    size: 256
    rotationPolicy: Always
  issuerRef:
    {{- if $cm.issuerRef }}
    {{- toYaml $cm.issuerRef | nindent 4 }}
    {{- else }}
    kind: Issuer
    name: {{ $fullname }}-ca
    {{- end }}
{{- end -}}

{{/* The servers whose certificate cert-manager issues, as a JSON list of names. */}}
{{- define "ebb.certManagerServings" -}}
{{- $names := list -}}
{{- if and (include "ebb.metricsTLS" .) .Values.metrics.tls.certManager.enabled -}}
{{- $names = append $names "metrics" -}}
{{- end -}}
{{- $webhook := .Values.webhook | default dict -}}
{{- if and $webhook.enabled (dig "certManager" "enabled" false $webhook) -}}
{{- $names = append $names "webhook" -}}
{{- end -}}
{{- $names | toJson -}}
{{- end -}}

{{/* The pod's volumes and the container's mounts: the metrics certificate, then the
     controller's own (_controller.tpl), without extraVolumes/extraVolumeMounts. */}}
{{- define "ebb.volumes" -}}
{{- if include "ebb.metricsTLS" . }}
- name: metrics-certs
  secret:
    secretName: {{ include "ebb.servingSecretName" (dict "ctx" . "name" "metrics") }}
{{- end }}
{{- with include "ebb.own" (dict "ctx" . "name" "controllerVolumes") | trim }}
{{ . }}
{{- end }}
{{- end -}}

{{- define "ebb.volumeMounts" -}}
{{- if include "ebb.metricsTLS" . }}
- name: metrics-certs
  mountPath: {{ include "ebb.metricsCertDir" . }}
  readOnly: true
{{- end }}
{{- with include "ebb.own" (dict "ctx" . "name" "controllerVolumeMounts") | trim }}
{{ . }}
{{- end }}
{{- end -}}
