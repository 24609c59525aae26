#!/usr/bin/env bash
# The docs' links hold. First the Markdown docs (scripts/test/md-links.py),
# two tests:
#
#   md_links_self_test  the checker on its own fixture: its good links
#                       pass, each broken one is reported at its line
#   md_links            every Markdown file git tracks (README.md, docs/**,
#                       the crates' own): each relative link's file exists,
#                       each #anchor is a heading (GitHub's slug) or an
#                       <a id> of its page, no code fence left open
#
# Then the crates' API documentation builds without a rustdoc warning: `cargo
# doc --no-deps` with RUSTDOCFLAGS="-D warnings" (broken or ambiguous
# intra-doc links, links from public docs to private items, bad code-block
# attributes, ...), in four passes, each one test:
#
#   sched-published  sched with its default features, public items only:
#                    its docs as published (docs.rs builds the default
#                    features), where a public item's doc may not link to
#                    a private item or to one behind a feature
#   host             the host crates given as arguments (make test: its
#                    HOST_CRATES, with their features) and the lockdep
#                    features, with --document-private-items: every doc
#                    comment's links, private items' included (rustdoc
#                    still reports a public doc's link to a private item)
#   x86_64-unknown-none, aarch64-unknown-none
#                    kernel, kernel-hal and boot for the bare-metal
#                    targets with their private items (their per-arch
#                    modules; kernel-hal without the lockdep feature)
#
# The doc examples are not run here: `cargo test` runs them (make test's
# test-host and test-host-debug, "Doc-tests" in their logs). A failure
# prints each denied message and its place; the pass's whole output is in
# build/docs-test-PASS.log. Builds go to a target directory of their own
# (TARGET/docs-check/), so that the usual `cargo doc` output is left alone
# and an unchanged tree documents nothing again.
#
#   scripts/test/docs-test.sh -p CRATE... [--features ...]
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init docs-test
if [ $# -eq 0 ]; then
    echo "usage: $0 -p CRATE... [--features F,...]   (the host crates to document)" >&2
    exit 2
fi
cd "$H_ROOT"
cargo=${CARGO:-cargo}
checks=${CARGO_TARGET_DIR:-$H_ROOT/target}/docs-check
kernel_crates=(-p kernel -p kernel-hal -p boot)

# doc PASS TARGET_DIR ARGS...: one `cargo doc` pass, one test.
doc() {
    local pass=$1 dir=$2 log rc start
    shift 2
    log=$(h_log docs-test "$pass")
    start=$EPOCHREALTIME
    RUSTDOCFLAGS="${RUSTDOCFLAGS:-} -D warnings" CARGO_TARGET_DIR=$dir \
        "$cargo" doc --no-deps --keep-going "$@" >"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 0 ]; then
        h_check "docs_$pass" 0 "$(h_since "$start") s"
        return
    fi
    h_check "docs_$pass" 1 "cargo doc status $rc, $(h_since "$start") s"
    # Each denied message with its place, one line each (rustc's own
    # warnings on dependencies stay warnings and are not listed).
    local found
    found=$(awk '/^error(\[E[0-9]+\])?: / && !/^error: could not (document|compile)/ { msg = $0; next }
                 msg != "" && /^ *--> / { sub(/^ *--> /, ""); print "  " $0 ": " msg; msg = "" }' "$log")
    if [ -n "$found" ]; then
        h_err "FAIL: $pass: cargo doc with RUSTDOCFLAGS=\"-D warnings\":"
        echo "$found" >&2
        h_err "fix the doc comment: link an item rustdoc resolves from there (a public" \
            "doc cannot link a private item), or name it as \`code\`; see $log"
    else
        h_err "FAIL: $pass: cargo doc failed (status $rc) with no message to point at; see $log:"
        tail -20 "$log" >&2
    fi
}

# md NAME ARGS...: md-links.py ARGS as one test; a failure prints its lines.
md() {
    local name=$1 log rc start
    shift
    log=$(h_log docs-test "$name")
    start=$EPOCHREALTIME
    python3 "$H_SCRIPTS/test/md-links.py" "$@" >"$log" 2>&1
    rc=$?
    h_check "$name" "$rc" "$(tail -1 "$log"), $(h_since "$start") s"
    if [ "$rc" -ne 0 ]; then
        h_err "FAIL: $name: scripts/test/md-links.py${*:+ $*} (status $rc):"
        grep -v '^  ok: ' "$log" >&2
        [ "$name" = md_links ] &&
            h_err "fix the link: the page's path from the linking file, the anchor as GitHub" \
                "slugs the heading (lowercase, punctuation dropped, spaces to -)"
    fi
}

md md_links_self_test --self-test
md md_links
doc sched-published "$checks/published" -p sched
doc host "$checks/private" "$@" --features sched/lockdep,kernel-hal/lockdep --document-private-items
for target in x86_64-unknown-none aarch64-unknown-none; do
    doc "$target" "$checks/private" "${kernel_crates[@]}" --target "$target" --document-private-items
done

h_record docs "$H_CHECKS_PASSED" "$H_CHECKS_FAILED"
h_say "$H_CHECKS_PASSED passed, $H_CHECKS_FAILED failed"
[ "$H_CHECKS_FAILED" -eq 0 ]
