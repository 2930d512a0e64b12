{{/*
Chart name, truncated to 63 characters (DNS-1123 label limit).
*/}}
{{- define "ascension-engine.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name. It is truncated to 40 characters so that the longest
suffix the chart appends ("-engine-headless", 16 characters) still leaves a
name of at most 63 characters. If the release name contains the chart name it
is used as the full name.
*/}}
{{- define "ascension-engine.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 40 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Chart label value: name-version.
*/}}
{{- define "ascension-engine.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels (immutable: never add anything that changes between upgrades).
*/}}
{{- define "ascension-engine.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ascension-engine.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Common labels of every resource.
*/}}
{{- define "ascension-engine.labels" -}}
helm.sh/chart: {{ include "ascension-engine.chart" . }}
{{ include "ascension-engine.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: ascension-engine
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Labels of one component: (dict "ctx" $ "component" "engine").
*/}}
{{- define "ascension-engine.componentLabels" -}}
{{ include "ascension-engine.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
Selector labels of one component: (dict "ctx" $ "component" "engine").
*/}}
{{- define "ascension-engine.componentSelectorLabels" -}}
{{ include "ascension-engine.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/*
Name of the ServiceAccount to use.
*/}}
{{- define "ascension-engine.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ascension-engine.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Container image reference.
*/}}
{{- define "ascension-engine.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/*
Name of the in-chart Redis resources.
*/}}
{{- define "ascension-engine.redisName" -}}
{{- printf "%s-redis" (include "ascension-engine.fullname" .) }}
{{- end }}

{{/*
Does the chart create the Secret holding REDIS_URL?
*/}}
{{- define "ascension-engine.createRedisSecret" -}}
{{- if or .Values.redis.enabled (not .Values.externalRedis.existingSecret) }}true{{- end }}
{{- end }}

{{/*
Name and key of the Secret holding REDIS_URL. Fails when Redis is neither
deployed by the chart nor configured.
*/}}
{{- define "ascension-engine.redisSecretName" -}}
{{- if .Values.redis.enabled }}
{{- printf "%s-redis-url" (include "ascension-engine.fullname" .) }}
{{- else if .Values.externalRedis.existingSecret }}
{{- .Values.externalRedis.existingSecret }}
{{- else if .Values.externalRedis.url }}
{{- printf "%s-redis-url" (include "ascension-engine.fullname" .) }}
{{- else }}
{{- fail "redis.enabled is false: set externalRedis.url or externalRedis.existingSecret" }}
{{- end }}
{{- end }}

{{- define "ascension-engine.redisSecretKey" -}}
{{- if or .Values.redis.enabled (not .Values.externalRedis.existingSecret) }}redis-url{{- else }}{{ .Values.externalRedis.existingSecretKey }}{{- end }}
{{- end }}

{{/*
The Redis URL the chart writes into its Secret.
*/}}
{{- define "ascension-engine.redisUrl" -}}
{{- if .Values.redis.enabled }}
{{- printf "redis://%s:%d/0" (include "ascension-engine.redisName" .) (int .Values.redis.port) }}
{{- else }}
{{- .Values.externalRedis.url }}
{{- end }}
{{- end }}

{{/*
Secret name and key for CELERY_BROKER_URL (defaults to the Redis URL Secret).
*/}}
{{- define "ascension-engine.brokerSecretName" -}}
{{- if .Values.broker.existingSecret }}
{{- .Values.broker.existingSecret }}
{{- else if .Values.broker.url }}
{{- printf "%s-broker-url" (include "ascension-engine.fullname" .) }}
{{- else }}
{{- include "ascension-engine.redisSecretName" . }}
{{- end }}
{{- end }}

{{- define "ascension-engine.brokerSecretKey" -}}
{{- if .Values.broker.existingSecret }}
{{- .Values.broker.existingSecretKey }}
{{- else if .Values.broker.url }}broker-url
{{- else }}
{{- include "ascension-engine.redisSecretKey" . }}
{{- end }}
{{- end }}

{{/*
Environment shared by every component: the store and broker URLs and LOG_LEVEL.
*/}}
{{- define "ascension-engine.redisEnv" -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ascension-engine.redisSecretName" . }}
      key: {{ include "ascension-engine.redisSecretKey" . }}
{{- end }}

{{- define "ascension-engine.brokerEnv" -}}
- name: CELERY_BROKER_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ascension-engine.brokerSecretName" . }}
      key: {{ include "ascension-engine.brokerSecretKey" . }}
{{- end }}

{{/*
ENGINE_ADDRESS of the workers.
*/}}
{{- define "ascension-engine.engineAddress" -}}
{{- if .Values.worker.engineAddress }}
{{- .Values.worker.engineAddress }}
{{- else if .Values.engine.headlessService.enabled }}
{{- printf "%s-engine-headless:%d" (include "ascension-engine.fullname" .) (int .Values.engine.grpcPort) }}
{{- else }}
{{- printf "%s-engine:%d" (include "ascension-engine.fullname" .) (int .Values.engine.grpcPort) }}
{{- end }}
{{- end }}

{{/*
ENGINE_ADVERTISE_ADDRESS of the engine: the address put in every AI move, which the
workers connect to (it wins over their ENGINE_ADDRESS). Defaults to the workers' address.
*/}}
{{- define "ascension-engine.advertiseAddress" -}}
{{- .Values.engine.advertiseAddress | default (include "ascension-engine.engineAddress" .) }}
{{- end }}

{{/*
Termination grace of engine pods: longer than the pre-stop pause plus the server's own
shutdown (health NOT_SERVING for the drain, then the grace for in-flight calls), so
SIGKILL never cuts a graceful stop short.
*/}}
{{- define "ascension-engine.engineTerminationGrace" -}}
{{- $drain := int (ceil .Values.engine.shutdownDrainSeconds) }}
{{- $grace := int (ceil .Values.engine.shutdownGraceSeconds) }}
{{- $needed := add (int .Values.engine.preStopSleepSeconds) $drain $grace }}
{{- if kindIs "invalid" .Values.engine.terminationGracePeriodSeconds }}
{{- add $needed 10 }}
{{- else if le (int .Values.engine.terminationGracePeriodSeconds) (int $needed) }}
{{- fail (printf "engine.terminationGracePeriodSeconds (%d) must be longer than engine.preStopSleepSeconds + engine.shutdownDrainSeconds + engine.shutdownGraceSeconds (%d)" (int .Values.engine.terminationGracePeriodSeconds) (int $needed)) }}
{{- else }}
{{- int .Values.engine.terminationGracePeriodSeconds }}
{{- end }}
{{- end }}

{{/*
The /tmp emptyDir volume.
*/}}
{{- define "ascension-engine.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end }}

{{/*
Prometheus scrape annotations: (dict "ctx" $ "port" 9100).
*/}}
{{- define "ascension-engine.scrapeAnnotations" -}}
{{- if .ctx.Values.metrics.podAnnotations -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}
