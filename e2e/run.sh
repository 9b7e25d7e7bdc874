#!/usr/bin/env bash
# End-to-end suite: installs each controller's chart on a real cluster and checks that the
# controller does its job there, with the decision the offline `plan` subcommand predicts.
#
# It needs a cluster, so it runs only with EBB_E2E=1 (`make test` calls it and it skips).
#
#   EBB_E2E=1 e2e/run.sh                      # current kubeconfig context, images as configured
#   EBB_E2E=1 EBB_E2E_KIND_CLUSTER=kind e2e/run.sh   # build images with docker, `kind load` them
#
# Environment:
#   EBB_E2E=1                   run (anything else: print "skipped" and exit 0)
#   EBB_E2E_KIND_CLUSTER=NAME   a kind cluster to load the built images into
#   EBB_E2E_BUILD=1|0           build the images with docker (default: 1 with a kind cluster, else 0)
#   EBB_E2E_IMAGE_REPO=PREFIX   images are PREFIX/<controller>:TAG (default ghcr.io/ebb-dev)
#   EBB_E2E_IMAGE_TAG=TAG       (default e2e)
#   EBB_E2E_ONLY="a b"          only these controllers (default: all four)
#   EBB_E2E_KEEP=1              leave releases and test namespaces in place (debugging)
#   HELM, KUBECTL, DOCKER       binaries (default: from PATH)
# Needs: kubectl, helm, openssl, GNU date; docker to build images and to run `plan` (else cargo).
set -euo pipefail

if [ "${EBB_E2E:-}" != "1" ]; then
  echo "e2e: skipped (needs a cluster: set EBB_E2E=1, see e2e/run.sh)"
  exit 0
fi

ROOT=$(cd "$(dirname "$0")/.." && pwd)
HELM=${HELM:-helm}
KUBECTL=${KUBECTL:-kubectl}
DOCKER=${DOCKER:-docker}
KIND_CLUSTER=${EBB_E2E_KIND_CLUSTER:-}
BUILD=${EBB_E2E_BUILD:-$([ -n "$KIND_CLUSTER" ] && echo 1 || echo 0)}
REPO=${EBB_E2E_IMAGE_REPO:-ghcr.io/ebb-dev}
TAG=${EBB_E2E_IMAGE_TAG:-e2e}
ONLY=${EBB_E2E_ONLY:-workshop-scaler service-scaler scaledown-window stackable-scaler}
SYSTEM_NS=ebb-e2e
WORK=$(mktemp -d)
chmod 755 "$WORK" # the `plan` container (uid 65532) reads the files written here

log() { printf '\n=== %s\n' "$*"; }
die() { echo "e2e: FAIL: $*" >&2; exit 1; }
k() { "$KUBECTL" "$@"; }
ts() { date -u -d "$1" +%Y-%m-%dT%H:%M:%SZ; } # ts '-5 min' -> RFC 3339, UTC
now() { date -u +%Y-%m-%dT%H:%M:%SZ; }

# wait_for SECONDS EXPECTED -- kubectl get ... -o jsonpath=...: poll until the output equals EXPECTED.
wait_for() {
  local timeout=$1 expected=$2 got=""
  shift 3
  local deadline=$((SECONDS + timeout))
  while [ "$SECONDS" -lt "$deadline" ]; do
    got=$(k "$@" 2>/dev/null || true)
    [ "$got" = "$expected" ] && { echo "ok: $* = $expected"; return 0; }
    sleep 2
  done
  die "after ${timeout}s: kubectl $* = '$got', expected '$expected'"
}

# stays SECONDS EXPECTED -- kubectl get ...: the output keeps equalling EXPECTED for that long.
stays() {
  local duration=$1 expected=$2 got
  shift 3
  local deadline=$((SECONDS + duration))
  while [ "$SECONDS" -lt "$deadline" ]; do
    got=$(k "$@")
    [ "$got" = "$expected" ] || die "kubectl $* changed to '$got' (expected it to stay '$expected')"
    sleep 2
  done
  echo "ok: $* stayed $expected for ${duration}s"
}

image() { echo "$REPO/$1:$TAG"; }

# plan CONTROLLER ARGS...: the controller's offline decision (files must be under $WORK).
plan() {
  local controller=$1
  shift
  if command -v "$DOCKER" >/dev/null 2>&1 && "$DOCKER" image inspect "$(image "$controller")" >/dev/null 2>&1; then
    "$DOCKER" run --rm -v "$WORK:$WORK:ro" "$(image "$controller")" plan "$@"
  else
    (cd "$ROOT" && cargo run --quiet -p "$controller" -- plan "$@")
  fi
}

# json FIELD: read one top-level field (dotted path) of the JSON on stdin.
json() { python3 -c 'import json,sys; v=json.load(sys.stdin)
for p in sys.argv[1].split("."): v=v[p]
print(json.dumps(v) if isinstance(v,(dict,list,bool)) or v is None else v)' "$1"; }

install() { # install CONTROLLER [helm args...]
  local controller=$1
  shift
  log "install charts/$controller"
  "$HELM" upgrade --install "ebb-$controller" "$ROOT/charts/$controller" \
    --namespace "$SYSTEM_NS" --create-namespace \
    --set image.repository="$REPO/$controller" --set image.tag="$TAG" \
    --set logLevel="info,${controller//-/_}=debug" \
    --wait --timeout 5m "$@"
  k -n "$SYSTEM_NS" rollout status "deployment/ebb-$controller" --timeout=120s
}

fresh_namespace() {
  k delete namespace "$1" --ignore-not-found --wait=true >/dev/null
  k create namespace "$1" >/dev/null
}

diagnose() {
  echo "--- diagnostics" >&2
  k get pods,events -n "$SYSTEM_NS" >&2 || true
  for controller in $ONLY; do
    k -n "$SYSTEM_NS" logs "deployment/ebb-$controller" --tail=80 >&2 || true
  done
}

cleanup() {
  local status=$?
  if [ "$status" -ne 0 ]; then diagnose; fi
  if [ "${EBB_E2E_KEEP:-}" != "1" ]; then
    k annotate nodes --all cluster-autoscaler.kubernetes.io/scale-down-disabled- >/dev/null 2>&1 || true
    k delete scaledownschedule e2e-nodes --ignore-not-found >/dev/null 2>&1 || true
    for ns in e2e-workshop e2e-service e2e-stackable; do k delete namespace "$ns" --ignore-not-found --wait=false >/dev/null 2>&1 || true; done
    for controller in $ONLY; do "$HELM" uninstall "ebb-$controller" -n "$SYSTEM_NS" >/dev/null 2>&1 || true; done
  fi
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT

# --- workshop-scaler ------------------------------------------------------------------------------
# Every seat taken (utilization 1.0 >= threshold 0.5): the provision scales once to the planned
# count, holds while its ResourceClaim is unsettled (no second scale-up), then, once the claim is
# ready, keeps scaling on demand up to maxProvisions and stops there.
test_workshop_scaler() {
  install workshop-scaler # with its CRDs: there is no Babylon here
  local ns=e2e-workshop
  fresh_namespace "$ns"
  cat >"$WORK/workshop.yaml" <<EOF
apiVersion: babylon.gpte.redhat.com/v1
kind: Workshop
metadata: {name: e2e, namespace: $ns}
spec:
  displayName: e2e
  autoScaling: {enabled: true, threshold: 0.5, scaleFactor: 1.5, maxProvisions: 6}
EOF
  cat >"$WORK/provision.yaml" <<EOF
apiVersion: babylon.gpte.redhat.com/v1
kind: WorkshopProvision
metadata: {name: e2e-rhel, namespace: $ns}
spec:
  catalogItem: {name: e2e.prod, namespace: $ns}
  count: 2
  workshopName: e2e
EOF
  k apply -f "$WORK/workshop.yaml" -f "$WORK/provision.yaml"
  k apply -f - <<EOF
apiVersion: poolboy.gpte.redhat.com/v1
kind: ResourceClaim
metadata:
  name: e2e-claim
  namespace: $ns
  labels: {babylon.gpte.redhat.com/workshop-provision: e2e-rhel}
spec:
  resources: [{provider: {name: e2e.prod}}]
EOF
  for seat in 1 2; do
    k apply -f - <<EOF
apiVersion: babylon.gpte.redhat.com/v1
kind: WorkshopUserAssignment
metadata: {name: e2e-seat-$seat, namespace: $ns}
spec:
  workshopName: e2e
  resourceClaimName: e2e-claim
  userName: user$seat
  assignment: {email: user$seat@example.com}
EOF
  done

  local desired
  desired=$(plan workshop-scaler --file "$WORK/provision.yaml" --workshop "$WORK/workshop.yaml" \
    --assigned 2 --total 2 --output json | json desiredCount)
  [ "$desired" = 3 ] || die "plan says desiredCount $desired, expected 3"
  wait_for 60 "$desired" -- get workshopprovision e2e-rhel -n "$ns" -o 'jsonpath={.spec.count}'
  wait_for 30 true -- get workshopprovision e2e-rhel -n "$ns" -o 'jsonpath={.status.autoScalingActive}'
  stays 20 "$desired" -- get workshopprovision e2e-rhel -n "$ns" -o 'jsonpath={.spec.count}'

  log "workshop-scaler: the claim settles; demand continues up to maxProvisions"
  k patch resourceclaim e2e-claim -n "$ns" --subresource=status --type=merge -p '{"status":{"ready":true}}'
  wait_for 120 6 -- get workshopprovision e2e-rhel -n "$ns" -o 'jsonpath={.spec.count}'
  wait_for 60 True -- get workshopprovision e2e-rhel -n "$ns" \
    -o 'jsonpath={.status.conditions[?(@.type=="AtMaxProvisions")].status}'
  stays 10 6 -- get workshopprovision e2e-rhel -n "$ns" -o 'jsonpath={.spec.count}'
}

# --- service-scaler -------------------------------------------------------------------------------
# A one-off window open now: the HPA gets the window's minReplicas; moved into the past: back to
# the defaults; with the kill-switch annotation on the HPA, nothing is written any more.
test_service_scaler() {
  install service-scaler
  local ns=e2e-service
  fresh_namespace "$ns"
  k create deployment web -n "$ns" --image=registry.k8s.io/pause:3.10 --replicas=1
  k set resources deployment web -n "$ns" --requests=cpu=10m,memory=16Mi

  scaler() { # scaler FROM TO: the ServiceScaler with one ZonedDateTime window [FROM, TO)
    cat >"$WORK/service-scaler.yaml" <<EOF
apiVersion: scaler.udaan.io/v1
kind: ServiceScaler
metadata: {name: web, namespace: $ns}
spec:
  hpa: {minReplicas: 1, maxReplicas: 5, targetCPUUtilization: 80}
  timeRangeSpec:
  - kind: ZonedDateTime
    from: "$1"
    to: "$2"
    replicaSpec:
      hpa: {minReplicas: 3}
EOF
    k apply -f "$WORK/service-scaler.yaml"
  }
  planned_min() {
    plan service-scaler --file "$WORK/service-scaler.yaml" --at "$(now)" --output json | json effective.minReplicas
  }

  scaler "$(ts '-5 min')" "$(ts '+30 min')"
  local expected
  expected=$(planned_min)
  [ "$expected" = 3 ] || die "plan says minReplicas $expected inside the window, expected 3"
  wait_for 60 "$expected" -- get hpa web -n "$ns" -o 'jsonpath={.spec.minReplicas}'
  wait_for 10 Deployment -- get hpa web -n "$ns" -o 'jsonpath={.spec.scaleTargetRef.kind}'

  log "service-scaler: window in the past -> defaults"
  scaler "$(ts '-2 hour')" "$(ts '-1 hour')"
  expected=$(planned_min)
  [ "$expected" = 1 ] || die "plan says minReplicas $expected outside the window, expected 1"
  wait_for 60 "$expected" -- get hpa web -n "$ns" -o 'jsonpath={.spec.minReplicas}'

  log "service-scaler: kill switch on the HPA"
  k annotate hpa web -n "$ns" service-scaler.kubernetes.io/managed=false --overwrite
  scaler "$(ts '-5 min')" "$(ts '+30 min')"
  stays 20 1 -- get hpa web -n "$ns" -o 'jsonpath={.spec.minReplicas}'
}

# --- scaledown-window -----------------------------------------------------------------------------
# Target nodeAnnotation (upstream cluster-autoscaler; kind has no ClusterAutoscaler): outside the
# window the nodes carry scale-down-disabled=true; once a window is open, the annotation goes.
test_scaledown_window() {
  install scaledown-window \
    --set targets.clusterAutoscaler.enabled=false --set targets.nodeAnnotation.enabled=true \
    --set clusterVersion.enabled=false

  schedule() { # schedule CRON DURATION
    cat >"$WORK/schedule.yaml" <<EOF
apiVersion: scaling.ebb.dev/v1alpha1
kind: ScaleDownSchedule
metadata: {name: e2e-nodes}
spec:
  target:
    nodeAnnotation:
      nodeSelector: {matchLabels: {kubernetes.io/os: linux}}
  windows:
  - {schedule: "$1", duration: $2, timeZone: UTC}
EOF
    k apply -f "$WORK/schedule.yaml"
  }
  planned() { plan scaledown-window --file "$WORK/schedule.yaml" --at "$(now)" --output json | json scaleDownEnabled; }
  local node annotation='{.metadata.annotations.cluster-autoscaler\.kubernetes\.io/scale-down-disabled}'
  node=$(k get nodes -l kubernetes.io/os=linux -o 'jsonpath={.items[0].metadata.name}')

  schedule "0 0 1 1 *" 1m # open one minute a year: closed now
  [ "$(planned)" = false ] || die "plan says scale-down is enabled for a closed window"
  wait_for 60 false -- get scaledownschedule e2e-nodes -o 'jsonpath={.status.scaleDownEnabled}'
  wait_for 30 true -- get node "$node" -o "jsonpath=$annotation"

  log "scaledown-window: a window open now"
  schedule "* * * * *" 1h # opens every minute for an hour: always open
  [ "$(planned)" = true ] || die "plan says scale-down is disabled inside an open window"
  wait_for 60 true -- get scaledownschedule e2e-nodes -o 'jsonpath={.status.scaleDownEnabled}'
  wait_for 30 "" -- get node "$node" -o "jsonpath=$annotation"
}

# --- stackable-scaler -----------------------------------------------------------------------------
# A StatefulSet owning a StackableScaler with a slow preScale hook: spec.replicas 1 -> 2 runs the
# hook, scales the StatefulSet and returns to Idle; while the hook runs, the webhook rejects
# another replicas change.
test_stackable_scaler() {
  local svc=ebb-stackable-scaler-webhook
  log "stackable-scaler: webhook certificate (self-signed CA)"
  k create namespace "$SYSTEM_NS" --dry-run=client -o yaml | k apply -f -
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=ebb-e2e-ca" \
    -keyout "$WORK/ca.key" -out "$WORK/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$svc.$SYSTEM_NS.svc" \
    -keyout "$WORK/tls.key" -out "$WORK/tls.csr" 2>/dev/null
  printf 'subjectAltName=DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local\n' "$svc" "$SYSTEM_NS" "$svc" "$SYSTEM_NS" >"$WORK/san.ext"
  openssl x509 -req -in "$WORK/tls.csr" -CA "$WORK/ca.crt" -CAkey "$WORK/ca.key" -CAcreateserial \
    -days 1 -extfile "$WORK/san.ext" -out "$WORK/tls.crt" 2>/dev/null
  k -n "$SYSTEM_NS" create secret tls ebb-e2e-webhook-tls --cert="$WORK/tls.crt" --key="$WORK/tls.key" \
    --dry-run=client -o yaml | k apply -f -
  install stackable-scaler --set webhook.enabled=true \
    --set webhook.tls.secretName=ebb-e2e-webhook-tls --set webhook.tls.caBundle="$(base64 -w0 <"$WORK/ca.crt")"

  local ns=e2e-stackable
  fresh_namespace "$ns"
  k apply -f - <<EOF
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: data, namespace: $ns}
spec:
  serviceName: data
  replicas: 1
  selector: {matchLabels: {app: data}}
  template:
    metadata: {labels: {app: data}}
    spec:
      containers: [{name: pause, image: registry.k8s.io/pause:3.10}]
EOF
  local uid
  uid=$(k get statefulset data -n "$ns" -o 'jsonpath={.metadata.uid}')
  k apply -f - <<EOF
apiVersion: autoscaling.stackable.tech/v1alpha1
kind: StackableScaler
metadata:
  name: data
  namespace: $ns
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: data, uid: $uid}]
spec:
  replicas: 1
  hooks:
    preScale:
      timeoutSeconds: 300
      template:
        spec:
          backoffLimit: 0
          template:
            spec:
              restartPolicy: Never
              containers:
              - name: offload
                image: busybox:1.37
                command: ["sh", "-c", "env | sort; sleep 25"]
EOF
  wait_for 60 Idle -- get stackablescaler data -n "$ns" -o 'jsonpath={.status.currentState.stage}'
  wait_for 30 1 -- get stackablescaler data -n "$ns" -o 'jsonpath={.status.replicas}'

  log "stackable-scaler: spec.replicas 1 -> 2"
  k patch stackablescaler data -n "$ns" --type=merge -p '{"spec":{"replicas":2}}'
  wait_for 60 PreScaling -- get stackablescaler data -n "$ns" -o 'jsonpath={.status.currentState.stage}'
  if k patch stackablescaler data -n "$ns" --type=merge -p '{"spec":{"replicas":3}}' 2>"$WORK/denied"; then
    die "the webhook let spec.replicas change during PreScaling"
  fi
  grep -qi "denied" "$WORK/denied" || die "replicas change failed, but not by the webhook: $(cat "$WORK/denied")"
  echo "ok: the webhook denied a replicas change during PreScaling"
  wait_for 180 2 -- get statefulset data -n "$ns" -o 'jsonpath={.spec.replicas}'
  wait_for 120 Idle -- get stackablescaler data -n "$ns" -o 'jsonpath={.status.currentState.stage}'
  wait_for 30 2 -- get stackablescaler data -n "$ns" -o 'jsonpath={.status.replicas}'
}

# --- main -----------------------------------------------------------------------------------------
log "cluster: $(k config current-context)"
k version >/dev/null || die "no cluster reachable with kubectl"
if [ "$BUILD" = 1 ]; then
  for controller in $ONLY; do
    log "build $(image "$controller")"
    "$DOCKER" build --build-arg CONTROLLER="$controller" -t "$(image "$controller")" "$ROOT"
    if [ -n "$KIND_CLUSTER" ]; then
      kind load docker-image --name "$KIND_CLUSTER" "$(image "$controller")"
    fi
  done
fi
for controller in $ONLY; do
  log "$controller"
  "test_${controller//-/_}"
  echo "PASS $controller"
done
log "e2e: all passed ($ONLY)"
