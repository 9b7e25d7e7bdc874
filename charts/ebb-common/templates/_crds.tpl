{{- /* templates/crds.yaml of every ebb chart: `{{ include "ebb.crds" . }}`. */ -}}
{{- define "ebb.crds" -}}
{{- /*
The chart's CRDs, from files/crds/ (copies of the repository's generated crds/, kept in sync by
`make crds` and checked by `make crds-check`). Rendered as templates rather than from Helm's crds/
folder so that `crds.install=false` can skip them (another owner, e.g. Babylon, installs them) and
so that `helm upgrade` updates them. `helm.sh/resource-policy: keep`: uninstalling the chart never
deletes a CRD (which would delete every custom resource of that kind).

Shared CRDs, from files/crds-shared/: kinds that the controllers of several charts read
(HolidayCalendar: service-scaler and scaledown-window), so each of those charts carries a copy,
and a user may install either chart alone or both. Helm lets only one release own an object, so
with crds.install a shared CRD is rendered only when `lookup` finds
  - no such CRD in the cluster (the first ebb release to install it owns it; `helm template`,
    `helm lint` and `--dry-run=client` cannot look and always render it), or
  - one whose annotations meta.helm.sh/release-name and meta.helm.sh/release-namespace name this
    release (the owner: its `helm upgrade` keeps updating the CRD).
Any other CRD of that name (another release's, or one applied without Helm) is left as it is:
the second chart installs without "invalid ownership metadata" and uses the CRD as it finds it.
Within one release (an umbrella chart with several ebb charts as subcharts, all looking at the
same cluster) a shared CRD is rendered once: the first subchart to render it notes its name in
`.Release`, the one map every subchart of a release shares, and the others skip it.
*/ -}}
{{- if .Values.crds.install }}
{{- $crds := list }}
{{- range $path, $_ := .Files.Glob "files/crds/*.yaml" }}
{{- $crds = append $crds ($.Files.Get $path | fromYaml) }}
{{- end }}
{{- $shared := dict }}
{{- if kindIs "map" .Release }}
{{- $shared = get .Release "ebbSharedCRDs" | default dict }}
{{- $_ := set .Release "ebbSharedCRDs" $shared }}
{{- end }}
{{- range $path, $_ := .Files.Glob "files/crds-shared/*.yaml" }}
{{- $crd := $.Files.Get $path | fromYaml }}
{{- $name := $crd.metadata.name }}
{{- $live := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" $name }}
{{- $owner := dig "metadata" "annotations" "meta.helm.sh/release-name" "" $live }}
{{- $ownerNamespace := dig "metadata" "annotations" "meta.helm.sh/release-namespace" "" $live }}
{{- $ours := and (eq $owner $.Release.Name) (eq $ownerNamespace $.Release.Namespace) }}
{{- if and (or (not $live) $ours) (not (hasKey $shared $name)) }}
{{- $_ := set $shared $name $.Chart.Name }}
{{- $crds = append $crds $crd }}
{{- end }}
{{- end }}
{{- range $crd := $crds }}
{{- $meta := dict "labels" (include "ebb.labels" $ | fromYaml) }}
{{- if $.Values.crds.keep }}
{{- $_ := set $meta "annotations" (dict "helm.sh/resource-policy" "keep") }}
{{- end }}
{{- $_ := set $crd "metadata" (mustMergeOverwrite (deepCopy $crd.metadata) $meta) }}
---
{{ toYaml $crd }}
{{- end }}
{{- end }}
{{- end -}}
