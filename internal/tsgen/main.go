// Command tsgen writes src/generated/backend.ts: the defaults, limits and
// name patterns of the Go backend that the TypeScript frontend shows and
// checks, taken from the Go declarations that own them, so that the two
// languages state each value once. Run it with go generate ./internal/tsgen
// after changing one of them; its test fails while the committed file
// differs from what it writes.
package main

//go:generate go run .

import (
	"flag"
	"fmt"
	"os"
)

// committed is the generated file, from this package's directory (where go
// generate and go test run).
const committed = "../../src/generated/backend.ts"

func main() {
	out := flag.String("out", committed, "file to write")
	flag.Parse()
	text, err := render(declarations())
	if err == nil {
		err = os.WriteFile(*out, text, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tsgen:", err)
		os.Exit(1)
	}
}
