package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A zone file with a record the embedded server does not apply (a DNAME: RFC 6672 redirection)
// is refused with an error naming the file and the record, rather than served with NXDOMAIN for
// the names the DNAME redirects, where NSD and Knot answer them.
func TestRun_RefusesAZoneFileWithADNAME(t *testing.T) {
	file := filepath.Join(t.TempDir(), "z.test.zone")
	zone := "$ORIGIN z.test.\nwww 300 IN A 192.0.2.1\ndn 300 IN DNAME www.z.test.\n"
	if err := os.WriteFile(file, []byte(zone), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run("127.0.0.1:0", "z.test", file, runOptions{udpSockets: 1}) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "DNAME") || !strings.Contains(err.Error(), file) {
			t.Fatalf("run: %v, want an error naming %s and its DNAME", err, file)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("dnsbench serves a zone with a DNAME, which the embedded server does not apply")
	}
}
