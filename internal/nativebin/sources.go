package nativebin

// Ready-made programs. Each function named in the Func* constants below
// exists in the built file's symbol table (noinline), and the always_inline
// helpers leave DW_TAG_inlined_subroutine entries (two levels deep, across
// a header file) in the DWARF of a -g -O2 build.

// Names of functions in ProgramC (C, so unmangled).
const (
	FuncWorkOuter = "work_outer" // calls the inlined helpers twice nested, and FuncLeafMul
	FuncLeafMul   = "leaf_mul"
	FuncMain      = "main"
	FuncInlTwice  = "inl_twice"  // always_inline, in inl.h; only inlined
	FuncInlSquare = "inl_square" // always_inline, in inl.h; inlined into inl_twice
)

// ProgramC is a C program in two files: main.c and the header inl.h with
// two always_inline functions, one inlined into the other, both inlined
// into work_outer.
var ProgramC = map[string]string{
	"inl.h": `#ifndef INL_H
#define INL_H
static inline __attribute__((always_inline)) int inl_square(int x) {
	int y = x * x;
	return y + (x >> 1) + 1;
}

static inline __attribute__((always_inline)) int inl_twice(int x) {
	int s = inl_square(x);
	s ^= x << 3;
	return s + inl_square(s ^ 3);
}
#endif
`,
	"main.c": `#include <stdio.h>
#include <stdlib.h>
#include "inl.h"

__attribute__((noinline)) int leaf_mul(int a, int b) {
	volatile int r = a * b;
	return r;
}

__attribute__((noinline)) int work_outer(int n) {
	int acc = 0;
	for (int i = 0; i < n; i++) {
		acc += inl_twice(i + acc);
		acc ^= leaf_mul(acc, i);
	}
	return acc;
}

int main(int argc, char **argv) {
	int n = argc > 1 ? atoi(argv[1]) : 10;
	printf("%d\n", work_outer(n));
	return 0;
}
`,
}

// Names in ProgramCXX: the symbol-table (mangled) names and the names
// llvm-symbolizer prints for them.
const (
	// shapes::Box<int>::area(int) const
	SymBoxArea = "_ZNK6shapes3BoxIiE4areaEi"
	// shapes::detail::scale(int, double)
	SymScale = "_ZN6shapes6detail5scaleEid"
	// int shapes::total<int>(std::vector<shapes::Box<int>, std::allocator<shapes::Box<int> > > const&)
	SymTotal = "_ZN6shapes5totalIiEET_RKSt6vectorINS_3BoxIS1_EESaIS4_EE"
)

// ProgramCXX is a C++ program with namespaces, a class template, a
// function template and an always_inline member function.
var ProgramCXX = map[string]string{
	"main.cc": `#include <cstdio>
#include <cstdlib>
#include <vector>

namespace shapes {
template <typename T> struct Box {
	T v;
	__attribute__((noinline, noipa)) T area(T k) const {
		volatile T r = v * k;
		return r;
	}
	inline __attribute__((always_inline)) T twice() const { return v + v + static_cast<T>(1); }
};

namespace detail {
__attribute__((noinline, noipa)) int scale(int x, double f) {
	volatile double r = x * f;
	return static_cast<int>(r) + 1;
}
} // namespace detail

template <typename T> __attribute__((noinline)) T total(const std::vector<Box<T>> &bs) {
	T s = T();
	for (const auto &b : bs) {
		s += b.area(b.twice()) + static_cast<T>(detail::scale(static_cast<int>(s), 1.5));
	}
	return s;
}
} // namespace shapes

int main(int argc, char **argv) {
	int n = argc > 1 ? std::atoi(argv[1]) : 10;
	std::vector<shapes::Box<int>> bs;
	for (int i = 0; i < n; i++) {
		bs.push_back(shapes::Box<int>{i});
	}
	std::printf("%d\n", shapes::total(bs));
	return 0;
}
`,
}

// Names in LibraryC, exported from the shared library.
const (
	FuncLibEntry  = "lib_entry"
	FuncLibHelper = "lib_helper" // static, noinline: only in .symtab, not .dynsym
)

// LibraryC is a shared library: an exported function calling a static
// one and an always_inline helper.
var LibraryC = map[string]string{
	"lib.c": `static inline __attribute__((always_inline)) int lib_inl(int x) {
	return (x * 7) ^ (x >> 2);
}

__attribute__((noinline)) static int lib_helper(int x) {
	volatile int r = lib_inl(x) + 3;
	return r;
}

int lib_entry(int n) {
	int acc = 0;
	for (int i = 0; i < n; i++) {
		acc += lib_helper(i + acc) + lib_inl(acc);
	}
	return acc;
}
`,
}

// ProgramGo is a Go program for BuildGo; its functions main.spin and
// main.mix are not inlined.
const ProgramGo = `package main

import (
	"fmt"
	"os"
)

//go:noinline
func mix(a, b int) int { return a*31 ^ b }

//go:noinline
func spin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s = mix(s, i)
	}
	return s
}

func main() {
	fmt.Println(spin(len(os.Args) * 1000))
}
`

// Names in ProgramGo as the Go symbol table spells them.
const (
	GoFuncSpin = "main.spin"
	GoFuncMix  = "main.mix"
)
