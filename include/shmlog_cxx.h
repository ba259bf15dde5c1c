/* SPDX-License-Identifier: MIT */
/*
 * The printf-style macros (shmlog_macros.h) from C++: what C tells them with
 * static initialisers and _Generic, told by templates. Included by shmlog.h
 * in C++ (C++11 or later); include shmlog.h, never this file on its own.
 *
 * Fixed tags. A call site of the SHMLOG_x macros caches the filter's
 * answer for its tag when the tag is a constant array (a string literal,
 * or a const char array: the same text on every call);
 * shmlog__cxx::tag_fixed() says which tags are. Any other tag (a pointer,
 * a char array that may change) is asked about on each call.
 *
 * Typed calls (GCC or Clang: shmlog_macros.h defines SHMLOG__TYPED_CALLS;
 * other compilers take the va_list path, SHMLOG__TYPES there).
 *
 * A call of SHMLOG_LOG_TO or of the SHMLOG_x macros (a string literal
 * format) is a typed call when every value has a code: the macro then
 * stores the values as they are, with no va_list, through the same
 * shmlog__print_typed() a C11 call takes. For the reader to see the same
 * record, whichever language wrote it, this file must give every value
 * the code and the 8 bytes that shmlog_macros.h's SHMLOG__TY and SHMLOG__ARG
 * give it in C11, which is what it does:
 *
 *   code SHMLOG__TY_INT  integer types of at most 64 bits (bool, char,
 *                        wchar_t, char16_t, char32_t, and enumerations,
 *                        scoped or not, as their underlying type: a C
 *                        enum is compatible with its own), widened to
 *                        64 bits with their sign
 *   code SHMLOG__TY_DBL  float and double, as double
 *   code SHMLOG__TY_PTR  char, signed char and unsigned char pointers and
 *                        void pointers, const or not, and arrays of those
 *                        chars (a string literal), as the pointer; and
 *                        nullptr, as C's (void *)0
 *   code 0               anything else: long double, __int128, other
 *                        pointers, volatile chars, classes (std::string:
 *                        pass its c_str()). The call takes the va_list
 *                        path, as C's does (the library counts such call
 *                        sites).
 *
 * The type is read from decltype() of the value, which is not evaluated:
 * the value is evaluated once, in the argument list, as in C. C++
 * before C++20 allows no lambda expression inside decltype(): a value
 * whose expression holds one ([] { return 1; }() too) needs C++20;
 * before, name the lambda and call it by its name.
 *
 * What differs from C is the language, not the record: in C++ a
 * character literal ('x') is a char and NULL is an integer (GCC's
 * __null), so SHMLOG_I("t", "%s", NULL) is an integer for a %s (the
 * reader prints "<?>", as for any value the format does not take) where C
 * stores a null pointer; pass nullptr, or (const char *)0, instead.
 */
#ifndef SHMLOG_CXX_H
#define SHMLOG_CXX_H

#ifndef SHMLOG_H
#error "include shmlog.h: it includes shmlog_cxx.h"
#endif

#if __cplusplus < 201103L
#error "shmlog.h needs C++11 or later from a C++ compiler"
#endif

#include <type_traits>

namespace shmlog__cxx {

/* Is @tag the same text on every call? A const char array: yes; a char
 * array, which the caller may rewrite, or a pointer: no. The array
 * overloads are the more specialised, so a literal picks the first. */
template <decltype(sizeof(0)) N> constexpr bool tag_fixed(const char (&)[N])
{
	return true;
}
template <decltype(sizeof(0)) N> constexpr bool tag_fixed(char (&)[N])
{
	return false;
}
template <class T> constexpr bool tag_fixed(const T &)
{
	return false;
}

#ifdef SHMLOG__TYPED_CALLS

/* How a value of type T (its reference, cv and array-ness dropped) goes
 * into a union shmlog__arg; NONE for a type with code 0. */
enum kind { NONE, SIGNED, UNSIGNED, FLOAT, POINTER };

template <class P> struct is_text_pointee {
	typedef typename std::remove_const<P>::type U;
	static constexpr bool value =
		std::is_same<U, char>::value ||
		std::is_same<U, signed char>::value ||
		std::is_same<U, unsigned char>::value ||
		std::is_same<U, void>::value;
};

/* An integer of at most 64 bits: C's _Generic lists no wider one. */
template <class T, bool = std::is_enum<T>::value> struct integer {
	static constexpr bool value =
		std::is_integral<T>::value && sizeof(T) <= 8;
	static constexpr bool is_signed = std::is_signed<T>::value;
};
template <class T> struct integer<T, true> {
	typedef typename std::underlying_type<T>::type U;
	static constexpr bool value = sizeof(U) <= 8;
	static constexpr bool is_signed = std::is_signed<U>::value;
};

template <class T> struct pointer {
	static constexpr bool value = false;
};
template <class P> struct pointer<P *> {
	static constexpr bool value = is_text_pointee<P>::value;
};
/* nullptr: the null pointer C's (void *)0 is */
template <> struct pointer<decltype(nullptr)> {
	static constexpr bool value = true;
};

/* T as a value reaches the call: references, cv, arrays and functions
 * decayed, as C's _Generic sees a value after lvalue conversion. */
template <class T> struct traits {
	typedef typename std::decay<T>::type D;
	static constexpr kind value_kind =
		integer<D>::value ? (integer<D>::is_signed ? SIGNED : UNSIGNED)
		: std::is_same<D, float>::value || std::is_same<D, double>::value
			? FLOAT
		: pointer<D>::value ? POINTER
				    : NONE;
	/* SHMLOG__TY_INT, SHMLOG__TY_DBL, SHMLOG__TY_PTR or 0 */
	static constexpr unsigned code =
		value_kind == SIGNED || value_kind == UNSIGNED ? SHMLOG__TY_INT
		: value_kind == FLOAT			      ? SHMLOG__TY_DBL
		: value_kind == POINTER			      ? SHMLOG__TY_PTR
							      : 0;
};

template <kind K> struct kind_tag {};

/* The 8 bytes of a value, as shmlog_macros.h's shmlog__arg_i/_u/_d/_p make
 * them. A value of code 0 never reaches the library (its call is not
 * typed), but its branch is compiled: it gets zero. */
template <class T>
inline union shmlog__arg put(const T &, kind_tag<NONE>)
{
	union shmlog__arg a;
	a.u = 0;
	return a;
}
template <class T>
inline union shmlog__arg put(const T &x, kind_tag<SIGNED>)
{
	union shmlog__arg a;
	a.i = static_cast<long long>(x);
	return a;
}
template <class T>
inline union shmlog__arg put(const T &x, kind_tag<UNSIGNED>)
{
	union shmlog__arg a;
	a.u = static_cast<unsigned long long>(x);
	return a;
}
template <class T>
inline union shmlog__arg put(const T &x, kind_tag<FLOAT>)
{
	union shmlog__arg a;
	a.d = static_cast<double>(x);
	return a;
}
template <class T>
inline union shmlog__arg put(const T &x, kind_tag<POINTER>)
{
	union shmlog__arg a;
	a.p = static_cast<const void *>(x);
	return a;
}

template <class T> inline union shmlog__arg arg(const T &x)
{
	return put(x, kind_tag<traits<T>::value_kind>());
}

#endif /* SHMLOG__TYPED_CALLS */

} /* namespace shmlog__cxx */

#ifdef SHMLOG__TYPED_CALLS
/* shmlog_macros.h's hooks: a value's code, unevaluated, and its 8 bytes. */
#define SHMLOG__TY(x) (::shmlog__cxx::traits<decltype((x))>::code)
#define SHMLOG__ARG(x) ::shmlog__cxx::arg(x)
#endif

#endif /* SHMLOG_CXX_H */
