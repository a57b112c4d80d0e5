# Sourced by scripts/image-test (and by hand: `. scripts/_containers.sh`, then podman,
# buildah and podman-compose as usual): runs podman and buildah without a daemon, with all
# their state under a private directory instead of the machine's /var/lib/containers.
#
#   TRIO_BROKER_CACHE   where the state lives (default ~/.cache/trio-broker): the image
#                       store (containers/), the configs below, the Debian base tarball.
#
# The configs carry what these machines need (docs/operations.md, "With podman"):
# runc with cgroupfs (crun refuses hybrid cgroups), file events (no journald), ulimits no
# higher than the machine's hard limits, and Docker image format (OCI has no HEALTHCHECK).
TRIO_BROKER_CACHE="${TRIO_BROKER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/trio-broker}"
_ctr="$TRIO_BROKER_CACHE/containers"
# Run-time state belongs on a file system that a reboot empties, as /run does; one such
# directory per store.
_ctr_run="${XDG_RUNTIME_DIR:-/tmp}/trio-broker-containers-$(id -u)-$(printf %s "$_ctr" | sha256sum | cut -c1-8)"
mkdir -p "$_ctr/storage" "$_ctr/networks" "$_ctr_run/run" "$_ctr_run/tmp"
_nofile="$(ulimit -Hn)"
_nproc="$(ulimit -Hu)"
if [ "$_nofile" = unlimited ]; then _nofile=1048576; fi
if [ "$_nproc" = unlimited ] || [ "$_nproc" -gt 32768 ]; then _nproc=32768; fi
cat > "$_ctr/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$_ctr/storage"
runroot = "$_ctr_run/run"
EOF
cat > "$_ctr/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$_nofile:$_nofile", "nproc=$_nproc:$_nproc"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$_ctr_run/events.log"
tmp_dir = "$_ctr_run/tmp"

[network]
network_config_dir = "$_ctr/networks"
EOF
# No registry answers here: every image is built or imported locally, and a short name
# such as debian:bookworm-slim resolves the way Docker resolves it.
cat > "$_ctr/registries.conf" <<EOF
unqualified-search-registries = ["docker.io"]
short-name-mode = "permissive"
EOF
export CONTAINERS_STORAGE_CONF="$_ctr/storage.conf"
export CONTAINERS_CONF="$_ctr/containers.conf"
export CONTAINERS_REGISTRIES_CONF="$_ctr/registries.conf"
export BUILDAH_FORMAT=docker
export BUILDAH_ISOLATION=chroot
export TRIO_BROKER_CACHE
unset _ctr _ctr_run _nofile _nproc
