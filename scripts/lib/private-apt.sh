# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Debian's archive through apt without touching the machine's own lists (sourced by
# scripts/stock-kernels.sh and scripts/test-host-qemu.sh): a private sources list, package
# lists, cache and an empty dpkg status under one directory (Dir::Etc::SourceList,
# Dir::State::Lists, Dir::Cache, Dir::State::status), so `apt-get download` and
# `apt-cache` see just those suites and the machine's apt is left as it was.
#
#   papt_init DIR NAME LINE...   set up DIR with these sources.list lines; NAME (the
#                                calling script's) prefixes messages; sets papt_opts, the
#                                options every apt-get/apt-cache call here must take
#   papt_lists [force]           fetch the lists when none are there (or always: force);
#                                dies (exit 1) with the log's tail when apt-get fails
#   papt_download DIR PKG=VER... download into DIR; on failure fetch the lists again and
#                                retry once; returns 1 with apt's errors shown
# Each apt step is bounded (300 s).

# shellcheck disable=SC2034 # for the scripts that source this
papt_mirror=http://deb.debian.org/debian
papt_security=http://deb.debian.org/debian-security
papt_keyring=/usr/share/keyrings/debian-archive-keyring.gpg

papt_init() {
	papt_dir=$1 papt_name=$2
	shift 2
	command -v apt-get >/dev/null || {
		echo "$papt_name: error: apt-get not found: the packages come from Debian's archive" >&2
		exit 1
	}
	[ -r "$papt_keyring" ] || {
		echo "$papt_name: error: $papt_keyring missing; run 'sudo apt-get install debian-archive-keyring'" >&2
		exit 1
	}
	mkdir -p "$papt_dir/lists/partial" "$papt_dir/cache/archives/partial"
	: >>"$papt_dir/status"
	printf '%s\n' "$@" >"$papt_dir/sources.list"
	papt_opts=(-o "Dir::Etc::SourceList=$papt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$papt_dir/lists" -o "Dir::Cache=$papt_dir/cache"
		-o "Dir::State::status=$papt_dir/status" -o "Dir::Cache::pkgcache=$papt_dir/cache/pkgcache.bin"
		-o "Dir::Cache::srcpkgcache=$papt_dir/cache/srcpkgcache.bin" -o Dir::Etc::PreferencesParts=/dev/null
		-o Dir::Etc::Preferences=/dev/null -o Acquire::Languages=none
		-o APT::Sandbox::User=root)
	papt_ready=0
}

papt_lists() {
	if [ "${1:-}" != force ] && [ "$papt_ready" = 1 ]; then return 0; fi
	if [ "${1:-}" != force ] && compgen -G "$papt_dir/lists/*_Packages*" >/dev/null; then
		papt_ready=1
		return 0
	fi
	echo "$papt_name: fetching the package lists of $(awk '{print $(NF-1)}' "$papt_dir/sources.list" | sort -u | tr '\n' ' ')" >&2
	timeout 300 apt-get "${papt_opts[@]}" update >"$papt_dir/update.log" 2>&1 || {
		tail -n 5 "$papt_dir/update.log" >&2
		echo "$papt_name: error: apt-get update of the private lists ($papt_dir) failed; check the network to $papt_mirror and run this again" >&2
		exit 1
	}
	papt_ready=1
}

papt_download() {
	local dest=$1
	shift
	papt_lists
	(cd "$dest" && timeout 300 apt-get "${papt_opts[@]}" download "$@") >"$dest/apt.log" 2>&1 && return 0
	papt_lists force
	(cd "$dest" && timeout 300 apt-get "${papt_opts[@]}" download "$@") >"$dest/apt.log" 2>&1 && return 0
	grep -E '^E:' "$dest/apt.log" >&2 || tail -n 5 "$dest/apt.log" >&2
	return 1
}
