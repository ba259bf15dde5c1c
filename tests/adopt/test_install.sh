#!/usr/bin/env bash
# An installed shmlog, used from outside the tree as a user would: install
# the build into a temporary prefix, then build a program against it with
# pkg-config and with find_package(shmlog CONFIG), shared and static, run
# each, and read their records back with the installed CLI. Without
# pkg-config or scdoc it runs the rest and exits 77 (skipped), saying what
# it did not check.
# usage: test_install.sh BUILD_DIR C_COMPILER GENERATOR
set -u
build=${1:?usage: test_install.sh BUILD_DIR C_COMPILER GENERATOR}
cc=${2:-cc}
gen=${3:-Ninja}
tmp=$(mktemp -d /tmp/shmlog-install.XXXXXX)
prefix=$tmp/prefix
B=test-install-$$
fail=0
skipped=() # checks that could not run here, and why: exit 77 at the end
cleanup() { rm -rf "$tmp"; rm -f /dev/shm/shmlog.$B; }
trap cleanup EXIT
die() { echo "FAIL: $*" >&2; exit 1; }
check() { [ -e "$2" ] || { echo "FAIL: $1: $2 missing" >&2; fail=1; }; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
	die "cmake --install: $(cat "$tmp/install.log")"
so=$(find "$prefix" -name 'libshmlog.so.1' | head -n1)
[ -n "$so" ] || die "no libshmlog.so.1 under $prefix"
libdir=$(dirname "$so")
check "header" "$prefix/include/shmlog.h"
check "the macros' part of the header" "$prefix/include/shmlog_macros.h"
check "the reader API's part of the header" "$prefix/include/shmlog_reader.h"
check "C++ part of the header" "$prefix/include/shmlog_cxx.h"
check "static library" "$libdir/libshmlog.a"
check "development link" "$libdir/libshmlog.so"
check "CLI" "$prefix/bin/shmlog"
check "pkg-config file" "$libdir/pkgconfig/shmlog.pc"
check "CMake package" "$libdir/cmake/shmlog/shmlogConfig.cmake"
check "CMake version file" "$libdir/cmake/shmlog/shmlogConfigVersion.cmake"
check "syslog shim" "$libdir/libshmlog-syslog.so"
check "liblog library" "$libdir/libshmlog-android.so"
check "liblog header" "$prefix/include/shmlog/android/log.h"
check "liblog macros" "$prefix/include/shmlog/log/log.h"
check "liblog pkg-config file" "$libdir/pkgconfig/shmlog-android.pc"
# with scdoc or without (the committed pages then), man shmlog works
check "shmlog(1)" "$prefix/share/man/man1/shmlog.1"
check "shmlog(3)" "$prefix/share/man/man3/shmlog.3"
check "shmlog-bench(1)" "$prefix/share/man/man1/shmlog-bench.1"
check "bash completion" "$prefix/share/bash-completion/completions/shmlog"
check "zsh completion" "$prefix/share/zsh/site-functions/_shmlog"
check "fish completion" "$prefix/share/fish/vendor_completions.d/shmlog.fish"
soname=$(objdump -p "$so" 2>/dev/null | awk '/SONAME/ {print $2}')
[ -z "$soname" ] || [ "$soname" = libshmlog.so.1 ] ||
	{ echo "FAIL: soname is $soname" >&2; fail=1; }
# the shared library exports the API, versioned, and nothing else but the
# internals the macros use and the archiver's (src/reader_raw.h,
# src/archive_zstd.h)
syms=$(objdump -T "$so" 2>/dev/null | awk '/SHMLOG_1/ && !/[*]UND[*]/ {print $NF}')
if [ -n "$syms" ]; then
	grep -q '^shmlog_write$' <<<"$syms" || { echo "FAIL: shmlog_write is not exported as SHMLOG_1" >&2; fail=1; }
	other=$(grep -v '^shmlog_[a-z]\|^shmlog__filter_gen$\|^shmlog__print_site$\|^shmlog__print_typed$\|^shmlog__print_untyped$\|^shmlog__site_prepare$\|^shmlog__site_refresh$\|^shmlog__site_update$\|^shmlog__tag_enabled$\|^shmlog__reader_drain$\|^shmlog__reader_format_of$\|^shmlog__reader_initial_seq$\|^shmlog__reader_keep_raw$\|^shmlog__reader_no_rest$\|^shmlog__zstd_[a-z]*$\|^SHMLOG_1$' <<<"$syms")
	[ -z "$other" ] || { echo "FAIL: libshmlog exports more than the API: $other" >&2; fail=1; }
else
	echo "FAIL: no symbol versioned SHMLOG_1 in $so" >&2; fail=1
fi
v=$("$prefix/bin/shmlog" --version) || die "installed shmlog --version failed"
[[ $v =~ ^shmlog\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "FAIL: --version: $v" >&2; fail=1; }

mkdir -p "$tmp/app"
cat >"$tmp/app/main.c" <<'C'
#include <shmlog.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	shmlog_t *h;
	int err = shmlog_open(argv[1], SHMLOG_OPEN_CREATE, &h);
	if (err) {
		fprintf(stderr, "shmlog_open: %s\n", shmlog_strerror(err));
		return 1;
	}
	err = shmlog_write(h, SHMLOG_INFO, "consumer", argc > 2 ? argv[2] : "?");
	shmlog_close(h);
	return err ? 1 : 0;
}
C

cat >"$tmp/app/droid.c" <<'C'
#define LOG_TAG "consumer"
#include <log/log.h>

int main(int argc, char **argv)
{
	ALOGI("%s", argc > 1 ? argv[1] : "?");
	return 0;
}
C

# pkg-config: the installed shmlog.pc must point into the prefix
if command -v pkg-config >/dev/null; then
	export PKG_CONFIG_PATH=$libdir/pkgconfig
	p=$(pkg-config --variable=prefix shmlog)
	[ "$p" = "$prefix" ] || { echo "FAIL: shmlog.pc prefix is '$p', not $prefix" >&2; fail=1; }
	inc=$(pkg-config --variable=includedir shmlog)
	[ -e "$inc/shmlog.h" ] || { echo "FAIL: pkg-config includedir $inc has no shmlog.h" >&2; fail=1; }
	# shellcheck disable=SC2046
	"$cc" -Wall -Werror $(pkg-config --cflags shmlog) "$tmp/app/main.c" \
		-o "$tmp/app/pc-shared" $(pkg-config --libs shmlog) \
		-Wl,-rpath,"$(pkg-config --variable=libdir shmlog)" ||
		die "build with pkg-config failed"
	"$tmp/app/pc-shared" $B "via pkg-config, shared" || die "pkg-config program failed"
	"$cc" -Wall -Werror $(pkg-config --cflags shmlog) "$tmp/app/main.c" \
		-o "$tmp/app/pc-static" -Wl,-Bstatic $(pkg-config --libs-only-l shmlog) \
		-Wl,-Bdynamic $(pkg-config --libs-only-L --static shmlog) \
		$(pkg-config --libs-only-other --static shmlog) ||
		die "static build with pkg-config failed"
	"$tmp/app/pc-static" $B "via pkg-config, static" || die "static pkg-config program failed"
	# Android-style code, unchanged, with shmlog-android
	"$cc" -Wall -Werror $(pkg-config --cflags shmlog-android) "$tmp/app/droid.c" \
		-o "$tmp/app/droid" $(pkg-config --libs shmlog-android) \
		-Wl,-rpath,"$(pkg-config --variable=libdir shmlog)" ||
		die "build with pkg-config shmlog-android failed"
	SHMLOG_BUFFER=$B "$tmp/app/droid" "via pkg-config, liblog" || die "liblog program failed"
	# C++ (C++11): the header's C++ part installed beside it, the
	# printf-style call stored by type
	if command -v c++ >/dev/null; then
		cat >"$tmp/app/main.cc" <<'CXX'
#include <shmlog.h>

int main(int argc, char **argv)
{
	shmlog_t *h = nullptr;
	if (argc < 3 || shmlog_open(argv[1], SHMLOG_OPEN_CREATE, &h) != 0)
		return 1;
	SHMLOG_LOG_TO(h, SHMLOG_INFO, "consumer", "%s", argv[2]);
	shmlog_close(h);
	return 0;
}
CXX
		c++ -std=c++11 -Wall -Werror -pedantic $(pkg-config --cflags shmlog) \
			"$tmp/app/main.cc" -o "$tmp/app/pc-cxx" $(pkg-config --libs shmlog) \
			-Wl,-rpath,"$(pkg-config --variable=libdir shmlog)" ||
			die "C++ build with pkg-config failed"
		"$tmp/app/pc-cxx" $B "via pkg-config, C++" || die "C++ pkg-config program failed"
		cxx_ran=1
	else
		skipped+=("the C++ build (no c++ compiler)")
	fi
	unset PKG_CONFIG_PATH
else
	skipped+=("the builds with pkg-config (pkg-config missing: Debian package pkg-config, tests/adopt/debian-packages.txt)")
	skipped_pc=1
fi

# CMake: find_package(shmlog CONFIG) gives shmlog::shmlog
cat >"$tmp/app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(consumer C)
find_package(shmlog 1.0 CONFIG REQUIRED)
add_executable(app main.c)
target_compile_options(app PRIVATE -Wall -Werror)
target_link_libraries(app PRIVATE shmlog::shmlog)
add_executable(app_static main.c)
target_link_libraries(app_static PRIVATE shmlog::shmlog_static)
add_executable(droid droid.c)
target_link_libraries(droid PRIVATE shmlog::android)
CM
cmake -S "$tmp/app" -B "$tmp/app/build" -G "$gen" -DCMAKE_C_COMPILER="$cc" \
	-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
	>"$tmp/cmake.log" 2>&1 || die "find_package(shmlog): $(cat "$tmp/cmake.log")"
grep -q "$prefix" "$tmp/app/build/CMakeCache.txt" ||
	{ echo "FAIL: shmlog_DIR is not in the prefix" >&2; fail=1; }
cmake --build "$tmp/app/build" >"$tmp/build.log" 2>&1 || die "consumer build: $(cat "$tmp/build.log")"
"$tmp/app/build/app" $B "via find_package, shared" || die "find_package program failed"
"$tmp/app/build/app_static" $B "via find_package, static" || die "static find_package program failed"
SHMLOG_BUFFER=$B "$tmp/app/build/droid" "via find_package, liblog" || die "find_package liblog program failed"

# the syslog shim, installed, by `shmlog run --syslog` (found beside the
# library the CLI was installed with)
printf '#include <syslog.h>\nint main(void) { syslog(LOG_ERR, "via the installed shim"); return 0; }\n' >"$tmp/app/sl.c"
"$cc" "$tmp/app/sl.c" -o "$tmp/app/sl" || die "cannot build a syslog program"
"$prefix/bin/shmlog" run -b $B --syslog -t consumer -- "$tmp/app/sl" || die "shmlog run --syslog failed"

out=$("$prefix/bin/shmlog" cat -b $B) || die "installed shmlog cat failed"
want=("via find_package, shared" "via find_package, static" "via find_package, liblog"
	"via the installed shim")
[ -n "${skipped_pc:-}" ] || want+=("via pkg-config, shared" "via pkg-config, static" "via pkg-config, liblog")
[ -z "${cxx_ran:-}" ] || want+=("via pkg-config, C++")
for w in "${want[@]}"; do
	grep -q "consumer: $w" <<<"$out" || { echo "FAIL: record '$w' not in: $out" >&2; fail=1; }
done
[ $fail = 0 ] || exit 1
echo "ok: installed into $prefix, built and ran ${#want[@]} programs"
if [ ${#skipped[@]} -gt 0 ]; then
	printf 'test_install: skipped: %s\n' "${skipped[@]}" >&2
	exit 77
fi
