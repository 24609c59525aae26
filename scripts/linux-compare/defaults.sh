# Sourced by scripts/linux-compare.sh (and scripts/test/harness-test.sh):
# ours takes the default scheduler features of the Linux it is compared
# with, so both kernels start each row from the same flags. Linux's
# defaults are build-dependent: Debian's arm64 Linux 7.2 boots with
# NO_HRTICK (HRTICK is on by default only with CONFIG_HRTIMER_REARM_DEFERRED,
# commit 9213aa4784cf, which needs GENERIC_ENTRY and HAVE_GENERIC_TIF_BITS,
# commit 15dd3a948855), amd64 with HRTICK; ours has HRTICK on on both.
#
# lcd_ours_table FEATURES_RS   ours' table, one `NAME 0|1` a line (the
#     compile-time defaults of sched/src/features.rs, in table order)
# lcd_diff TABLE LINUX_FEATURES_LINE   the settings ours must take to have
#     Linux's defaults: line 1 `set: NAME NO_NAME ...` (ours' flags whose
#     default differs from Linux's), line 2 `linux-only: ...` (Linux's flags
#     ours has not: listed, not applied), line 3 `ours-only: ...` (ours'
#     flags Linux has not: they keep ours' default). Fails (status 1) when
#     the line has no flag at all.
# lcd_unknown_in TABLE CONFIGS   the FEATURE / NO_FEATURE words of
#     '|'-separated configs that ours' table has not (empty: all known)
# lcd_restore TABLE SET CFG   the settings that put CFG's flags back to
#     their base (ours' default, or SET's value where SET has the flag)
# lcd_log_diff TABLE LOG   lcd_diff of a transcript's first `lc: features`
#     line (fails when it has none)
# LCD_CONFIGS2, LCD_WORKLOADS2   the second set's configs and workloads
#     (each feature off against the default; lcbench's schbench and
#     pgbench): make linux-compare's CONFIGS2 and WORKLOADS2 by default,
#     and the rows of the second set's kept Linux columns
#     (docs/results/linux/referee/ARCH-features/)

LCD_CONFIGS2='default|NO_RUN_TO_PARITY|NO_PREEMPT_SHORT|NO_DELAY_DEQUEUE|NO_PLACE_LAG'
LCD_WORKLOADS2='schbench -m 1 -t 4 -r 1|pgbench -c 4 -t 20'

lcd_ours_table() {
    sed -nE 's/^ *[A-Za-z]+ = "([A-Z_]+)", (true|false), on: .*/\1 \2/p' "$1" |
        sed -e 's/ true$/ 1/' -e 's/ false$/ 0/'
}

lcd_diff() {
    local table=$1 line=$2
    awk -v line="$line" '
        { ours[$1] = $2; order[++n] = $1 }
        END {
            m = split(line, w, /[ \t\r]+/)
            for (i = 1; i <= m; i++) {
                if (w[i] == "" || w[i] !~ /^[A-Z][A-Z0-9_]*$/) continue
                name = w[i]; on = 1
                if (name ~ /^NO_/) { name = substr(name, 4); on = 0 }
                if (name in linux) continue
                linux[name] = on; k++
                if (!(name in ours)) { only = only " " name; continue }
                if (ours[name] != on) set = set " " (on ? name : "NO_" name)
            }
            if (k == 0) exit 1
            for (i = 1; i <= n; i++) if (!(order[i] in linux)) mine = mine " " order[i]
            print "set:" set; print "linux-only:" only; print "ours-only:" mine
        }' <<<"$table"
}

lcd_log_diff() {
    lcd_diff "$1" "$(tr -d '\r' <"$2" 2>/dev/null | sed -n 's/^lc: features //p' | head -1)"
}

lcd_unknown_in() {
    local table=$1 configs=$2
    tr '|,' '\n\n' <<<"$configs" | sed -nE 's/^ *(NO_)?([A-Z][A-Z0-9_]*) *$/\2/p' | sort -u |
        while read -r name; do
            grep -q "^$name " <<<"$table" || echo "$name"
        done
}

lcd_restore() {
    local table=$1 set=$2 cfg=$3 s name on out=""
    for s in ${cfg//,/ }; do
        name=${s#NO_}
        on=$(awk -v n="$name" '$1 == n {print $2}' <<<"$table")
        [[ " $set " == *" $name "* ]] && on=1
        [[ " $set " == *" NO_$name "* ]] && on=0
        [[ -n $on ]] || continue
        if [[ $on == 1 ]]; then out+="$name "; else out+="NO_$name "; fi
    done
    echo "${out% }"
}

# lcd_merge SET CFG   ours' `compare -c` text for config CFG on top of the
#     base SET: SET's settings whose flag CFG does not set, then CFG's own
#     (compare refuses a config that sets a flag twice); `default` when
#     both are empty. Each `compare` run starts from ours' boot defaults,
#     and ours has no boot argument for features, so the base rides in
#     every config.
lcd_merge() {
    local set=$1 cfg=$2 s out="" mine=","
    [[ $cfg == default || -z $cfg ]] && cfg=""
    for s in ${cfg//,/ }; do mine+="${s#NO_},"; done
    for s in $set; do [[ $mine == *",${s#NO_},"* ]] || out+="$s,"; done
    out+=$cfg
    out=${out%,}
    echo "${out:-default}"
}

# lcd_relabel LOG MAP   in ours' A/B log, each run line of config LETTER
#     in the B-th `compare` (by its `compare: N config(s) x ...` header)
#     that ours ran as FROM is given the label TO (the Linux log's), so
#     abtool pairs it with Linux's; MAP has `B<TAB>LETTER<TAB>FROM<TAB>TO`
#     lines. Literal match; other lines unchanged.
lcd_relabel() {
    local log=$1 map=$2 tmp
    tmp=$(mktemp)
    awk -F'\t' -v mapfile="$map" '
        BEGIN { while ((getline m < mapfile) > 0) { split(m, f, "\t"); from[f[1] " " f[2]] = f[3]; to[f[1] " " f[2]] = f[4] } }
        {
            line = $0; sub(/\r$/, "", line)
            if (line ~ /^compare: [0-9]+ config\(s\) x /) b++
            if (line ~ /^(run|warmup) [0-9]+\/[0-9]+ cfg [A-Z]+ /) {
                i = index(line, " cfg "); head = substr(line, 1, i + 4); rest = substr(line, i + 5)
                j = index(rest, " "); letter = substr(rest, 1, j - 1); rest = substr(rest, j + 1)
                k = b " " letter
                if ((k in from) && substr(rest, 1, length(from[k]) + 1) == from[k] ":") {
                    print head letter " " to[k] substr(rest, length(from[k]) + 1); next
                }
            }
            print
        }' "$log" >"$tmp" && cat "$tmp" >"$log"
    rm -f "$tmp"
}
