// Command manager is dnsplane's operator: internal/app parses its flags and environment, builds
// everything it runs, and runs it until SIGTERM or SIGINT (app.Main). The flags are listed in
// docs/api.md, "The manager".
package main

import (
	"os"

	"github.com/dnsplane/dnsplane/internal/app"
)

func main() { os.Exit(app.Main(os.Args[1:])) }
