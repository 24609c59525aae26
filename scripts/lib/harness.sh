# The boot-test library: sourced by every script that boots the kernel
# (scripts/boot/qemu.sh and scripts/test/*.sh). It owns
#
#   - the QEMU command line for any arch, firmware and accelerator:
#     h_qemu ARCH [key=value...]                  -> the array QEMU
#   - whether a QEMU exit status is the guest's "pass":
#     h_pass_status ARCH / h_status_ok ARCH RC
#   - booting with a command script and a limit on silence:
#     h_run LOG LIMIT -- CMD...                   stdin from the caller
#     h_start LOG LIMIT -- CMD...; h_send TEXT; h_wait_for REGEX; h_finish
#   - the `N passed, N failed[, N skipped]` line:
#     h_summary LOG, h_counts LINE, h_record SUITE PASSED FAILED [SKIPPED]
#     (h_record adds the suite's wall and CPU seconds)
#   - the log's name: h_log NAME-PARTS...        -> build/NAME-PARTS.log
#   - the probe scripts' set-up (scripts/linux-compare): h_probe_args,
#     h_probe_sim_args, h_probe_build (h_probe_tree, h_probe_patch,
#     h_probe_kernel), h_probe_sim, h_probe_boot; h_probe_stacks and
#     h_probe_patches_apply (every probe patch applies, as stacked)
#
# Python checkers read transcripts through scripts/lib/transcript.py
# (PYTHONPATH=$H_LIB).
#
# Conventions: every function returns non-zero on failure and prints why on
# stderr prefixed with $H_NAME (the script's name, set by h_init; the
# h_probe_* functions with "error: $H_NAME:", as the probe scripts print).
# Nothing here exits the caller.

H_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
H_SCRIPTS=$(cd "$H_LIB/.." && pwd)
H_ROOT=$(cd "$H_SCRIPTS/.." && pwd)
H_BUILD="$H_ROOT/build"
export H_LIB

# h_init NAME: the prefix of this script's messages; creates build/.
h_init() {
    H_NAME=$1
    mkdir -p "$H_BUILD"
}
H_NAME=${H_NAME:-harness}

h_say() { echo "$H_NAME: $*"; }
h_err() { echo "$H_NAME: $*" >&2; }

# h_log PART...: build/PART-PART-....log (empty parts left out), printed.
h_log() {
    local name="" p
    for p in "$@"; do
        [ -n "$p" ] && name+="${name:+-}$p"
    done
    mkdir -p "$H_BUILD"
    echo "$H_BUILD/$name.log"
}

# --- QEMU command lines ---------------------------------------------------

# Prints the first -cpu model with which QEMU can start an x86_64 KVM guest
# here, and fails when there is none. A usable /dev/kvm is not enough: nested
# set-ups may refuse a model (seen: `-cpu host` aborts on MSR 0x10a,
# arch-capabilities), so each candidate is tried with a paused VM that is
# told to quit at once.
h_kvm_cpu() {
    [ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
    local cpu
    for cpu in ${1:-host host,-arch-capabilities}; do
        if echo quit | timeout 10 "${QEMU_X86_64:-qemu-system-x86_64}" -machine q35 -accel kvm \
            -cpu "$cpu" -nodefaults -display none -bios /usr/share/qemu/qboot.rom -S \
            -monitor stdio >/dev/null 2>&1; then
            echo "$cpu"
            return 0
        fi
    done
    return 1
}

# The raw arm64 Image of an aarch64 kernel ELF, made next to it (ELF.Image)
# when missing or older than the ELF; prints its path. A file that already is
# a raw Image (the arm64 header's magic "ARM\x64" at byte 56, as in Linux's
# vmlinuz) is its own Image.
h_arm_image() {
    local elf=$1 image="$1.Image"
    if [ "$(dd if="$elf" bs=1 skip=56 count=4 2>/dev/null | tr -d "\\0")" = "ARMd" ]; then
        echo "$elf"
        return 0
    fi
    if [ ! -f "$image" ] || [ "$elf" -nt "$image" ]; then
        "$H_SCRIPTS/boot/aarch64-image.sh" "$elf" "$image" || return 1
    fi
    echo "$image"
}

# A shim Image for QEMU -kernel that branches to ADDR with x0 (the DTB)
# untouched: QEMU -kernel always loads at RAM base + 2 MiB, so a relocated
# boot loads the real Image at ADDR with `-device loader` and starts it
# through this. Writes OUT.
h_arm_shim() { # ADDR OUT
    local addr=$1 out=$2
    # arm64 image header (code0 = b +64, image_size 4 KiB, flags
    # LE|4K|anywhere), then `ldr x1, #8; br x1; .quad ADDR`. le32/le64 print
    # printf escapes (\xNN), turned into bytes by the outer printf.
    le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
    le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32 & 0xffffffff)); }
    # shellcheck disable=SC2059 # the escapes are the point
    {
        printf "$(le32 0x14000010)$(le32 0)$(le64 0)$(le64 0x1000)$(le64 0xA)"
        printf "$(le64 0)$(le64 0)$(le64 0)ARM\\x64$(le32 0)"
        printf "$(le32 0x58000041)$(le32 0xd61f0020)$(le64 "$addr")"
    } >"$out.tmp.$$"
    mv -f "$out.tmp.$$" "$out"
}

# h_qemu ARCH [key=value...]: sets the array QEMU to a full QEMU command.
#
#   kernel=ELF      boot this kernel directly (x86_64: PVH through -kernel;
#                   aarch64: its raw Image through -kernel, DTB in x0; a raw
#                   arm64 Image such as Linux's is taken as it is)
#   append=ARGS     the kernel command line (with kernel=, or fw=edk2)
#   fw=NAME         firmware: x86_64 qboot (default with kernel=), seabios
#                   (default without), ovmf (pflash, with the script's own
#                   copy of the variables in build/); aarch64 none (default),
#                   edk2, uboot
#   smp=N[,opts] mem=SIZE  default $SMP (1) and $MEM (256M); QEMU -smp options
#                   such as threads=2 or sockets=2 may follow the count
#   accel=auto|tcg|kvm  default $ACCEL or auto: x86_64 KVM when it works and
#                   is not PVM (a PVM /dev/kvm runs an unaware guest ~1000x
#                   slower than TCG), else TCG; aarch64 always TCG
#   cpu=MODEL       default $CPU, else host (KVM), max (x86_64 TCG),
#                   cortex-a72 (aarch64)
#   gic=2|3         aarch64: default $GIC, else 2 up to 8 CPUs and 3 beyond
#                   (QEMU virt's GICv2 stops at 8 CPUs)
#   machine=OPTS    more -machine options (aarch64: acpi=off, virtualization=on)
#   load_addr=ADDR  aarch64: load the Image at this 2 MiB-aligned address
#                   (default $LOAD_ADDR) instead of QEMU's 0x40200000
#   icount=SHIFT    reproducible time: -icount shift=SHIFT,sleep=off (TCG);
#                   SHIFT 0..9, or off (as empty: no -icount)
#   vga=1           a standard VGA (x86_64) instead of no display device
#   monitor=PATH    QEMU's human monitor on a unix socket
#   serial=stdio|none  default stdio (signal=off: Ctrl-C reaches the guest)
# Then $QEMU_EXTRA (word-split) is appended; callers append more to QEMU.
# The guest reports its verdict through isa-debug-exit (x86_64) or
# semihosting (aarch64): see h_pass_status.
h_qemu() {
    local arch=$1
    shift
    local kernel="" append="" fw="" smp=${SMP:-1} mem=${MEM:-256M} accel=${ACCEL:-auto}
    local cpu=${CPU:-} gic=${GIC:-} machine_opts="" load_addr=${LOAD_ADDR:-} icount=""
    local vga=0 monitor="" serial=stdio kv
    for kv in "$@"; do
        case $kv in
            kernel=*) kernel=${kv#*=} ;;
            append=*) append=${kv#*=} ;;
            fw=*) fw=${kv#*=} ;;
            smp=*) smp=${kv#*=} ;;
            mem=*) mem=${kv#*=} ;;
            accel=*) accel=${kv#*=} ;;
            cpu=*) cpu=${kv#*=} ;;
            gic=*) gic=${kv#*=} ;;
            machine=*) machine_opts=${kv#*=} ;;
            load_addr=*) load_addr=${kv#*=} ;;
            icount=*) icount=${kv#*=} ;;
            vga=*) vga=${kv#*=} ;;
            monitor=*) monitor=${kv#*=} ;;
            serial=*) serial=${kv#*=} ;;
            *) h_err "h_qemu: unknown option '$kv'"; return 2 ;;
        esac
    done
    if [ -n "$kernel" ] && [ ! -f "$kernel" ]; then
        h_err "no such kernel: $kernel"
        return 2
    fi
    case $icount in
        off) icount="" ;;
        "" | [0-9]) ;;
        *) h_err "ICOUNT (icount=) must be a shift 0..9 or off, not '$icount'"; return 2 ;;
    esac
    [ -n "$icount" ] && accel=tcg
    QEMU=()
    local common=(-smp "$smp" -m "$mem" -nodefaults -no-reboot -display none)
    [ "$vga" = 1 ] && common+=(-device VGA)
    case $serial in
        stdio) common+=(-chardev stdio,id=s0,signal=off -serial chardev:s0) ;;
        none) ;;
        *) h_err "h_qemu: serial must be stdio or none, not '$serial'"; return 2 ;;
    esac
    [ -n "$monitor" ] && common+=(-monitor "unix:$monitor,server=on,wait=off")
    [ -n "$icount" ] && common+=(-icount "shift=$icount,sleep=off")
    case $arch in
        x86_64)
            local accel_args
            case $accel in
                auto)
                    if [ -d /sys/module/kvm_pvm ]; then
                        accel_args=(-accel tcg -cpu "${cpu:-max}")
                    elif kv=$(h_kvm_cpu "$cpu"); then
                        accel_args=(-accel kvm -cpu "$kv")
                    else
                        accel_args=(-accel tcg -cpu "${cpu:-max}")
                    fi
                    ;;
                kvm)
                    kv=$(h_kvm_cpu "$cpu") || { h_err "accel=kvm, but KVM does not work here"; return 1; }
                    accel_args=(-accel kvm -cpu "$kv")
                    ;;
                tcg) accel_args=(-accel tcg -cpu "${cpu:-max}") ;;
                *) h_err "ACCEL must be auto, kvm or tcg, not '$accel'"; return 2 ;;
            esac
            [ -n "$fw" ] || { [ -n "$kernel" ] && fw=qboot || fw=seabios; }
            QEMU=("${QEMU_X86_64:-qemu-system-x86_64}" -machine "q35${machine_opts:+,$machine_opts}"
                "${accel_args[@]}" "${common[@]}"
                -device isa-debug-exit,iobase=0xf4,iosize=0x04)
            case $fw in
                # qboot instead of SeaBIOS for -kernel: ~0.1 s of firmware
                # instead of ~1.5 s under nested KVM.
                qboot) QEMU+=(-bios /usr/share/qemu/qboot.rom) ;;
                seabios) ;;
                ovmf)
                    # The 4 MiB build where there is one (newer Debian ships
                    # only that), with a private copy of its variables.
                    local code=/usr/share/OVMF/OVMF_CODE_4M.fd vars=/usr/share/OVMF/OVMF_VARS_4M.fd
                    [ -f "$code" ] || { code=/usr/share/OVMF/OVMF_CODE.fd; vars=/usr/share/OVMF/OVMF_VARS.fd; }
                    cp "$vars" "$H_BUILD/ovmf-vars-$H_NAME.fd" || return 1
                    QEMU+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$code"
                        -drive "if=pflash,format=raw,unit=1,file=$H_BUILD/ovmf-vars-$H_NAME.fd")
                    ;;
                *) h_err "h_qemu: x86_64 firmware must be qboot, seabios or ovmf, not '$fw'"; return 2 ;;
            esac
            [ -n "$kernel" ] && QEMU+=(-kernel "$kernel" -append "$append")
            ;;
        aarch64)
            [ "$accel" = kvm ] && { h_err "aarch64 runs under TCG only"; return 2; }
            if [ -z "$gic" ]; then
                gic=2
                [ "${smp%%,*}" -gt 8 ] && gic=3
            fi
            QEMU=("${QEMU_AARCH64:-qemu-system-aarch64}"
                -machine "virt,gic-version=$gic${machine_opts:+,$machine_opts}"
                -cpu "${cpu:-cortex-a72}" "${common[@]}" -semihosting -nic none)
            case ${fw:-none} in
                none) ;;
                edk2) QEMU+=(-bios /usr/share/qemu-efi-aarch64/QEMU_EFI.fd) ;;
                uboot) QEMU+=(-bios /usr/lib/u-boot/qemu_arm64/u-boot.bin) ;;
                *) h_err "h_qemu: aarch64 firmware must be none, edk2 or uboot, not '$fw'"; return 2 ;;
            esac
            if [ -n "$kernel" ]; then
                local image
                image=$(h_arm_image "$kernel") || return 1
                if [ -n "$load_addr" ]; then
                    local addr=$((load_addr))
                    if ((addr % 0x200000 != 0)); then
                        h_err "LOAD_ADDR=$load_addr is not 2 MiB aligned"
                        return 2
                    fi
                    h_arm_shim "$addr" "$kernel.shim.Image"
                    QEMU+=(-kernel "$kernel.shim.Image"
                        -device "loader,file=$image,addr=$(printf '0x%x' "$addr"),force-raw=on")
                else
                    QEMU+=(-kernel "$image")
                fi
                QEMU+=(-append "$append")
            fi
            ;;
        *) h_err "unknown arch '$arch' (x86_64 or aarch64)"; return 2 ;;
    esac
    # shellcheck disable=SC2206 # QEMU_EXTRA is a word list on purpose
    QEMU+=(${QEMU_EXTRA:-})
}

# The QEMU exit status with which the guest reports success: x86_64
# isa-debug-exit writes 0x10 -> status (0x10 << 1) | 1 = 33 (failure: 0x11
# -> 35); aarch64 semihosting SYS_EXIT 0 (failure: 1).
h_pass_status() {
    case $1 in
        x86_64) echo 33 ;;
        *) echo 0 ;;
    esac
}
h_status_ok() { [ "$2" -eq "$(h_pass_status "$1")" ]; }
# Whether RC is timeout(1)'s: 124 (TERM) or 137 (KILL after -k).
h_timed_out() { [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; }
# Whether the harness ended the last run (h_run, h_wait_for, h_finish): it
# fell silent for its limit or reached its cap; H_WHY_ENDED says which.
h_ended() { [ -n "${H_WHY_ENDED:-}" ]; }

# Seconds since T0 ($EPOCHREALTIME), one decimal.
h_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

# --- booting --------------------------------------------------------------

# Wall-time limits are limits on silence: a run is ended when its log has
# not grown for LIMIT seconds (a hung guest prints nothing), or when it has
# run H_CAP (default 4) times LIMIT in all (a guest that prints forever).
# Under TCG without -icount a guest's speed is the host's, so a loaded host
# (four busy loops and more on two cores) slows a healthy boot that keeps
# printing; a fixed total limit failed such boots, a silence limit does not,
# and it still ends a hang within LIMIT seconds of its last line.

# h_us: the wall clock in microseconds.
h_us() { echo "${EPOCHREALTIME/./}"; }

# h_watch_init LOG LIMIT: starts the silence clock of the run writing LOG.
h_watch_init() {
    H_WATCH_LOG=$1
    H_LIMIT=$2
    H_CAP_END_US=$(($(h_us) + $2 * ${H_CAP:-4} * 1000000))
    H_LAST_SIZE=-1
    H_QUIET_SINCE_US=$(h_us)
    H_WHY_ENDED=""
}

# h_watch_expired: true (0) when the run has been silent for its LIMIT or
# has reached its cap; sets H_WHY_ENDED to say which.
h_watch_expired() {
    local size now
    size=$(stat -c %s "$H_WATCH_LOG" 2>/dev/null || echo 0)
    now=$(h_us)
    if [ "$size" != "$H_LAST_SIZE" ]; then
        H_LAST_SIZE=$size
        H_QUIET_SINCE_US=$now
    fi
    if ((now - H_QUIET_SINCE_US >= H_LIMIT * 1000000)); then
        H_WHY_ENDED="no output for ${H_LIMIT}s"
        return 0
    fi
    if ((now >= H_CAP_END_US)); then
        H_WHY_ENDED="still running after $((H_LIMIT * ${H_CAP:-4}))s in all"
        return 0
    fi
    return 1
}

# h_end_run PID: ends a run (TERM to its timeout(1), which passes it on to
# the run's process group; KILL 5 s later if it is still there).
h_end_run() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
}

# h_run LOG LIMIT -- CMD...: runs CMD with stdin from the caller (e.g.
# </dev/null, or a command script as <<<"$script"), its output (stdout and
# stderr) into LOG, ended after LIMIT seconds without output (see above;
# timeout(1) keeps the cap and signals the whole process group). H_TEE=1
# also shows the output. Sets H_RC (CMD's status; 124 when it was ended for
# silence or at its cap, with H_WHY_ENDED saying which) and H_SECS. It must
# not run in a pipeline's subshell: feed a script with <<<"$script".
h_run() {
    local log=$1 limit=$2 t0=$EPOCHREALTIME pid ended=0
    shift 3
    # <&0: an asynchronous command's stdin would otherwise be /dev/null.
    timeout -k 5 "$((limit * ${H_CAP:-4} + 5))" "$@" <&0 >"$log" 2>&1 &
    pid=$!
    H_SHOWN=0
    h_watch_init "$log" "$limit"
    while kill -0 "$pid" 2>/dev/null; do
        [ "${H_TEE:-0}" = 1 ] && h_show "$log"
        if h_watch_expired; then
            ended=1
            h_end_run "$pid"
            break
        fi
        # Half a second between checks, cut short when the run ends (a
        # boot of 1-3 s would otherwise wait 0.25 s on average for nothing).
        for _ in 1 2 3 4 5; do
            sleep 0.1
            kill -0 "$pid" 2>/dev/null || break
        done
    done
    wait "$pid"
    H_RC=$?
    ((ended)) && H_RC=124
    [ "${H_TEE:-0}" = 1 ] && h_show "$log"
    H_SECS=$(h_since "$t0")
}

# h_show LOG: prints what LOG gained since the last call (H_SHOWN bytes
# were shown before), so H_TEE=1 shows a run as it goes and, after its
# end, all of it exactly once.
h_show() {
    local n
    tail -c +$((H_SHOWN + 1)) "$1" >"$1.shown" 2>/dev/null || return 0
    n=$(stat -c %s "$1.shown")
    cat "$1.shown"
    H_SHOWN=$((H_SHOWN + n))
    rm -f "$1.shown"
}

# h_start LOG LIMIT -- CMD...: starts CMD in the background under the same
# silence limit, output into LOG, stdin from a FIFO that h_send writes to.
# Sets H_PID; h_finish ends the run. One run at a time.
h_start() {
    local log=$1 limit=$2
    shift 3
    H_START_LOG=$log
    H_T0=$EPOCHREALTIME
    H_FIFO="$log.in"
    rm -f "$H_FIFO"
    # A run that ended early must not take this script with it: writes to
    # its input then fail (h_send ignores that) instead of raising SIGPIPE.
    trap '' PIPE
    mkfifo "$H_FIFO" || return 1
    # LOG is truncated before the FIFO's open blocks (the redirections run
    # left to right), so h_wait_for never sees an older run's lines; the
    # writer side is opened after the fork, so CMD holds none of it and sees
    # EOF when h_finish closes it.
    timeout -k 5 "$((limit * ${H_CAP:-4} + 5))" "$@" >"$log" 2>&1 <"$H_FIFO" &
    H_PID=$!
    exec {H_FD}>"$H_FIFO"
    h_watch_init "$log" "$limit"
}

# h_send TEXT: writes TEXT (as is: add the \n) to the run's input.
h_send() { printf '%s' "$1" >&"$H_FD" 2>/dev/null; }

# h_wait_for REGEX [SECS]: waits until a line of the run's log (CRs taken
# out) matches the extended REGEX. Fails when the run ended without it, when
# the run fell silent for its limit, or after SECS seconds if given. It
# polls the log, so a slow guest on a loaded host is waited for as long as
# it keeps printing.
h_wait_for() {
    local re=$1 until=""
    [ -n "${2:-}" ] && until=$(awk -v a="$EPOCHREALTIME" -v l="$2" 'BEGIN { printf "%d", a + l }')
    while :; do
        tr -d '\r' <"$H_START_LOG" | grep -aE -- "$re" >/dev/null && return 0
        kill -0 "$H_PID" 2>/dev/null || {
            # It may have printed the line just before it ended.
            tr -d '\r' <"$H_START_LOG" | grep -aE -- "$re" >/dev/null
            return
        }
        h_watch_expired && return 1
        [ -z "$until" ] || [ "${EPOCHSECONDS}" -lt "$until" ] || return 1
        sleep 0.1
    done
}

# h_finish [GRACE]: closes the run's input, gives it GRACE seconds (default:
# until it falls silent for its limit or reaches its cap) to end by itself,
# then ends it. Sets H_RC (its status; 143 when it had to be ended: QEMU
# exits 0 on SIGTERM, with H_WHY_ENDED saying why) and H_SECS.
h_finish() {
    local until="" ended=0
    [ -n "${1:-}" ] && until=$((EPOCHSECONDS + $1))
    exec {H_FD}>&-
    while kill -0 "$H_PID" 2>/dev/null; do
        if [ -n "$until" ]; then
            if [ "$EPOCHSECONDS" -ge "$until" ]; then
                H_WHY_ENDED="not ended ${1}s after its input closed"
                break
            fi
        elif h_watch_expired; then
            break
        fi
        sleep 0.1
    done
    if kill -0 "$H_PID" 2>/dev/null; then
        ended=1
        h_end_run "$H_PID"
    fi
    wait "$H_PID"
    H_RC=$?
    ((ended)) && H_RC=143
    H_SECS=$(h_since "$H_T0")
    rm -f "$H_FIFO"
}

# --- results --------------------------------------------------------------

# h_summary LOG: the last `N passed, N failed[, N skipped]` line of LOG (a
# suite may print more than one: the last decides), CRs taken out.
h_summary() {
    tr -d '\r' <"$1" | grep -aE '^[0-9]+ passed, [0-9]+ failed' | tail -n 1
}

# h_counts LINE: H_PASSED, H_FAILED, H_SKIPPED from a summary line (0 when
# absent); fails when LINE is not one.
h_counts() {
    H_PASSED=0 H_FAILED=0 H_SKIPPED=0
    [[ $1 =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed(,\ ([0-9]+)\ skipped)? ]] || return 1
    H_PASSED=${BASH_REMATCH[1]}
    H_FAILED=${BASH_REMATCH[2]}
    H_SKIPPED=${BASH_REMATCH[4]:-0}
}

# h_check_summary LOG [any|nonzero] [skip|noskip]: the summary line says
# `0 failed`; nonzero: and at least one passed; noskip: and `0 skipped`.
# Sets H_SUMMARY (the line) and the counts; prints why it fails.
h_check_summary() {
    H_SUMMARY=$(h_summary "$1")
    if ! h_counts "$H_SUMMARY"; then
        H_WHY="no '<N> passed, <N> failed' line"
        return 1
    fi
    H_WHY=""
    if [ "$H_FAILED" -ne 0 ]; then
        H_WHY="'$H_SUMMARY'"
    elif [ "${2:-any}" = nonzero ] && [ "$H_PASSED" -eq 0 ]; then
        H_WHY="no test ran: '$H_SUMMARY'"
    elif [ "${3:-skip}" = noskip ] && [ "$H_SKIPPED" -ne 0 ]; then
        H_WHY="tests skipped: '$H_SUMMARY' (every test must run here)"
    elif [ "${3:-skip}" = noskip ] && [[ $H_SUMMARY != *", 0 skipped"* ]]; then
        H_WHY="no skipped count in '$H_SUMMARY'"
    fi
    [ -z "$H_WHY" ]
}

# h_runtime_skips LOG: one line `NAME (REASON)` per in-kernel test that
# skipped itself at run time (`test NAME ... skipped (REASON)`, kskip! in
# kernel-hal/src/testing.rs: a precondition of the boot did not hold), in
# the log's order. Not the tests skipped for too few CPUs (`skipped (needs
# N CPUs, M online)`), which a 1-CPU run expects.
h_runtime_skips() {
    tr -d '\r' <"$1" | sed -nE '/^test [^ ]+ \.\.\. skipped \(needs [0-9]+ CPUs, [0-9]+ online\)$/d
        s/^test ([^ ]+) \.\.\. skipped (\(.*\))$/\1 \2/p'
}

# h_record_skips SUITE LINES: LINES (h_runtime_skips's) for make test's
# closing lines (scripts/test/summary.sh), in $H_RESULTS.skips as
# `SUITE<TAB>LINE`, when H_RESULTS names its file.
h_record_skips() {
    [ -n "${H_RESULTS:-}" ] && [ -n "$2" ] || return 0
    local line
    while IFS= read -r line; do
        printf '%s\t%s\n' "$1" "$line"
    done <<<"$2" >>"$H_RESULTS.skips"
}

# h_cargo_counts LOG: H_PASSED, H_FAILED, H_SKIPPED (ignored) summed over
# cargo's `test result: ... N passed; M failed; K ignored` lines of LOG, and
# H_BINARIES (how many such lines).
h_cargo_counts() {
    read -r H_PASSED H_FAILED H_SKIPPED H_BINARIES < <(awk '
        /^test result: / {
            n++
            for (i = 1; i <= NF; i++) {
                if ($(i + 1) ~ /^passed;?$/) p += $i
                if ($(i + 1) ~ /^failed;?$/) f += $i
                if ($(i + 1) ~ /^ignored;?$/) s += $i
            }
        }
        END { printf "%d %d %d %d\n", p, f, s, n }' "$1")
}

# h_finish_shell SUITE ARCH LOG: ends a scripted shell run (h_finish) and
# sets H_SHELL_RC to 0 when QEMU left with the arch's clean poweroff
# status, else to QEMU's status. A run the harness had to end (silence,
# cap) fails the suite at once: recorded, reported with LOG, exit 1.
h_finish_shell() {
    h_finish
    H_SHELL_RC=$H_RC
    if h_ended; then
        h_err "FAIL: $2: ended by the harness: $H_WHY_ENDED; see $3"
        h_record "$1 $2" 0 1
        exit 1
    fi
    h_status_ok "$2" "$H_SHELL_RC" && H_SHELL_RC=0
    return 0
}

# h_check NAME STATUS DETAIL: one test's verdict in cargo's words
# ("test NAME ... ok (DETAIL)" when STATUS is 0, "... FAILED" otherwise),
# counted in H_CHECKS_PASSED / H_CHECKS_FAILED for the suite's h_record.
H_CHECKS_PASSED=0 H_CHECKS_FAILED=0
h_check() {
    if [ "$2" -eq 0 ]; then
        echo "test $1 ... ok ($3)"
        H_CHECKS_PASSED=$((H_CHECKS_PASSED + 1))
    else
        echo "test $1 ... FAILED ($3)"
        H_CHECKS_FAILED=$((H_CHECKS_FAILED + 1))
    fi
}

# h_record SUITE PASSED FAILED [SKIPPED]: one line for `make test`'s closing
# summary (scripts/test/summary.sh), when H_RESULTS names its file: the
# counts, then the suite's wall time in seconds, from when this script
# sourced the harness (H_SUITE_T0) to the record, and its CPU seconds (user
# and system, of this script and the processes it waited for: cargo and
# rustc, QEMU, the checkers; summed over the cores). A build that make ran
# before the script is in neither.
H_SUITE_T0=${EPOCHREALTIME/,/.}
h_record() {
    [ -n "${H_RESULTS:-}" ] || return 0
    local secs stat cpu
    secs=$(awk -v t0="$H_SUITE_T0" -v t1="${EPOCHREALTIME/,/.}" 'BEGIN { printf "%.1f", t1 - t0 }')
    # /proc/PID/stat after the command's name: utime, stime, cutime and
    # cstime are the 12th to 15th fields, in clock ticks.
    read -r stat <"/proc/$BASHPID/stat"
    cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($12 + $13 + $14 + $15) / hz }' <<<"${stat##*) }")
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-0}" "$secs" "$cpu" >>"$H_RESULTS"
}

# --- probed kernels (scripts/linux-compare) -------------------------------

# The probe scripts of scripts/linux-compare (lockhold-probe.sh,
# pipelock-probe.sh, hrtick-roles.sh, lazy-roles.sh) count with code that
# is not part of the kernel: each copies the tree at HEAD into
# build/NAME/src, applies its probe patches, builds that kernel into its own
# target dir (build/NAME/target) with a build log, and boots it once per
# seed under -icount. Their messages read "error: $H_NAME: ..."; these
# functions return 2 for bad input and 1 when a step failed, so the caller
# ends with `|| exit` and that status.

h_probe_err() { echo "error: $H_NAME: $*" >&2; }

# h_probe_args [SEED...]: checks SMP (default 4; 2..8 vCPUs), ICOUNT
# (default 2; the -icount shift, 0..9) and the seeds (numbers; none given:
# 1 2), in that order, and sets the caller's smp, icount and seeds (an
# array). Fails (2) at the first bad one, naming it.
h_probe_args() {
    local s
    smp=${SMP:-4} icount=${ICOUNT:-2}
    [[ $smp =~ ^[2-8]$ ]] || { h_probe_err "SMP must be 2..8, got '$smp'"; return 2; }
    [[ $icount =~ ^[0-9]$ ]] || { h_probe_err "ICOUNT must be a shift 0..9, got '$icount'"; return 2; }
    seeds=("$@")
    [[ ${#seeds[@]} -gt 0 ]] || seeds=(1 2)
    for s in "${seeds[@]}"; do
        [[ $s =~ ^[0-9]+$ ]] || { h_probe_err "a seed is a number, got '$s'"; return 2; }
    done
}

# h_probe_sim_args: the knobs of the scripts that set the kernel's hackbench
# -R runs beside the simulator's: SIM_SEEDS (default 6; 1..99), H (default
# 'hackbench -p -g 2 -l 100 -C linux -R'; one hackbench command with -R)
# and SIM_W (default 'hackbench ipc=pipe mode=process groups=2 loops=100';
# one sim hackbench workload). Sets sim_seeds, H and SIM_W; fails (2) at
# the first bad one.
h_probe_sim_args() {
    sim_seeds=${SIM_SEEDS:-6}
    [[ $sim_seeds =~ ^[1-9][0-9]?$ ]] || { h_probe_err "SIM_SEEDS must be 1..99, got '$sim_seeds'"; return 2; }
    H=${H:-hackbench -p -g 2 -l 100 -C linux -R}
    [[ $H == hackbench\ *-R* && $H != *";"* ]] ||
        { h_probe_err "H must be one hackbench command with -R, got '$H'"; return 2; }
    SIM_W=${SIM_W:-hackbench ipc=pipe mode=process groups=2 loops=100}
    [[ $SIM_W == hackbench\ * && $SIM_W != *";"* ]] ||
        { h_probe_err "SIM_W must be one sim hackbench workload, got '$SIM_W'"; return 2; }
}

# h_probe_tree DIR: DIR emptied, then the tree at HEAD (`git archive`, so
# committed files only) unpacked into it.
h_probe_tree() {
    local dir=$1 pst
    rm -rf "$dir" && mkdir -p "$dir" || return 1
    git -C "$H_ROOT" archive HEAD | tar -x -C "$dir"
    pst=("${PIPESTATUS[@]}")
    if [ "${pst[0]}" -ne 0 ] || [ "${pst[1]}" -ne 0 ]; then
        h_probe_err "could not copy the tree at HEAD into $dir"
        return 1
    fi
}

# h_probe_patch DIR PATCH...: applies each PATCH (a path; patch -p1) in
# DIR, in order; fails (1) at the first that does not apply. No fuzz
# (-F0): a hunk whose context changed could land beside the code it was
# written for, so it fails instead (a moved hunk still applies).
h_probe_patch() {
    local dir=$1 p
    shift
    for p in "$@"; do
        (cd "$dir" && patch -s -F0 -p1 <"$p") || { h_probe_err "${p##*/} no longer applies to HEAD"; return 1; }
    done
}

# h_probe_kernel SRC KERNEL LOG [WHAT]: `make kernel ARCH=x86_64` in the
# tree SRC into $CARGO_TARGET_DIR, its output into LOG, and the release
# kernel copied to KERNEL. Fails (1) with "the WHAT kernel did not build
# (LOG)".
h_probe_kernel() {
    local src=$1 kernel=$2 log=$3 what=${4:-}
    make -s -C "$src" kernel ARCH=x86_64 >"$log" 2>&1 ||
        { h_probe_err "the ${what:+$what }kernel did not build ($log)"; return 1; }
    cp "$CARGO_TARGET_DIR/x86_64-unknown-none/release/kernel" "$kernel"
}

# h_probe_sim SRC LOG: the release `sim` of the tree SRC into
# $CARGO_TARGET_DIR/release/sim, its output added to LOG.
h_probe_sim() {
    (cd "$1" && cargo build -q --release -p sim) >>"$2" 2>&1 ||
        { h_probe_err "the probed simulator did not build ($2)"; return 1; }
}

# h_probe_build OUT [PATCH...]: the usual set-up: the tree at HEAD in
# OUT/src with each PATCH applied (h_probe_patch), CARGO_TARGET_DIR set to
# OUT/target and exported (a later h_probe_sim builds there too), and the
# kernel built (log OUT/logs/build.log) and copied to OUT/kernel. Its error
# calls it "the probed kernel", or "the kernel" without a patch.
h_probe_build() {
    local out=$1
    shift
    h_probe_tree "$out/src" || return 1
    mkdir -p "$out/logs" || return 1
    h_probe_patch "$out/src" "$@" || return 1
    export CARGO_TARGET_DIR=$out/target
    h_probe_kernel "$out/src" "$out/kernel" "$out/logs/build.log" "$([ $# -gt 0 ] && echo probed)"
}

# h_probe_boot KERNEL ARGS LOG [TIMEOUT]: one boot of the x86_64 KERNEL
# with the kernel command line ARGS through scripts/boot/qemu.sh, at
# $smp vCPUs under TCG with -icount shift=$icount,sleep=off (as
# h_probe_args set them), stopped after TIMEOUT seconds (default 1200);
# its output (serial console and QEMU's) into LOG. Returns qemu.sh's
# status: 0 when the guest reported success, 124 when it timed out.
h_probe_boot() {
    SMP=$smp ACCEL=tcg TIMEOUT=${4:-1200} QEMU_EXTRA="-icount shift=$icount,sleep=off" \
        "$H_SCRIPTS/boot/qemu.sh" x86_64 "$1" "$2" >"$3" 2>&1
}

# h_probe_stacks [DIR]: the probe patches each probe script of DIR
# (default scripts/linux-compare) applies, read from the scripts
# themselves: one line per script that applies any, "SCRIPT PATCH...", the
# patches in the order its h_probe_build and h_probe_patch lines give them
# (`$here/NAME.patch` arguments). A script that runs h_roles_variant NAME
# gets hrtick-roles.sh's stack with its patch replaced by NAME-probe.patch,
# as h_roles_variant does.
h_probe_stacks() {
    local lc=${1:-$H_SCRIPTS/linux-compare} f name stack
    for f in "$lc"/*.sh; do
        name=$(sed -n 's/^h_roles_variant \([a-z0-9-]*\) .*/\1/p' "$f")
        if [ -n "$name" ]; then
            stack=$(h_probe_script_patches "$lc/hrtick-roles.sh")
            stack=${stack//hrtick-roles-probe.patch/$name-probe.patch}
        else
            stack=$(h_probe_script_patches "$f")
        fi
        [ -z "$stack" ] || echo "${f##*/} $stack"
    done
}
# h_probe_script_patches SCRIPT: its `$here/NAME.patch` arguments of
# h_probe_build and h_probe_patch, in order, on one line.
h_probe_script_patches() {
    grep -hE '^[[:space:]]*h_probe_(build|patch) ' "$1" | grep -oE '\$here/[A-Za-z0-9_.-]+\.patch' |
        sed 's|^\$here/||' | paste -sd ' ' -
}

# h_probe_patches_apply [DIR]: every *-probe.patch of DIR (default
# scripts/linux-compare) applies to the working tree at $H_ROOT, stacked
# as each script of h_probe_stacks stacks it: the files the stack touches
# are copied from the working tree into a scratch dir and each patch is
# applied there in turn with h_probe_patch, as the scripts apply them.
# Fails (1) naming each patch that no longer applies (once, as the first
# script whose stack meets it applies it; the rest of that stack is not
# tried) or that no script applies, and how to refresh it.
h_probe_patches_apply() {
    local lc=${1:-$H_SCRIPTS/linux-compare} script stack p f tmp rc=0 used=" " failed=" " on
    local -a pats
    tmp=$(mktemp -d) || return 1
    while read -r script stack; do
        read -ra pats <<<"$stack"
        rm -rf "${tmp:?}/src" && mkdir "$tmp/src" || { rc=1; break; }
        for f in $(cd "$lc" && sed -n 's|^--- a/||p' "${pats[@]}" | sort -u); do
            [ -f "$H_ROOT/$f" ] || continue
            mkdir -p "$tmp/src/$(dirname "$f")" && cp "$H_ROOT/$f" "$tmp/src/$f"
        done
        used+="${pats[*]} "
        on=
        for p in "${pats[@]}"; do
            [[ $failed == *" $p "* ]] && break
            if ! h_probe_patch "$tmp/src" "$lc/$p" >/dev/null 2>&1; then
                failed+="$p "
                h_probe_err "$p no longer applies to the working tree${on:+ on top of$on}, as $script applies it; refresh it: apply the patches before it, \`git apply -3\` it, resolve with each probe at the same logical point, and write it back from \`git diff\` (docs/testing.md, \"Probe patches\")"
                rc=1
                break
            fi
            on+=" $p"
        done
    done < <(h_probe_stacks "$lc")
    rm -rf "$tmp"
    for p in "$lc"/*-probe.patch; do
        [[ $used == *" ${p##*/} "* ]] && continue
        h_probe_err "${p##*/}: no probe script in ${lc##*/} applies it"
        rc=1
    done
    return "$rc"
}

# h_roles_variant NAME KEYS [SEED...]: hrtick-roles.sh run with the probe
# patch NAME-probe.patch (next to it) in place of its own and its build in
# build/NAME, printing only its headers and the counters whose names match
# the regex KEYS (wakestack.sh, declines.sh). The copy of hrtick-roles.sh is
# made by replacing its `here=` line, its patch's name and its build name
# `hrtickroles`; if one of them is gone the variant is refused (status 1).
h_roles_variant() {
    local name=$1 keys=$2 lc="$H_SCRIPTS/linux-compare" out
    shift 2
    out="$H_SCRIPTS/../build/$name"
    mkdir -p "$out"
    sed -e "s|^here=.*|here=$lc|" -e "s/hrtick-roles-probe\.patch/$name-probe.patch/g" \
        -e "s/hrtickroles/$name/g" "$lc/hrtick-roles.sh" >"$out/run.sh"
    if ! grep -q "build/$name\$" "$out/run.sh" || ! grep -q "$name-probe.patch" "$out/run.sh"; then
        echo "error: $name: hrtick-roles.sh no longer has the lines this script replaces" >&2
        return 1
    fi
    bash "$out/run.sh" "$@" | awk -v k="$keys" '/^(==|counter|\()/ || $1 ~ k'
}
