{{/* Labels every object carries. */}}
{{- define "tokenbudget.labels" -}}
app.kubernetes.io/part-of: tokenbudget
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* sharedstore's image. */}}
{{- define "tokenbudget.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag }}
{{- end -}}

{{/* An environment variable from the existing Secret: name, key (a secrets.* value). */}}
{{- define "tokenbudget.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
{{- end -}}

{{/* The container hardening every container of the chart has. */}}
{{- define "tokenbudget.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
{{- end -}}

{{/* The Envoy cluster Istio makes of the sharedstore Service's port. */}}
{{- define "tokenbudget.cluster" -}}
{{ printf "outbound|%v||sharedstore.%s.svc.cluster.local" .Values.sharedstore.port .Release.Namespace }}
{{- end -}}
