package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/internal/version"
)

// runMainEnv, when set in a child of this test binary, makes TestMain_VersionPrintsAndExitsZero
// run main() with the space-separated arguments it holds.
const runMainEnv = "DNSPLANE_TEST_RUN_MAIN_ARGS"

// TestMain_VersionPrintsAndExitsZero (issue 14, item 2): `manager --version` prints one line,
// "dnsplane <version> (revision <rev>, <goversion>)", and exits 0 before any other flag is
// validated or anything starts: here with an invalid --local-dns-addr beside it, and --local,
// which would otherwise start a control plane in --local-dir. It runs main() itself, in a child
// of the test binary, so the exit code is main's.
func TestMain_VersionPrintsAndExitsZero(t *testing.T) {
	if args, ok := os.LookupEnv(runMainEnv); ok {
		os.Args = append([]string{"manager"}, strings.Fields(args)...)
		main()
		t.Fatal("main returned; --version must exit")
	}
	for _, args := range [][]string{
		{"--version"},
		{"-version"},
		{"--local", "--local-dir=" + t.TempDir(), "--local-dns-addr=not-a-host-port", "--version"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestMain_VersionPrintsAndExitsZero$")
			cmd.Env = append(os.Environ(), runMainEnv+"="+strings.Join(args, " "))
			cmd.Dir = dir // --local-dir's default, .dnsplane, would land here
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if err != nil {
				t.Fatalf("%v: %v, want exit 0; stderr: %s", args, err, stderr.String())
			}
			if want := version.Get().String() + "\n"; stdout.String() != want {
				t.Errorf("%v printed %q, want exactly %q", args, stdout.String(), want)
			}
			if stderr.Len() != 0 {
				t.Errorf("%v wrote to stderr: %s", args, stderr.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("%v created %d entries in the working directory", args, len(entries))
			}
		})
	}
}

// TestParseFlags_VersionSkipsValidation: --version parses with values that would otherwise be
// refused.
func TestParseFlags_VersionSkipsValidation(t *testing.T) {
	o, _, err := parseFlags([]string{"--soa-poll-interval=0s", "--pprof-bind-address=:6060", "--version"})
	if err != nil || !o.version {
		t.Fatalf("parseFlags with --version: version=%v, err=%v; want true, nil", o.version, err)
	}
	if _, _, err := parseFlags([]string{"--soa-poll-interval=0s"}); err == nil {
		t.Fatal("--soa-poll-interval=0s without --version was accepted")
	}
}
