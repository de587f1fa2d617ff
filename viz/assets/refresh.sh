#!/usr/bin/env bash
# refresh.sh re-fetches the pinned echarts runtime from the npm registry,
# verifies the tarball against the registry's published integrity and shasum,
# and rewrites echarts.min.js, LICENSE-echarts and NOTICE-echarts beside this
# script. The JS is vendored byte for byte; never edit it by hand.
#
# Usage: viz/assets/refresh.sh        (needs npm, tar, openssl, sha1sum)
set -euo pipefail

ECHARTS_VERSION=5.6.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

spec="echarts@${ECHARTS_VERSION}"
want_integrity="$(npm view "$spec" dist.integrity)"
want_shasum="$(npm view "$spec" dist.shasum)"
if [[ -z "$want_integrity" || -z "$want_shasum" ]]; then
	echo "refresh.sh: the npm registry returned no dist.integrity/dist.shasum for $spec" >&2
	exit 1
fi

(cd "$work" && npm pack --silent "$spec" >/dev/null)
tarball="$work/echarts-${ECHARTS_VERSION}.tgz"
if [[ ! -f "$tarball" ]]; then
	echo "refresh.sh: npm pack did not produce $tarball" >&2
	exit 1
fi

got_integrity="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 | tr -d '\n')"
got_shasum="$(sha1sum "$tarball" | cut -d' ' -f1)"
if [[ "$got_integrity" != "$want_integrity" ]]; then
	echo "refresh.sh: integrity mismatch for $spec: registry says $want_integrity, tarball is $got_integrity" >&2
	exit 1
fi
if [[ "$got_shasum" != "$want_shasum" ]]; then
	echo "refresh.sh: shasum mismatch for $spec: registry says $want_shasum, tarball is $got_shasum" >&2
	exit 1
fi

tar -xzf "$tarball" -C "$work" package/dist/echarts.min.js package/LICENSE package/NOTICE

js="$work/package/dist/echarts.min.js"
if grep -qi '</script' "$js"; then
	echo "refresh.sh: $spec dist/echarts.min.js contains </script and cannot be inlined" >&2
	exit 1
fi
if grep -qF '__f__' "$js"; then
	# go-echarts deletes every "__f__" (its inline-function marker) from the page it renders.
	echo "refresh.sh: $spec dist/echarts.min.js contains __f__, which go-echarts would strip from the report" >&2
	exit 1
fi
if ! grep -qF "\"${ECHARTS_VERSION}\"" "$js"; then
	echo "refresh.sh: $spec dist/echarts.min.js does not carry the version string ${ECHARTS_VERSION}" >&2
	exit 1
fi

install -m 0644 "$js" "$here/echarts.min.js"
install -m 0644 "$work/package/LICENSE" "$here/LICENSE-echarts"
install -m 0644 "$work/package/NOTICE" "$here/NOTICE-echarts"

echo "refresh.sh: vendored $spec ($(wc -c <"$here/echarts.min.js") bytes, $want_integrity)"
