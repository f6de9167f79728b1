// Package symbols reads the symbols of ELF executables, shared libraries
// and separate debug files, and stores them in Flamehouse's symbol store
// (profile_symbols and profile_executables, schema version 3), keyed by
// tenant and build id.
//
// Extract reads a file with the Go standard library only — debug/elf,
// debug/dwarf and debug/gosym — plus the GNU build-id note and the Go build
// id, which the standard library does not expose. What it produces is the
// file's code as flattened, non-overlapping address ranges in ELF virtual
// address space, each carrying its whole inline stack, innermost function
// first, so that one lookup "Start <= va < End" answers every frame at an
// address:
//
//   - DWARF, when present: subprograms and the inlined subroutines nested in
//     them (through lexical blocks), named from their linkage name
//     (demangled as llvm-symbolizer prints it) or their name, following
//     DW_AT_abstract_origin and DW_AT_specification; the innermost line from
//     the line table, each outer level's line from the inlined call site
//     (DW_AT_call_file, DW_AT_call_line);
//   - the Go pclntab for Go binaries: the functions' names as the Go tools
//     give them, and one level per range (the function and its innermost
//     line, as debug/gosym and go tool addr2line report them) where DWARF
//     gives no line;
//   - the symbol table (.symtab, else .dynsym), read as llvm-symbolizer
//     reads it (among aliases the largest, then the last; a symbol ends at
//     the next), for what neither covers, and for the outermost level's
//     name (the physical function, e.g. "main.cold"), as llvm-symbolizer
//     names it.
//
// C++ and Rust names are demangled with github.com/ianlancetaylor/demangle
// in the style llvm-symbolizer 14 prints. The tests hold every kind of file
// (built with gcc and g++ in the test, and Debian's glibc debug files) to
// llvm-symbolizer, and Go binaries to go tool addr2line.
// Files without a build id are refused, since the store is keyed by it; so
// are files that are not ELF, truncated files, files larger than the limits
// and files whose build id is not the one expected.
//
// VA implements the address rule that turns a frame's address, mapping
// start and mapping offset into the executable's virtual address. Store
// writes an Executable's ranges and its row with batched inserts: a
// ClickHouse Native block over HTTP when given a chclient.NativeInserter,
// clickhouse-go batches otherwise; it combines a stripped executable and
// its separate debug file of one build id, uploaded in either order (see
// Store.Put). Store.Upload is what `flamehouse symbols upload` and
// PUT /v1/symbols/<build id> run (docs/symbols-upload.md).
package symbols
