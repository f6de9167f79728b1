// Command flamehouse runs Flamehouse: the embedded ClickHouse engine (or a
// connection to an external server) with the profile schema applied. See
// `flamehouse help` for its subcommands.
package main

import (
	"os"

	"github.com/flamehouse/flamehouse/pkg/service"
)

func main() {
	os.Exit(service.Main(os.Args[1:], os.Stdout, os.Stderr))
}
