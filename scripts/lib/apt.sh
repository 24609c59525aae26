# shellcheck shell=bash
# A private apt configuration for downloading Debian packages that the
# machine's own apt set-up does not track (another suite, another
# architecture), without changing that set-up. Sourced by
# scripts/linux-compare/fetch.sh and scripts/setup/ensure-qemu10.sh.
#
# The archive's address is read at run time from the machine's own apt
# sources: the first non-security `URIs:` of /etc/apt/sources.list.d/*.sources,
# else the first non-security `deb` line of /etc/apt/sources.list. No host
# name is written in the repository.

# apt_sources_uri SECURITY: the first `URIs:` of
# /etc/apt/sources.list.d/*.sources whose address names security (1) or
# does not (0); nothing when there is none.
apt_sources_uri() {
    local f uri=""
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        uri=$(awk -v sec="$1" '/^URIs:/ && ($2 ~ /security/) == sec {print $2; exit}' "$f")
        [[ -n $uri ]] && break
    done
    echo "$uri"
}

# Prints the archive address, or fails with a message.
apt_archive_uri() {
    local uri
    uri=$(apt_sources_uri 0)
    if [[ -z $uri && -f /etc/apt/sources.list ]]; then
        uri=$(awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; exit}}' /etc/apt/sources.list |
            grep -v security | head -1 || true)
    fi
    [[ -n $uri ]] || { echo "error: no archive address in this machine's apt sources" >&2; return 1; }
    echo "$uri"
}

# Prints the security archive's address, or nothing when there is none.
apt_security_uri() { apt_sources_uri 1; }

# apt_private DIR SUITE ARCH [deb-src]: writes DIR's sources.list (SUITE,
# component main, ARCH) and an empty dpkg status, and sets APT_OPTS to the
# -o options that make apt-get and apt-cache use DIR only. With deb-src the
# list names source packages instead, of SUITE and, when the machine has a
# security archive, of SUITE-security too (`apt-get source`).
apt_private() {
    local dir=$1 suite=$2 arch=$3 kind=${4:-deb} uri sec keyring=/usr/share/keyrings/debian-archive-keyring.gpg signed=""
    uri=$(apt_archive_uri) || return 1
    mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
    [[ -f $keyring ]] && signed=" signed-by=$keyring"
    if [[ $kind == deb-src ]]; then
        sec=$(apt_security_uri)
        {
            echo "deb-src [arch=$arch$signed] $uri $suite main"
            [[ -z $sec ]] || echo "deb-src [arch=$arch$signed] $sec $suite-security main"
        } >"$dir/sources.list"
    else
        echo "deb [arch=$arch$signed] $uri $suite main" >"$dir/sources.list"
    fi
    : >"$dir/status"
    APT_OPTS=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache"
        -o "Dir::State::status=$dir/status" -o "APT::Architecture=$arch" -o "APT::Architectures=$arch")
}
