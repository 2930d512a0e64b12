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
An image reference: [global.imageRegistry/]repository[:tag][@digest].
(dict "ctx" $ "image" .Values.image "defaultTag" "1.0")
*/}}
{{- define "ascension-engine.imageRef" -}}
{{- $registry := ((.ctx.Values.global).imageRegistry) | default "" | trimSuffix "/" }}
{{- $ref := .image.repository }}
{{- if $registry }}{{ $ref = printf "%s/%s" $registry $ref }}{{ end }}
{{- $tag := .image.tag | default .defaultTag }}
{{- if $tag }}{{ $ref = printf "%s:%s" $ref $tag }}{{ end }}
{{- if .image.digest }}{{ $ref = printf "%s@%s" $ref .image.digest }}{{ end }}
{{- $ref }}
{{- end }}

{{/*
Container image of the engine, the workers and the tests.
*/}}
{{- define "ascension-engine.image" -}}
{{- if and .Values.image.requireDigest (not .Values.image.digest) }}
{{- fail (printf "image.requireDigest: set image.digest to the digest of the image you built and tested (sha256:..., e.g. from `docker buildx imagetools inspect %s:%s`), so that what runs is what you tested" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion)) }}
{{- end }}
{{- include "ascension-engine.imageRef" (dict "ctx" . "image" .Values.image "defaultTag" .Chart.AppVersion) }}
{{- end }}

{{/*
imagePullSecrets of a pod spec, for every pod the chart renders (workloads, Redis, the
exporter, `helm test` pods): (include "ascension-engine.imagePullSecrets" . | nindent 6).
*/}}
{{- define "ascension-engine.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A value the chart generates once for a Secret of its own: the one already in the cluster's
Secret (lookup: kept across upgrades), else drawn at random once per render: every later call
of the same render (the Secret itself, the checksums of the pods that read it) gets that same
value, so an install's checksums equal those of the upgrade that finds the Secret.
(dict "ctx" $ "secret" NAME "key" KEY "length" N)
*/}}
{{- define "ascension-engine.generatedValue" -}}
{{- $ctx := .ctx }}
{{- if not (hasKey $ctx.Values "_ascensionGenerated") }}
{{- $_ := set $ctx.Values "_ascensionGenerated" dict }}
{{- end }}
{{- $memo := index $ctx.Values "_ascensionGenerated" }}
{{- $id := printf "%s/%s" .secret .key }}
{{- if not (hasKey $memo $id) }}
{{- $existing := lookup "v1" "Secret" $ctx.Release.Namespace .secret }}
{{- if and $existing $existing.data (index $existing.data .key) }}
{{- $_ := set $memo $id (index $existing.data .key | b64dec) }}
{{- else }}
{{- $_ := set $memo $id (randAlphaNum (int .length)) }}
{{- end }}
{{- end }}
{{- index $memo $id }}
{{- end }}

{{/*
Name of the in-chart Redis resources.
*/}}
{{- define "ascension-engine.redisName" -}}
{{- printf "%s-redis" (include "ascension-engine.fullname" .) }}
{{- end }}

{{/*
In-chart Redis authentication: one ACL user per client (files/redis-users.rules; the default
user is off), each with its password in the Secret <fullname>-redis-auth (generated) or
redis.auth.existingSecret.
*/}}
{{- define "ascension-engine.redisUsers" -}}
{{- toJson (list "engine" "broker" "exporter" "keda" "healthcheck") }}
{{- end }}

{{- define "ascension-engine.redisAuthSecretName" -}}
{{- .Values.redis.auth.existingSecret | default (printf "%s-redis-auth" (include "ascension-engine.fullname" .)) }}
{{- end }}

{{/*
The key of the auth Secret holding one user's password: (dict "ctx" $ "user" "engine").
*/}}
{{- define "ascension-engine.redisAuthSecretKey" -}}
{{- if .ctx.Values.redis.auth.existingSecret }}
{{- index .ctx.Values.redis.auth.existingSecretKeys .user }}
{{- else }}
{{- printf "%s-password" .user }}
{{- end }}
{{- end }}

{{/*
An environment variable holding one user's password from the auth Secret:
(dict "ctx" $ "user" "engine" "name" "ASCENSION_REDIS_PASSWORD").
*/}}
{{- define "ascension-engine.redisUserPasswordEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "ascension-engine.redisAuthSecretName" .ctx }}
      key: {{ include "ascension-engine.redisAuthSecretKey" . }}
{{- end }}

{{/*
Does KEDA read the queue in the in-chart Redis (as its user keda)?
*/}}
{{- define "ascension-engine.kedaInChartUser" -}}
{{- $keda := .Values.worker.keda }}
{{- if and $keda.enabled (eq $keda.broker "redis") .Values.redis.enabled (not $keda.redis.address) }}true{{- end }}
{{- end }}

{{/*
The generated password of one user of the in-chart Redis (40 letters and digits: URL-safe).
*/}}
{{- define "ascension-engine.redisGeneratedPassword" -}}
{{- include "ascension-engine.generatedValue" (dict "ctx" .ctx "secret" (include "ascension-engine.redisAuthSecretName" .ctx) "key" (printf "%s-password" .user) "length" 40) }}
{{- end }}

{{/*
The engine's keys: the Secret <fullname>-engine-keys the chart writes (a generated AI
credential key, and operator keys given in values), mounted as files.
*/}}
{{- define "ascension-engine.engineKeysSecretName" -}}
{{- printf "%s-engine-keys" (include "ascension-engine.fullname" .) }}
{{- end }}

{{/*
The generated key of AI move credentials: kept across upgrades (generatedValue), so
credentials of moves in flight stay valid.
*/}}
{{- define "ascension-engine.generatedAiTokenKey" -}}
{{- include "ascension-engine.generatedValue" (dict "ctx" . "secret" (include "ascension-engine.engineKeysSecretName" .) "key" "ai-token-keys" "length" 48) }}
{{- end }}

{{/*
Secret and key of ENGINE_AI_TOKEN_KEYS: engine.aiTokenKeys.existingSecret, else the chart's.
*/}}
{{- define "ascension-engine.aiTokenKeysSecretName" -}}
{{- .Values.engine.aiTokenKeys.existingSecret | default (include "ascension-engine.engineKeysSecretName" .) }}
{{- end }}

{{- define "ascension-engine.aiTokenKeysSecretKey" -}}
{{- if .Values.engine.aiTokenKeys.existingSecret }}{{ .Values.engine.aiTokenKeys.existingSecretKey }}{{ else }}ai-token-keys{{ end }}
{{- end }}

{{/*
Does the chart write <fullname>-engine-keys (something to put in it)?
*/}}
{{- define "ascension-engine.createEngineKeysSecret" -}}
{{- if or (not .Values.engine.aiTokenKeys.existingSecret) (include "ascension-engine.generateOperatorKey" .) (include "ascension-engine.generateGatewayKey" .) }}true{{- end }}
{{- end }}

{{/*
The web pods' gateway key (ENGINE_GATEWAY_KEYS_FILE on the engine, --gateway-key-file on the
web pods): web.gatewayKey.existingSecret, else a key the chart generates into
<fullname>-engine-keys and keeps across upgrades (lookup). Only with web.enabled: the engine
then believes the client address of a call with that key, and of no other call.
*/}}
{{- define "ascension-engine.generateGatewayKey" -}}
{{- if and .Values.web.enabled (not .Values.web.gatewayKey.existingSecret) }}true{{- end }}
{{- end }}

{{- define "ascension-engine.generatedGatewayKey" -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "ascension-engine.engineKeysSecretName" .) }}
{{- if and $existing $existing.data (index $existing.data "gateway-keys") }}
{{- index $existing.data "gateway-keys" | b64dec }}
{{- else }}
{{- randAlphaNum 48 }}
{{- end }}
{{- end }}

{{- define "ascension-engine.gatewayKeySecretName" -}}
{{- .Values.web.gatewayKey.existingSecret | default (include "ascension-engine.engineKeysSecretName" .) }}
{{- end }}

{{- define "ascension-engine.gatewayKeySecretKey" -}}
{{- if .Values.web.gatewayKey.existingSecret }}{{ .Values.web.gatewayKey.existingSecretKey }}{{ else }}gateway-keys{{ end }}
{{- end }}

{{/*
Operator keys (ENGINE_OPERATOR_KEYS_FILE): engine.operatorKeys.existingSecret, else a key the
chart generates into <fullname>-engine-keys and keeps across upgrades (lookup).
*/}}
{{- define "ascension-engine.generateOperatorKey" -}}
{{- if and .Values.engine.operatorKeys.enabled (not .Values.engine.operatorKeys.existingSecret) }}true{{- end }}
{{- end }}

{{- define "ascension-engine.generatedOperatorKey" -}}
{{- include "ascension-engine.generatedValue" (dict "ctx" . "secret" (include "ascension-engine.engineKeysSecretName" .) "key" "operator-keys" "length" 40) }}
{{- end }}

{{- define "ascension-engine.operatorKeysSecretName" -}}
{{- .Values.engine.operatorKeys.existingSecret | default (include "ascension-engine.engineKeysSecretName" .) }}
{{- end }}

{{- define "ascension-engine.operatorKeysSecretKey" -}}
{{- if .Values.engine.operatorKeys.existingSecret }}{{ .Values.engine.operatorKeys.existingSecretKey }}{{ else }}operator-keys{{ end }}
{{- end }}

{{/*
TLS on the engine's gRPC port. The Secrets, by role: the server's certificate and key, the CA
the chart's own clients trust, the client CA (mTLS) and the certificate the chart's clients
present. Fails on settings that cannot work.
*/}}
{{- define "ascension-engine.tlsServerSecret" -}}
{{- $tls := .Values.engine.tls }}
{{- if and $tls.existingSecret $tls.certManager.enabled }}
{{- fail "engine.tls: set existingSecret or certManager.enabled, not both" }}
{{- else if $tls.existingSecret }}
{{- $tls.existingSecret }}
{{- else if $tls.certManager.enabled }}
{{- if not $tls.certManager.issuerRef.name }}
{{- fail "engine.tls.certManager.enabled: set engine.tls.certManager.issuerRef.name" }}
{{- end }}
{{- printf "%s-engine-tls" (include "ascension-engine.fullname" .) }}
{{- else }}
{{- fail "engine.tls.enabled: set engine.tls.existingSecret (a kubernetes.io/tls Secret) or engine.tls.certManager.enabled" }}
{{- end }}
{{- end }}

{{- define "ascension-engine.tlsCaSecret" -}}
{{- .Values.engine.tls.ca.secretName | default (include "ascension-engine.tlsServerSecret" .) }}
{{- end }}

{{- define "ascension-engine.tlsClientCaSecret" -}}
{{- .Values.engine.tls.clientAuth.caSecretName | default (include "ascension-engine.tlsCaSecret" .) }}
{{- end }}

{{- define "ascension-engine.tlsClientCaKey" -}}
{{- if .Values.engine.tls.clientAuth.caSecretName }}{{ .Values.engine.tls.clientAuth.caKey }}{{ else }}{{ .Values.engine.tls.ca.key }}{{ end }}
{{- end }}

{{- define "ascension-engine.tlsClientCertSecret" -}}
{{- $tls := .Values.engine.tls }}
{{- if $tls.clientAuth.clientSecret }}
{{- $tls.clientAuth.clientSecret }}
{{- else if $tls.certManager.enabled }}
{{- printf "%s-engine-client" (include "ascension-engine.fullname" .) }}
{{- else }}
{{- fail "engine.tls.clientAuth.enabled: set engine.tls.clientAuth.clientSecret (the certificate the chart's workers, web and tests present) or engine.tls.certManager.enabled" }}
{{- end }}
{{- end }}

{{/*
Is mutual TLS on? (Fails when clientAuth is on without TLS.)
*/}}
{{- define "ascension-engine.mtls" -}}
{{- if .Values.engine.tls.clientAuth.enabled }}
{{- if not .Values.engine.tls.enabled }}
{{- fail "engine.tls.clientAuth.enabled needs engine.tls.enabled" }}
{{- end }}true
{{- end }}
{{- end }}

{{/*
Where the TLS files are mounted (one projected volume, "engine-tls").
*/}}
{{- define "ascension-engine.tlsDir" -}}/etc/ascension/tls{{- end }}

{{/*
The projected volume of the TLS files a pod needs: (dict "ctx" $ "server" true) for the
engine (its certificate and key, and the client CA with mTLS), without for the chart's
clients. Every pod gets the CA it checks the engine against and, with mTLS, the client
certificate it presents (the engine's own probes and local AI processes are clients too).
*/}}
{{- define "ascension-engine.tlsVolume" -}}
{{- $ctx := .ctx }}
{{- $tls := $ctx.Values.engine.tls }}
- name: engine-tls
  projected:
    sources:
      {{- if .server }}
      - secret:
          name: {{ include "ascension-engine.tlsServerSecret" $ctx }}
          items:
            - key: tls.crt
              path: server.crt
            - key: tls.key
              path: server.key
      {{- if include "ascension-engine.mtls" $ctx }}
      - secret:
          name: {{ include "ascension-engine.tlsClientCaSecret" $ctx }}
          items:
            - key: {{ include "ascension-engine.tlsClientCaKey" $ctx }}
              path: client-ca.crt
      {{- end }}
      {{- end }}
      - secret:
          name: {{ include "ascension-engine.tlsCaSecret" $ctx }}
          items:
            - key: {{ $tls.ca.key }}
              path: ca.crt
      {{- if include "ascension-engine.mtls" $ctx }}
      - secret:
          name: {{ include "ascension-engine.tlsClientCertSecret" $ctx }}
          items:
            - key: tls.crt
              path: client.crt
            - key: tls.key
              path: client.key
      {{- end }}
{{- end }}

{{- define "ascension-engine.tlsMount" -}}
- name: engine-tls
  mountPath: {{ include "ascension-engine.tlsDir" . }}
  readOnly: true
{{- end }}

{{/*
The environment of a client of the engine (clients/sdk/tls.py: ASCENSION_TLS_*):
(dict "ctx" $ "serverName" "name"): serverName overrides engine.tls.serverName (the probes
dial 127.0.0.1).
*/}}
{{- define "ascension-engine.clientTlsEnv" -}}
{{- $ctx := .ctx }}
{{- if $ctx.Values.engine.tls.enabled }}
{{- $dir := include "ascension-engine.tlsDir" $ctx }}
- name: ASCENSION_TLS_CA_FILE
  value: {{ printf "%s/ca.crt" $dir | quote }}
{{- with (.serverName | default $ctx.Values.engine.tls.serverName) }}
- name: ASCENSION_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- if include "ascension-engine.mtls" $ctx }}
- name: ASCENSION_TLS_CERT_FILE
  value: {{ printf "%s/client.crt" $dir | quote }}
- name: ASCENSION_TLS_KEY_FILE
  value: {{ printf "%s/client.key" $dir | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The engine Services' DNS names (what the chart's clients dial), for the server certificate.
*/}}
{{- define "ascension-engine.engineDnsNames" -}}
{{- $full := include "ascension-engine.fullname" . }}
{{- $names := list }}
{{- range $service := list (printf "%s-engine" $full) (printf "%s-engine-headless" $full) }}
{{- $names = append $names $service }}
{{- $names = append $names (printf "%s.%s" $service $.Release.Namespace) }}
{{- $names = append $names (printf "%s.%s.svc" $service $.Release.Namespace) }}
{{- $names = append $names (printf "%s.%s.svc.cluster.local" $service $.Release.Namespace) }}
{{- end }}
{{- toJson (concat $names .Values.engine.tls.certManager.dnsNames | uniq) }}
{{- end }}

{{/*
The in-cluster gRPC target of the engine Service (helm test, web).
*/}}
{{- define "ascension-engine.engineServiceTarget" -}}
{{- printf "%s-engine:%d" (include "ascension-engine.fullname" .) (int .Values.engine.grpcPort) }}
{{- end }}

{{/*
The external Redis's CA (externalRedis.tls.caSecret), mounted at /etc/ascension/redis-tls.
*/}}
{{- define "ascension-engine.redisTlsVolume" -}}
{{- with .Values.externalRedis.tls.caSecret }}
{{- if and .name (not $.Values.redis.enabled) }}
- name: redis-tls
  secret:
    secretName: {{ .name }}
    items:
      - key: {{ .key | default "ca.crt" }}
        path: ca.crt
{{- end }}
{{- end }}
{{- end }}

{{- define "ascension-engine.redisTlsMount" -}}
{{- if and .Values.externalRedis.tls.caSecret.name (not .Values.redis.enabled) }}
- name: redis-tls
  mountPath: /etc/ascension/redis-tls
  readOnly: true
{{- end }}
{{- end }}

{{/*
Does the chart create the Secret holding REDIS_URL? (Only for externalRedis.url: the
in-chart Redis's URL is built from its password at run time, see redisEnv.)
*/}}
{{- define "ascension-engine.createRedisSecret" -}}
{{- if and (not .Values.redis.enabled) (not .Values.externalRedis.existingSecret) }}true{{- end }}
{{- end }}

{{/*
Name and key of the Secret holding REDIS_URL of an external Redis. Fails when Redis is
neither deployed by the chart nor configured.
*/}}
{{- define "ascension-engine.redisSecretName" -}}
{{- if .Values.externalRedis.existingSecret }}
{{- .Values.externalRedis.existingSecret }}
{{- else if .Values.externalRedis.url }}
{{- printf "%s-redis-url" (include "ascension-engine.fullname" .) }}
{{- else }}
{{- fail "redis.enabled is false: set externalRedis.url or externalRedis.existingSecret" }}
{{- end }}
{{- end }}

{{- define "ascension-engine.redisSecretKey" -}}
{{- if .Values.externalRedis.existingSecret }}{{ .Values.externalRedis.existingSecretKey }}{{- else }}redis-url{{- end }}
{{- end }}

{{/*
URLs of the in-chart Redis, expanded by Kubernetes from the password variables defined just
before them ($(VAR) references): the store's, as the user engine, and Celery's, as broker.
*/}}
{{- define "ascension-engine.inChartRedisUrl" -}}
{{- printf "redis://engine:$(ASCENSION_REDIS_PASSWORD)@%s:%d/0" (include "ascension-engine.redisName" .) (int .Values.redis.port) }}
{{- end }}

{{- define "ascension-engine.inChartBrokerUrl" -}}
{{- printf "redis://broker:$(ASCENSION_BROKER_PASSWORD)@%s:%d/0" (include "ascension-engine.redisName" .) (int .Values.redis.port) }}
{{- end }}

{{/*
Does the broker live in the in-chart Redis?
*/}}
{{- define "ascension-engine.inChartBroker" -}}
{{- if and .Values.redis.enabled (not (include "ascension-engine.ownBroker" .)) }}true{{- end }}
{{- end }}

{{/*
Does the broker have a URL of its own (else it is the Redis of REDIS_URL)?
*/}}
{{- define "ascension-engine.ownBroker" -}}
{{- if or .Values.broker.existingSecret .Values.broker.url }}true{{- end }}
{{- end }}

{{/*
Secret name and key for CELERY_BROKER_URL when the broker has its own URL.
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
The in-chart Redis passwords as environment variables, referenced by the URLs: the store's
user (ASCENSION_REDIS_PASSWORD, the engine only: (dict "ctx" $ "store" true)) and Celery's
(ASCENSION_BROKER_PASSWORD, engine and workers); empty with an external Redis.
*/}}
{{- define "ascension-engine.redisPasswordEnv" -}}
{{- if and .store .ctx.Values.redis.enabled }}
{{ include "ascension-engine.redisUserPasswordEnv" (dict "ctx" .ctx "user" "engine" "name" "ASCENSION_REDIS_PASSWORD") }}
{{- end }}
{{- if include "ascension-engine.inChartBroker" .ctx }}
{{ include "ascension-engine.redisUserPasswordEnv" (dict "ctx" .ctx "user" "broker" "name" "ASCENSION_BROKER_PASSWORD") }}
{{- end }}
{{- end }}

{{/*
Environment shared by every component: the store and broker URLs.
*/}}
{{- define "ascension-engine.redisEnv" -}}
{{- if .Values.redis.enabled }}
- name: REDIS_URL
  value: {{ include "ascension-engine.inChartRedisUrl" . | quote }}
{{- else }}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ascension-engine.redisSecretName" . }}
      key: {{ include "ascension-engine.redisSecretKey" . }}
{{- if eq .Values.externalRedis.mode "cluster" }}
{{- if not (include "ascension-engine.ownBroker" .) }}
{{- fail "externalRedis.mode is cluster: a Redis Cluster cannot hold the Celery queue; set broker.url or broker.existingSecret" }}
{{- end }}
- name: ENGINE_REDIS_MODE
  value: cluster
{{- end }}
{{- end }}
{{- end }}

{{- define "ascension-engine.brokerEnv" -}}
{{- if include "ascension-engine.inChartBroker" . }}
- name: CELERY_BROKER_URL
  value: {{ include "ascension-engine.inChartBrokerUrl" . | quote }}
{{- else }}
- name: CELERY_BROKER_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "ascension-engine.brokerSecretName" . }}
      key: {{ include "ascension-engine.brokerSecretKey" . }}
{{- end }}
{{- end }}

{{/*
Pod annotations that roll the pods when a Secret they read changes: the chart's own
Secrets (their rendered text) and the existing Secrets they name (their data, read with
lookup at install/upgrade time: run `helm upgrade` after rotating one).
*/}}
{{- define "ascension-engine.secretChecksums" -}}
{{- /* The chart's own Secrets as they are rendered: a generated value is the same in the Secret
       and here (generatedValue), at install and at every upgrade that keeps it. */}}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- $data := dict }}
{{- $names := list .Values.externalRedis.existingSecret .Values.broker.existingSecret .Values.redis.auth.existingSecret .Values.engine.aiTokenKeys.existingSecret }}
{{- if .Values.engine.operatorKeys.enabled }}
{{- $names = append $names .Values.engine.operatorKeys.existingSecret }}
{{- end }}
{{- if .Values.web.enabled }}
{{- $names = append $names .Values.web.gatewayKey.existingSecret }}
{{- end }}
{{- if .Values.engine.tls.enabled }}
{{- /* cert-manager's Secrets too: a renewal followed by `helm upgrade` rolls the pods */}}
{{- $names = concat $names (list (include "ascension-engine.tlsServerSecret" .) (include "ascension-engine.tlsCaSecret" .)) }}
{{- if include "ascension-engine.mtls" . }}
{{- $names = concat $names (list (include "ascension-engine.tlsClientCaSecret" .) (include "ascension-engine.tlsClientCertSecret" .)) }}
{{- end }}
{{- end }}
{{- if not .Values.redis.enabled }}
{{- $names = append $names .Values.externalRedis.tls.caSecret.name }}
{{- end }}
{{- range $name := $names | uniq }}
{{- if $name }}
{{- $secret := lookup "v1" "Secret" $.Release.Namespace $name }}
{{- $_ := set $data $name (($secret).data | default dict) }}
{{- end }}
{{- end }}
{{- if $data }}
checksum/existing-secrets: {{ toJson $data | sha256sum }}
{{- end }}
{{- end }}

{{/*
The in-chart Redis's own: its users' passwords (the chart's generated ones, the same at install
and at every upgrade that keeps them; or redis.auth.existingSecret's data, looked up) and
their rules, so that nothing else (a TLS certificate, a key, an upgrade that changes nothing)
ever restarts the one Redis pod.
*/}}
{{- define "ascension-engine.redisSecretChecksums" -}}
{{- if .Values.redis.auth.existingSecret }}
{{- $secret := lookup "v1" "Secret" .Release.Namespace .Values.redis.auth.existingSecret }}
checksum/existing-secrets: {{ toJson (($secret).data | default dict) | sha256sum }}
{{- else }}
{{- $passwords := dict }}
{{- range $user := include "ascension-engine.redisUsers" . | fromJsonArray }}
{{- $_ := set $passwords $user (include "ascension-engine.redisGeneratedPassword" (dict "ctx" $ "user" $user)) }}
{{- end }}
checksum/redis-auth: {{ toJson $passwords | sha256sum }}
{{- end }}
checksum/redis-users: {{ .Files.Get "files/redis-users.rules" | sha256sum }}
{{- end }}

{{/*
Soft topology spread over nodes and zones: (dict "ctx" $ "component" "engine").
*/}}
{{- define "ascension-engine.topologySpread" -}}
{{- $values := index .ctx.Values .component }}
{{- if $values.topologySpreadConstraints }}
{{- toYaml $values.topologySpreadConstraints }}
{{- else if $values.softTopologySpread }}
{{- range $key := list "kubernetes.io/hostname" "topology.kubernetes.io/zone" }}
- maxSkew: 1
  topologyKey: {{ $key }}
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "ascension-engine.componentSelectorLabels" $ | nindent 6 }}
{{- end }}
{{- end }}
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

{{/*
Logging and tracing environment of the engine and the workers (engine_service/telemetry.py).
*/}}
{{- define "ascension-engine.telemetryEnv" -}}
- name: LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
{{- if .Values.tracing.enabled }}
{{- if not .Values.tracing.otlpEndpoint }}
{{- fail "tracing.enabled: set tracing.otlpEndpoint (your OTLP/gRPC collector)" }}
{{- end }}
- name: ASCENSION_TRACING
  value: otlp
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ .Values.tracing.otlpEndpoint | quote }}
- name: OTEL_TRACES_SAMPLER
  value: {{ .Values.tracing.sampler | quote }}
{{- with .Values.tracing.samplerArg }}
- name: OTEL_TRACES_SAMPLER_ARG
  value: {{ . | quote }}
{{- end }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "k8s.namespace.name=%s" .Release.Namespace | quote }}
{{- end }}
{{- end }}

{{/*
A CPU quantity ("2", 1.5, "500m") in millicores.
*/}}
{{- define "ascension-engine.cpuMillis" -}}
{{- $q := toString . -}}
{{- if hasSuffix "m" $q -}}
{{- trimSuffix "m" $q | float64 -}}
{{- else -}}
{{- mulf ($q | float64) 1000 -}}
{{- end -}}
{{- end }}
