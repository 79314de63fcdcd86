#!/usr/bin/env bash
# Builds and runs the README's Quickstart as a user gets it: a fresh crate made
# from the Quickstart's TOML block (its `tokio-wheel` line, a crates.io version,
# pointed at this checkout) and its Rust block. Doc tests cannot see a missing dependency line:
# they build with the crate's own dev-dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir=target/quickstart
rm -rf "$dir" && mkdir -p "$dir/src"

# The first ```toml and ```rust blocks after "## Quickstart".
block() {
    awk -v lang="$1" '
        /^## Quickstart/ { on = 1; next }
        on && /^## / { exit }
        on && $0 == "```" lang { inside = 1; next }
        inside && /^```/ { exit }
        inside { print }
    ' README.md
}

deps=$(block toml)
code=$(block rust)
[ -n "$deps" ] || { echo "quickstart: no TOML block in the README's Quickstart" >&2; exit 1; }
[ -n "$code" ] || { echo "quickstart: no Rust block in the README's Quickstart" >&2; exit 1; }
grep -qE '^tokio-wheel = "[0-9][^"]*"$' <<<"$deps" || {
    echo "quickstart: the TOML block has no \`tokio-wheel = \"<version>\"\` line to point here" >&2
    exit 1
}
# The version it asks for must be the one this checkout is.
asked=$(sed -nE 's/^tokio-wheel = "([^"]*)"$/\1/p' <<<"$deps")
have=$(sed -nE '/^\[package\]/,/^\[/ s/^version = "([^"]*)"$/\1/p' Cargo.toml)
case "$have" in
"$asked" | "$asked".*) ;;
*)
    echo "quickstart: the README asks for tokio-wheel $asked, this checkout is $have" >&2
    exit 1
    ;;
esac

{
    printf '[package]\nname = "quickstart"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
    printf '%s\n' "$deps" | sed -E "s|^tokio-wheel = \"[^\"]*\"\$|tokio-wheel = { path = \"$root\" }|"
    printf '\n[workspace]\n'
} >"$dir/Cargo.toml"
printf '%s\n' "$code" >"$dir/src/main.rs"

cargo run --quiet --manifest-path "$dir/Cargo.toml"
echo "quickstart: built and ran as pasted into a new crate"
