# Shared by scripts/test and scripts/image-test: `ensure_packages CMD=PACKAGE ...` installs
# each Debian PACKAGE whose command CMD is missing (CMD may be a file's absolute path, for
# a package that puts no command on the PATH), with apt-get as root or through sudo;
# without either it stops with one line naming what to install.
ensure_packages() {
    local missing=() pair
    for pair in "$@"; do
        case "${pair%%=*}" in
            /*) [ -e "${pair%%=*}" ] || missing+=("${pair#*=}") ;;
            *) command -v "${pair%%=*}" >/dev/null 2>&1 || missing+=("${pair#*=}") ;;
        esac
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
            echo "$(basename "$0"): needs the Debian packages ${missing[*]}: install them (apt-get install ${missing[*]}), then run it again" >&2
            exit 2
        fi
        sudo=(sudo -n)
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "$(basename "$0"): needs ${missing[*]} (Debian package names): install them, then run it again" >&2
        exit 2
    fi
    echo "installing ${missing[*]} (apt-get)" >&2
    ("${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 \
        || ("${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y -qq "${missing[@]}")) >&2
}
