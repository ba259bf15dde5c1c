// SPDX-License-Identifier: MIT
// The C++ half of test_fmt_cxx (test_fmt_cxx.c has the checks): the
// calls of typed_cases.h compiled as C++, and what the templates of
// include/shmlog_cxx.h tell at compile time, beside what _Generic tells
// in C (tests/unit/test_fmt_typed.c asserts the same codes).
#include <string>

#include "shmlog.h"

#ifndef SHMLOG__TYPED_CALLS
#error "this test needs C++11 or later from GCC or Clang"
#endif

static_assert(SHMLOG__TYPES("f", 1, "s", 2.0, (void *)0, 'c', 5UL, 1.0f) ==
		      (7 | 0x2113231ull << 4),
	      "the value codes, as in C");
static_assert(SHMLOG__TYPES("no values") == 0, "no values");
static_assert(!SHMLOG__KNOWN("f", 1.0L) && !SHMLOG__KNOWN("f", L"w") &&
		      !SHMLOG__KNOWN("f", 1, 2, 3, 4, 5, 6, 7, 8, 9) &&
		      SHMLOG__KNOWN("f", 1, 2, 3, 4, 5, 6, 7, 8),
	      "what is not typed, as in C");

enum class scoped : short { a = -1 };
struct plain {
	int x;
};

// C++'s own types: what each is told as.
static_assert(SHMLOG__TY(true) == SHMLOG__TY_INT &&
		      SHMLOG__TY(u'x') == SHMLOG__TY_INT &&
		      SHMLOG__TY(U'x') == SHMLOG__TY_INT &&
		      SHMLOG__TY(L'x') == SHMLOG__TY_INT &&
		      SHMLOG__TY(scoped::a) == SHMLOG__TY_INT,
	      "integers");
static_assert(SHMLOG__TY(1.0f) == SHMLOG__TY_DBL &&
		      SHMLOG__TY(1.0) == SHMLOG__TY_DBL &&
		      SHMLOG__TY(1.0L) == 0,
	      "floating point");
static_assert(SHMLOG__TY("lit") == SHMLOG__TY_PTR &&
		      SHMLOG__TY(nullptr) == SHMLOG__TY_PTR &&
		      SHMLOG__TY((const unsigned char *)0) == SHMLOG__TY_PTR &&
		      SHMLOG__TY((const volatile char *)0) == 0 &&
		      SHMLOG__TY((int *)0) == 0 &&
		      SHMLOG__TY(u"wide") == 0,
	      "pointers");
static_assert(SHMLOG__TY(std::string()) == 0 && SHMLOG__TY(plain()) == 0,
	      "classes");
#ifdef __SIZEOF_INT128__
__extension__ typedef __int128 i128;
static_assert(SHMLOG__TY((i128)1) == 0, "no 128-bit integers, as in C");
#endif

extern "C" int typed_cases_cxx(shmlog_t *h, const char **expect, int max);
extern "C" void typed_default_cxx(void);
extern "C" void typed_runtime_tag_cxx(const char *tag);

#define TYPED_CASES_FN typed_cases_cxx
#include "typed_cases.h"

// A call of the default handle's macro, its tag fixed.
void typed_default_cxx(void)
{
	long long big = 1LL << 40;
	SHMLOG_I("typed", "default %d %s %.2f %lld", 3, "three", 3.5, big);
}

// The same with a tag known at run time: filtered on every call, then
// stored as any call.
void typed_runtime_tag_cxx(const char *tag)
{
	long long big = 1LL << 40;
	SHMLOG_I(tag, "default %d %s %.2f %lld", 3, "three", 3.5, big);
}
