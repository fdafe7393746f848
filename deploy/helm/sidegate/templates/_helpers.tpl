{{- define "sidegate.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sidegate.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "sidegate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sidegate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sidegate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "sidegate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- /* repository@digest when a digest is given, else repository:tag (the appVersion by default). */ -}}
{{- define "sidegate.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{- /* The Secret with SIDEGATE_SECRET_KEY (and the Redis and admin passwords): the chart's, or existingSecret. */ -}}
{{- define "sidegate.secretName" -}}
{{- .Values.existingSecret | default (include "sidegate.fullname" .) -}}
{{- end -}}

{{- define "sidegate.requireSecret" -}}
{{- if and (not .Values.existingSecret) (not .Values.secretKey) -}}
{{- fail "set secretKey (at least 32 characters: openssl rand -base64 48) or existingSecret (a Secret with SIDEGATE_SECRET_KEY): the config is mounted read-only, so sidegate cannot write a key file" -}}
{{- end -}}
{{- end -}}

{{- /* gateway.yml as the ConfigMap holds it */ -}}
{{- define "sidegate.gatewayYml" -}}
{{- toYaml (include "sidegate.config" . | fromYaml) -}}
{{- end -}}

{{- /* .Values.config, with trustCluster's issuer appended to auth.trusted_issuers */ -}}
{{- define "sidegate.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $t := .Values.trustCluster | default dict -}}
{{- if $t.enabled -}}
{{- $auth := get $c "auth" | default dict -}}
{{- $sa := "/var/run/secrets/kubernetes.io/serviceaccount" -}}
{{- $entry := dict "id" "cluster" "issuer" $t.issuer "audiences" (list $t.audience) "subject" (dict "map" "system:serviceaccount:{namespace}:{name}") "ca_file" (printf "%s/ca.crt" $sa) "token_file" (printf "%s/token" $sa) "max_lifetime" $t.maxLifetime -}}
{{- if eq ($t.review | default "none") "tokenreview" -}}
{{- $_ := set $entry "review" "tokenreview" -}}
{{- $_ := set $entry "review_ttl" ($t.reviewTtl | default 10) -}}
{{- end -}}
{{- $_ := set $auth "trusted_issuers" (append (get $auth "trusted_issuers" | default list) $entry) -}}
{{- $_ := set $c "auth" $auth -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}

{{- /*
The config without the keys a live reload may change (_live.tpl): its checksum
changes, and the pods roll, only when a key that needs a restart changed.
*/ -}}
{{- define "sidegate.restartConfig" -}}
{{- $c := include "sidegate.config" . | fromYaml -}}
{{- range $key := splitList " " (include "sidegate.liveKeys" .) -}}
{{- $parts := splitList "." $key -}}
{{- $m := $c -}}
{{- range $p := initial $parts -}}
{{- $m = get $m $p | default dict -}}
{{- end -}}
{{- $_ := unset $m (last $parts) -}}
{{- end -}}
{{- /* a section left empty (its keys comments, or only live keys set) is one that sets nothing: null and {} alike */ -}}
{{- range $k, $v := $c -}}
{{- if kindIs "map" $v -}}
{{- range $k2, $v2 := $v -}}
{{- if or (kindIs "invalid" $v2) (and (kindIs "map" $v2) (eq (len $v2) 0)) -}}{{- $_ := unset $v $k2 -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- if or (kindIs "invalid" $v) (and (kindIs "map" $v) (eq (len $v) 0)) -}}{{- $_ := unset $c $k -}}{{- end -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}
