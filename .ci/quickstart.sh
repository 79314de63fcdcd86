#!/usr/bin/env bash
# Builds and runs the README's Quickstart as a user gets it: a fresh crate made
# from the Quickstart's TOML block (its path dependency pointed at this
# checkout) and its Rust block. Doc tests cannot see a missing dependency line:
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
grep -q '^tokio-wheel = { path = ' <<<"$deps" || {
    echo "quickstart: the TOML block has no path dependency on tokio-wheel to point here" >&2
    exit 1
}

{
    printf '[package]\nname = "quickstart"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
    printf '%s\n' "$deps" | sed "s|^tokio-wheel = { path = \"[^\"]*\"|tokio-wheel = { path = \"$root\"|"
    printf '\n[workspace]\n'
} >"$dir/Cargo.toml"
printf '%s\n' "$code" >"$dir/src/main.rs"

cargo run --quiet --manifest-path "$dir/Cargo.toml"
echo "quickstart: built and ran as pasted into a new crate"
